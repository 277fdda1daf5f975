package remote

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func readAll(t testing.TB, in string, max int, oneByte bool) ([]event, error) {
	var r io.Reader = strings.NewReader(in)
	if oneByte {
		r = iotest.OneByteReader(r)
	}
	s := newSSEReader(r, max)
	var out []event
	for {
		ev, err := s.next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestSSEParse(t *testing.T) {
	type want struct {
		typ, data, id string
		hasID         bool
		retry         time.Duration
	}
	cases := []struct {
		name string
		in   string
		want []want
	}{
		{"lf", "data: a\n\ndata: b\n\n", []want{{data: "a"}, {data: "b"}}},
		{"crlf", "data: a\r\n\r\ndata:b\r\n\r\n", []want{{data: "a"}, {data: "b"}}},
		{"cr", "data: a\r\rdata: b\r\r", []want{{data: "a"}, {data: "b"}}},
		{"multiline", "data: a\ndata:  b\ndata\n\n", []want{{data: "a\n b\n"}}},
		{"fields", "event: message\nid: 7\nretry: 1500\ndata: {}\n\n", []want{{typ: "message", data: "{}", id: "7", hasID: true, retry: 1500 * time.Millisecond}}},
		{"comments", ": keepalive\n:\ndata: x\n\n", []want{{data: "x"}}},
		{"bom", "\xEF\xBB\xBFdata: x\n\n", []want{{data: "x"}}},
		{"priming", "id: 0\nretry: 10\n\n", []want{{id: "0", hasID: true, retry: 10 * time.Millisecond}}},
		{"unterminated", "data: x\n\ndata: y", []want{{data: "x"}}},
		{"idnul", "id: a\x00b\ndata: x\n\n", []want{{data: "x"}}},
		{"retry junk", "retry: 1x\ndata: x\n\n", []want{{data: "x"}}},
		{"retry capped", "retry: 99999999999\ndata: x\n\n", []want{{data: "x", retry: maxRetry}}},
		{"unknown field", "foo: bar\ndata: x\n\n", []want{{data: "x"}}},
		{"empty lines", "\n\n\ndata: x\n\n", []want{{data: "x"}}},
	}
	for _, tc := range cases {
		for _, oneByte := range []bool{false, true} {
			got, err := readAll(t, tc.in, 1<<10, oneByte)
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
				continue
			}
			if len(got) != len(tc.want) {
				t.Errorf("%s (oneByte=%v): got %d events %+v, want %d", tc.name, oneByte, len(got), got, len(tc.want))
				continue
			}
			for i, w := range tc.want {
				g := got[i]
				if g.typ != w.typ || string(g.data) != w.data || g.id != w.id || g.hasID != w.hasID || g.retry != w.retry {
					t.Errorf("%s (oneByte=%v) event %d = %+v, want %+v", tc.name, oneByte, i, g, w)
				}
			}
		}
	}
}

func TestSSECaps(t *testing.T) {
	big := strings.Repeat("x", 200)
	for name, in := range map[string]string{
		"one data line":   "data: " + big + "\n\n",
		"many data lines": strings.Repeat("data: "+big[:60]+"\n", 4) + "\n",
	} {
		_, err := readAll(t, in, 128, false)
		if !errors.Is(err, ErrMessageTooLarge) && !errors.Is(err, errLineTooLong) {
			t.Errorf("%s: err = %v, want a cap error", name, err)
		}
	}
	// A line with no terminator never grows past the cap.
	_, err := readAll(t, strings.Repeat("y", 10000), 128, false)
	if !errors.Is(err, errLineTooLong) {
		t.Errorf("endless line: err = %v, want errLineTooLong", err)
	}
	// Exactly at the cap is fine.
	got, err := readAll(t, "data: "+strings.Repeat("z", 128)+"\n\n", 128, false)
	if err != nil || len(got) != 1 || len(got[0].data) != 128 {
		t.Errorf("at the cap: %v %d", err, len(got))
	}
}

func FuzzSSE(f *testing.F) {
	f.Add("data: a\r\n\r\nid: 1\rretry: 5\n\n: c\ndata: b\ndata: c\n\n")
	f.Add("\xEF\xBB\xBFevent: endpoint\ndata: /msg?s=1\n\n")
	f.Fuzz(func(t *testing.T, in string) {
		evs, err := readAll(t, in, 256, false)
		evs1, err1 := readAll(t, in, 256, true)
		if (err == nil) != (err1 == nil) || len(evs) != len(evs1) {
			t.Fatalf("chunking changed the parse: %v/%d vs %v/%d", err, len(evs), err1, len(evs1))
		}
		for i := range evs {
			if len(evs[i].data) > 256 || string(evs[i].data) != string(evs1[i].data) || evs[i].id != evs1[i].id {
				t.Fatalf("event %d differs or exceeds the cap", i)
			}
		}
	})
}
