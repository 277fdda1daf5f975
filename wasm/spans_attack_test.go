package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// trustFooled is the reason -race builds give when output that used
// trusted spans fails the full validation (see Filter.validate): with a
// valid input it means a span was trusted that should not have been.
const trustFooled = "although the caller said it was"

// checkSplice runs f on a valid input vouched for, and fails t when the
// host accepted an output that full validation rejects, or when a -race
// build caught a trusted span that was not a run of whole string
// characters. want, when not nil, is the output the call must accept;
// otherwise the output must be rejected (InvalidOutputError) when it is
// not valid, and accepted when it is.
func checkSplice(t *testing.T, f *Filter, in []byte, want []byte) Output {
	t.Helper()
	if !json.Valid(in) || !utf8.Valid(in) {
		t.Fatalf("test input %q is not valid JSON", in)
	}
	out, err := f.Run(context.Background(), in, Meta{ValidInput: true})
	var ie *InvalidOutputError
	if errors.As(err, &ie) && strings.Contains(ie.Reason, trustFooled) {
		t.Fatalf("a span was trusted that is not a run of whole string characters: %v", err)
	}
	if want != nil {
		if err != nil || out.Status != StatusReplaced || !bytes.Equal(out.Data, want) {
			t.Fatalf("got %v %q, %v; want %q", out.Status, out.Data, err, want)
		}
	}
	if err != nil {
		if !errors.As(err, &ie) {
			t.Fatalf("got %v, want an InvalidOutputError or an accepted output", err)
		}
		return out
	}
	if reason := validateResult(out.Data); reason != "" || !json.Valid(out.Data) || !utf8.Valid(out.Data) {
		t.Fatalf("accepted an invalid output %q (%s)", out.Data, reason)
	}
	return out
}

// wantInvalid runs f and insists on an InvalidOutputError that is the
// validator's own finding, not the -race cross-check.
func wantInvalid(t *testing.T, f *Filter, in []byte, meta Meta, reason string) {
	t.Helper()
	out, err := f.Run(context.Background(), in, meta)
	var ie *InvalidOutputError
	if !errors.As(err, &ie) {
		t.Fatalf("got %v %q, %v; want an InvalidOutputError", out.Status, out.Data, err)
	}
	if strings.Contains(ie.Reason, trustFooled) || !strings.Contains(ie.Reason, reason) {
		t.Fatalf("reason %q, want the validator's %q", ie.Reason, reason)
	}
}

// TestSpliceAttacks: a built-in guest, on an input vouched for, tries to
// get bytes past the validator with output_input: runs over two strings,
// over a closing quote, from inside escapes, from strings it made up by
// skipping from a quote that is not an opening one. Whatever it does, the
// host accepts only what full validation accepts.
func TestSpliceAttacks(t *testing.T) {
	h := newTestHost(t, &Options{DisableAfter: -1})
	item := func(text string) string { return `{"type":"text","text":"` + text + `"}` }
	two := []byte(`{"content":[` + item(strings.Repeat("A", 100)) + `,` + item(strings.Repeat("B", 100)) + `]}`)
	aq := bytes.Index(two, []byte(`"AAAA`)) // opening quotes
	bq := bytes.Index(two, []byte(`"BBBB`))
	ae, be := aq+101, bq+101 // closing quotes
	for _, c := range []struct {
		name string
		in   []byte
		ops  []int
		want string // "" = whatever full validation says
		bad  string // the validator's reason when the output must be rejected
	}{
		{"a run over two strings, left open", two,
			[]int{1, aq, 0, 1, bq, 0, 2, 0, aq + 1, 2, aq + 81, bq + 21 - (aq + 81), 2, len(two) - 2, 2}, "", "not"},
		{"a run over two strings, closed again", two,
			[]int{1, aq, 0, 1, bq, 0, 2, 0, aq + 1, 2, aq + 81, bq + 21 - (aq + 81), 2, be, len(two) - be},
			string(two[:aq+1]) + strings.Repeat("A", 20) + string(two[ae:bq+1]) + strings.Repeat("B", 20) + string(two[be:]), ""},
		{"a run with the closing quote, then the quote again", two,
			[]int{1, aq, 0, 2, 0, aq + 1, 2, aq + 1, 101, 2, ae, len(two) - ae}, "", "not"},
		{"a run with the closing quote, the rest after it", two,
			[]int{1, aq, 0, 2, 0, aq + 1, 2, aq + 1, 101, 2, ae + 1, len(two) - ae - 1}, string(two), ""},
		{"an unterminated string at the end", two,
			[]int{1, aq, 0, 2, 0, aq + 1, 2, aq + 1, 100}, "", "not"},
		{"the same run twice, overlapping runs", two,
			[]int{1, aq, 0, 2, 0, aq + 1, 2, aq + 1, 80, 2, aq + 1, 80, 2, aq + 11, 80, 2, ae, len(two) - ae},
			string(two[:aq+1]) + strings.Repeat("A", 240) + string(two[ae:]), ""},
		{"zero-length runs at both ends", two,
			[]int{2, 0, 0, 2, len(two), 0, 1, aq, 0, 2, 0, len(two), 2, len(two), 0}, string(two), ""},
		{"runs from a string never skipped", two,
			[]int{2, 0, aq + 1, 2, bq + 1, 100, 2, ae, len(two) - ae}, string(two[:aq+1]) + strings.Repeat("B", 100) + string(two[ae:]), ""},
		{"runs between writes", two,
			[]int{1, aq, 0, 2, 0, aq + 1, 3, 0, 3, 2, aq + 1, 70, 3, 3, 5, 2, ae, len(two) - ae},
			string(two[:aq+1]) + "xyz" + strings.Repeat("A", 70) + "zy" + string(two[ae:]), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := loadSplice(t, h, true, "xyzzy", c.ops...)
			if c.bad != "" {
				wantInvalid(t, f, c.in, Meta{ValidInput: true}, c.bad)
				return
			}
			var want []byte
			if c.want != "" {
				want = []byte(c.want)
			}
			checkSplice(t, f, c.in, want)
		})
	}

	// Cuts at and inside escapes and sequences, each run followed by the
	// input's own tail: what is not a whole character fails validation.
	esc := func(unit string, n int) []byte { return []byte(`{"content":[` + item(strings.Repeat(unit, n)) + `]}`) }
	for _, c := range []struct {
		name, unit string
		from, n    int // of the run, from the first byte of the text
		bad        string
	}{
		{"start at the quote of an escaped quote", `ab\"`, 3, 70, "not"},
		{"start at the backslash of an escaped quote", `ab\"`, 2, 70, ""},
		{"end after the backslash of an escaped quote", `ab\"`, 0, 67, "not"},
		{"start at the 'u' of a \\u escape", `x\u00e9`, 2, 70, ""}, // u00e9 is plain text there
		{"end inside a \\u escape (\\u00|e9)", `x\u00e9`, 0, 69, "not"},
		{"end inside an escaped backslash", `a\\`, 0, 65, "not"},
		{"start between the halves of a surrogate pair", `\ud83d\ude00`, 6, 72, ""},
		{"end between the halves of a surrogate pair", `\ud83d\ude00`, 0, 66, ""},
		{"end inside a four-byte sequence", "a😀", 0, 67, "UTF-8"},
		{"start inside a four-byte sequence", "a😀", 2, 70, "UTF-8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := esc(c.unit, 40)
			qs := bytes.Index(in, []byte(`"text":"`)) + 7
			tail := len(in) - 3 // the closing quote of the text
			f := loadSplice(t, h, true, "", 1, qs, 0, 2, 0, qs+1, 2, qs+1+c.from, c.n, 2, tail, 3)
			if c.bad != "" {
				wantInvalid(t, f, in, Meta{ValidInput: true}, c.bad)
				return
			}
			checkSplice(t, f, in, nil)
		})
	}

	// "Strings" a guest makes up with a skip from a quote that opens
	// none: the bytes up to the next quote. Between values they are
	// structure (no quote, no backslash); whitespace other than spaces
	// is a control byte and never trusted.
	for _, sep := range []string{" ", "\t", "\r\n"} {
		t.Run("a skip from a closing quote over "+sepName[sep], func(t *testing.T) {
			in := []byte(`{"content":[` + item("ab") + strings.Repeat(sep, 80) + `,` + item("cd") + `]}`)
			closeq := bytes.Index(in, []byte(`ab"`)) + 2
			open := bytes.Index(in[closeq+1:], []byte(`"`)) + closeq + 1
			qs := bytes.Index(in, []byte(`"ab"`))
			f := loadSplice(t, h, true, "", 1, closeq, 0, 2, 0, qs+1, 2, closeq+1, open-closeq-1, 2, qs+3, len(in)-qs-3)
			if sep == " " {
				checkSplice(t, f, in, []byte(string(in[:qs+1])+string(in[closeq+1:open])+string(in[qs+3:])))
				return
			}
			wantInvalid(t, f, in, Meta{ValidInput: true}, "not")
		})
	}
	t.Run("a skip from an escaped quote inside a string", func(t *testing.T) {
		text := `say \"` + strings.Repeat("z", 90) + `\" then \\"`
		in := []byte(`{"content":[` + item(text[:len(text)-1]) + `]}`)
		eq := bytes.Index(in, []byte(`\"`)) + 1 // the quote of the first \"
		qs := bytes.Index(in, []byte(`"say`))
		end := len(in) - 3
		f := loadSplice(t, h, true, "", 1, qs, 0, 1, eq, 0, 2, 0, qs+1, 2, eq+1, end-eq-1, 2, end, 3)
		checkSplice(t, f, in, []byte(string(in[:qs+1])+string(in[eq+1:])))
	})
}

var sepName = map[string]string{" ": "spaces", "\t": "tabs", "\r\n": "line ends"}

// TestSpliceOutOfRange: offsets and lengths past the input, negative as
// i32, or wrapping when added, are refused (-1), never read.
func TestSpliceOutOfRange(t *testing.T) {
	h := newTestHost(t, &Options{DisableAfter: -1})
	in := []byte(`{"content":[{"type":"text","text":"` + strings.Repeat("q", 200) + `"}]}`)
	for _, ops := range [][]int{
		{2, 2147483647, 2147483647}, // the sum wraps an i32 and a u32 alike
		{2, 1, 4294967295},          // length -1
		{2, 4294967295, 2},          // offset -1: -1+2 = 1 would be in range
		{2, 2147483648, 10},         // offset -2^31
		{2, len(in), 1},
		{2, len(in) - 1, 2},
		{2, 100, 2147483647},
	} {
		f := loadSplice(t, h, true, "", ops...)
		_, err := f.Run(context.Background(), in, Meta{ValidInput: true})
		var re *ReportedError
		if !errors.As(err, &re) || !strings.Contains(re.Message, "negative code") {
			t.Fatalf("ops %v: got %v, want the guest's report of a negative code", ops, err)
		}
	}
}

// TestSpliceOutputCap: MaxOutputBytes counts copied and written bytes
// together, in either order, for any guest.
func TestSpliceOutputCap(t *testing.T) {
	h := newTestHost(t, &Options{DisableAfter: -1, MaxOutputBytes: 4096})
	in := []byte(`{"content":[{"type":"text","text":"` + strings.Repeat("y", 4000) + `"}]}`)
	lit := strings.Repeat("w", 2000)
	qs := bytes.Index(in, []byte(`"yyy`))
	tail := len(in) - 4 // `"}]}`
	for _, builtin := range []bool{false, true} {
		for name, ops := range map[string][]int{
			"copies then a write": {2, 0, 3000, 2, tail, 4, 3, 0, 2000},
			"a write then copies": {2, 0, qs + 1, 3, 0, 2000, 2, qs + 1, 3000, 2, tail, 4},
			"short copies":        {3, 0, 2000, 3, 0, 2000, 2, 0, 50, 2, 50, 50, 2, 100, 50},
		} {
			f := loadSplice(t, h, builtin, lit, ops...)
			out, err := f.Run(context.Background(), in, Meta{ValidInput: true})
			if !errors.As(err, new(*OutputTooLargeError)) {
				t.Fatalf("%s (built-in %v): got %d bytes, %v; want OutputTooLargeError", name, builtin, len(out.Data), err)
			}
		}
	}
}

// TestSpliceBounded: a guest that skips the same string over and over, or
// copies byte by byte, does not grow the host's record of the call
// without end.
func TestSpliceBounded(t *testing.T) {
	h := newTestHost(t, &Options{DisableAfter: -1})
	in := []byte(`{"content":[{"type":"text","text":"` + strings.Repeat("r", 100) + `"}]}`)
	qs := bytes.Index(in, []byte(`"rrr`))
	var ops []int
	for range 300 {
		ops = append(ops, 1, qs, 0)
	}
	ops = append(ops, 2, 0, qs+1)
	for k := range 100 {
		ops = append(ops, 2, qs+1+k, 1)
	}
	ops = append(ops, 2, len(in)-4, 4)
	f := loadSplice(t, h, true, "", ops...)
	out, err := f.Run(context.Background(), in, Meta{ValidInput: true})
	if err != nil || !bytes.Equal(out.Data, in) {
		t.Fatalf("got %q, %v; want the input back", out.Data, err)
	}
	inst, err := f.pool.get(context.Background(), f.name) // the instance the call ran on
	if err != nil {
		t.Fatal(err)
	}
	strs, segs := len(inst.state.strs), len(inst.state.segs)
	f.pool.put(context.Background(), inst, true)
	if strs > maxStrings(len(in)) {
		t.Errorf("%d strings recorded for 300 skips of one string, want at most %d", strs, maxStrings(len(in)))
	}
	// Every copy is shorter than minTrustedSpan: written, no segment each.
	if segs > 2 {
		t.Errorf("%d segments for 102 short copies, want at most 2", segs)
	}
}

// TestSpliceUntrusted: output_input from a third-party module, or with an
// input not vouched for, never skips validation: invalid UTF-8 copied from
// the input is caught in every build.
func TestSpliceUntrusted(t *testing.T) {
	h := newTestHost(t, &Options{DisableAfter: -1})
	in := []byte("{\"content\":[{\"type\":\"text\",\"text\":\"" + strings.Repeat("ok \xff\xfe ", 30) + "\"}]}")
	qs := bytes.Index(in, []byte(`"ok`))
	for _, c := range []struct {
		builtin bool
		meta    Meta
	}{{false, Meta{ValidInput: true}}, {true, Meta{}}, {false, Meta{}}} {
		f := loadSplice(t, h, c.builtin, "", 1, qs, 0, 2, 0, qs+1, 2, qs+1, len(in)-4-qs-1, 2, len(in)-4, 4)
		wantInvalid(t, f, in, c.meta, "UTF-8")
	}
}

// badSignatureGuest imports output_input with i64 parameters:
//
//	(module
//	  (import "mcpf" "output_input" (func (param i64 i64) (result i32)))
//	  (memory (export "memory") 1)
//	  (func (export "mcpf_abi_v1"))
//	  (func (export "mcpf_filter") (result i32) (i32.const 0)))
var badSignatureGuest = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x0e, 0x03, 0x60,
	0x02, 0x7e, 0x7e, 0x01, 0x7f, 0x60, 0x00, 0x00, 0x60, 0x00, 0x01, 0x7f,
	0x02, 0x15, 0x01, 0x04, 0x6d, 0x63, 0x70, 0x66, 0x0c, 0x6f, 0x75, 0x74,
	0x70, 0x75, 0x74, 0x5f, 0x69, 0x6e, 0x70, 0x75, 0x74, 0x00, 0x00, 0x03,
	0x03, 0x02, 0x01, 0x02, 0x05, 0x03, 0x01, 0x00, 0x01, 0x07, 0x26, 0x03,
	0x06, 0x6d, 0x65, 0x6d, 0x6f, 0x72, 0x79, 0x02, 0x00, 0x0b, 0x6d, 0x63,
	0x70, 0x66, 0x5f, 0x61, 0x62, 0x69, 0x5f, 0x76, 0x31, 0x00, 0x01, 0x0b,
	0x6d, 0x63, 0x70, 0x66, 0x5f, 0x66, 0x69, 0x6c, 0x74, 0x65, 0x72, 0x00,
	0x02, 0x0a, 0x09, 0x02, 0x02, 0x00, 0x0b, 0x04, 0x00, 0x41, 0x00, 0x0b,
}

func TestSpliceWrongSignature(t *testing.T) {
	h := newTestHost(t, nil)
	f, err := h.Load(context.Background(), Spec{Name: "badsig", Module: badSignatureGuest, Mode: ModeResultJSON})
	var fe *ForbiddenImportError
	if !errors.As(err, &fe) || fe.Name != "output_input" || !strings.Contains(fe.Reason, "wrong signature, want (i32, i32) -> (i32)") {
		if f != nil {
			f.Close(context.Background())
		}
		t.Fatalf("got %v, want a ForbiddenImportError naming output_input's signature", err)
	}
}
