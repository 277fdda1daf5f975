package guest

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSkipValue(t *testing.T) {
	tests := []struct {
		in   string
		end  int
		fail bool
	}{
		{`"abc"`, 5, false},
		{`"a\"b" x`, 6, false},
		{`"a\\" x`, 5, false},
		{`"a\\\"" x`, 7, false},
		{` {"a": [1, "x", {"b": null}]} tail`, 29, false},
		{`[]`, 2, false},
		{`"` + strings.Repeat(`ab\"cd\\`, 40) + `"`, 2 + 8*40, false},
		{`"unterminated`, 0, true},
		{`{"a" 1}`, 0, true},
		{`[1,]`, 0, true},
		{`tru`, 0, true},
	}
	for _, tc := range tests {
		end, err := SkipValue([]byte(tc.in), 0)
		if (err != nil) != tc.fail || (!tc.fail && end != tc.end) {
			t.Errorf("SkipValue(%q) = %d, %v; want %d fail=%v", tc.in, end, err, tc.end, tc.fail)
		}
	}
}

func TestCutRaw(t *testing.T) {
	tests := []struct {
		raw   string
		limit int
		want  int
	}{
		{`abcdef`, 3, 3},
		{`ab\"cd`, 3, 2},         // inside \"
		{`ab\\cd`, 3, 2},         // inside \\
		{`ab\\cd`, 4, 4},         // after \\
		{`ab\u00e9cd`, 5, 2},     // inside \u00e9
		{`ab\u00e9cd`, 8, 8},     // after it
		{`a\ud83d\ude00b`, 9, 1}, // between surrogate halves
		{`a\ud83d\ude00b`, 13, 13},
		{"aé", 2, 1}, // inside a UTF-8 sequence
		{"aé", 3, 3},
		{`abc`, 10, 3},
	}
	for _, tc := range tests {
		if got := CutRaw([]byte(tc.raw), tc.limit); got != tc.want {
			t.Errorf("CutRaw(%q, %d) = %d, want %d", tc.raw, tc.limit, got, tc.want)
		}
	}
}

func TestShaper(t *testing.T) {
	var calls int
	s := &Shaper{Budget: 2048, Offload: func(b []byte) (string, error) { calls++; return "h-1", nil }}
	small := []byte(`{"content":[{"type":"text","text":"x"}]}`)
	if out, shaped, err := s.Shape(small); out != nil || shaped || err != nil || calls != 0 {
		t.Fatal("small result shaped")
	}
	text := strings.Repeat("line \"q\" é\n", 1000)
	tj, _ := json.Marshal(text)
	in := []byte(`{"content":[{"type":"text","text":"keep me"},{"type":"text","text":` + string(tj) + `},{"type":"text","text":"small tail"}],"structuredContent":{"big":` + string(tj) + `},"isError":true,"_meta":{"k":"v"}}`)
	out, shaped, err := s.Shape(in)
	if err != nil || !shaped {
		t.Fatal(err)
	}
	if len(out) > 2048 {
		t.Fatalf("%d bytes", len(out))
	}
	var r struct {
		Content []struct{ Type, Text string }
		IsError bool
		Meta    map[string]string `json:"_meta"`
		SC      json.RawMessage   `json:"structuredContent"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !r.IsError || r.Meta["k"] != "v" || r.SC != nil {
		t.Fatalf("kept members wrong: %s", out)
	}
	if r.Content[0].Text != "keep me" || !strings.HasPrefix(r.Content[1].Text, "line \"q\" é\n") || !strings.Contains(r.Content[1].Text, "bytes cut]") {
		t.Fatalf("items: %s", out)
	}
	if r.Content[2].Text != "small tail" || len(r.Content) != 5 {
		t.Fatalf("a later item that fits whole should be kept: %s", out)
	}
	m := r.Content[len(r.Content)-2].Text
	if !strings.Contains(m, "handle h-1") || !strings.Contains(m, "2048-byte") || r.Content[len(r.Content)-1].Type != "resource_link" {
		t.Fatalf("marker %q", m)
	}
	// Input shaping cannot walk is offloaded and shown as a prefix, never
	// passed on whole.
	for _, bad := range [][]byte{bytes.Repeat([]byte("["), 3000), []byte(`{"content":"` + strings.Repeat("x\"", 2000) + `"}`), append([]byte(`not json \xff `), bytes.Repeat([]byte("\x01é"), 3000)...)} {
		calls = 0
		out, shaped, err := s.Shape(bad)
		if err != nil || !shaped || len(out) > 2048 || calls != 1 {
			t.Fatalf("unparsable input: %d bytes, %v, %v, %d offloads", len(out), shaped, err, calls)
		}
		var rr struct {
			Content []struct{ Type, Text, URI string }
		}
		if err := json.Unmarshal(out, &rr); err != nil || len(rr.Content) != 3 || !strings.HasPrefix(string(bad), strings.TrimSuffix(rr.Content[0].Text[:20], "\ufffd")) && bad[0] != 'n' {
			t.Fatalf("unparsable input shaped to %s (%v)", out, err)
		}
		if rr.Content[2].Type != "resource_link" || rr.Content[2].URI != ResultURIPrefix+"h-1" {
			t.Fatalf("no resource_link to the stored result: %s", out)
		}
	}
	// Escaped member names and a result without content.
	esc := []byte(`{"cont\u0065nt":[{"typ\u0065":"t\u0065xt","t\u0065xt":` + string(tj) + `}]}`)
	out, shaped, err = s.Shape(esc)
	if err != nil || !shaped || len(out) > 2048 || !bytes.Contains(out, []byte(`line \"q\"`)) {
		t.Fatalf("escaped names: %s, %v", out, err)
	}
	out, shaped, err = s.Shape([]byte(`{"structuredContent":{"big":` + string(tj) + `}}`))
	if err != nil || !shaped || len(out) > 2048 || !bytes.Contains(out, []byte("bytes were omitted")) {
		t.Fatalf("no content: %s, %v", out, err)
	}
	s.Budget = 100
	if _, _, err := s.Shape(in); err == nil {
		t.Fatal("tiny budget accepted")
	}
}

func TestRedactText(t *testing.T) {
	r, err := NewRedactor([]byte(`{"disable":["bearer-token"],"patterns":["sk-[a-z]{8}"]}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, want string }{
		{"key AKIAIOSFODNN7EXAMPLE end", "key [REDACTED:aws-access-key-id] end"},
		{"Bearer abcdefghijklmnop", "Bearer abcdefghijklmnop"}, // disabled
		{"use sk-abcdefgh now", "use [REDACTED:pattern-0] now"},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n", "[REDACTED:private-key]"},
		{"nothing here", "nothing here"},
	}
	for _, tc := range tests {
		got, changed := r.RedactText([]byte(tc.in))
		if string(got) != tc.want || changed != (tc.in != tc.want) {
			t.Errorf("RedactText(%q) = %q, %v", tc.in, got, changed)
		}
	}
	for _, bad := range []string{`{"patterns":"x"}`, `{"patterns":["("]}`, `[1]`} {
		if _, err := NewRedactor([]byte(bad)); err == nil {
			t.Errorf("config %s accepted", bad)
		}
	}
}

func FuzzSkipValue(f *testing.F) {
	for _, s := range []string{`{"a":"\\\""}`, `[1,"x",{"b":[]}]`, `"\\\\"`, `  "a"  `, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		end, err := SkipValue(b, 0)
		if err == nil && (end <= 0 || end > len(b)) {
			t.Fatalf("end %d", end)
		}
		if json.Valid(b) {
			if err != nil || end != len(bytes.TrimRight(b, " \t\r\n")) {
				t.Fatalf("SkipValue(%q) = %d, %v", b, end, err)
			}
		}
	})
}

func FuzzCutRaw(f *testing.F) {
	f.Add("a\"b\\c\u00e9\U0001F600\x01", 5)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		q := AppendQuote(nil, []byte(s))
		raw := q[1 : len(q)-1]
		n := CutRaw(raw, limit)
		if n < 0 || n > len(raw) || (limit >= 0 && limit < len(raw) && n > limit) {
			t.Fatalf("CutRaw = %d (limit %d, len %d)", n, limit, len(raw))
		}
		cut := append(append([]byte{'"'}, raw[:n]...), '"')
		if !json.Valid(cut) || !utf8.Valid(cut) {
			t.Fatalf("cut %q is not a valid JSON string", cut)
		}
		var back string
		if err := json.Unmarshal(q, &back); err != nil || (utf8.ValidString(s) && back != s) {
			t.Fatalf("AppendQuote(%q) = %q", s, q)
		}
		un, err := AppendUnquote(nil, q)
		if err != nil || string(un) != back {
			t.Fatalf("AppendUnquote(%q) = %q, %v", q, un, err)
		}
	})
}

func FuzzShape(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"`+strings.Repeat("ab\\\"é", 400)+`"}],"isError":false}`), 1024)
	f.Add([]byte(`{"content":[{"type":"resource","resource":{"uri":"x","text":"`+strings.Repeat("z", 3000)+`"}}]}`), 1500)
	f.Fuzz(func(t *testing.T, in []byte, budget int) {
		s := &Shaper{Budget: MinBudget + (budget&0xffff)%4096, Offload: func([]byte) (string, error) { return "h", nil }}
		out, shaped, err := s.Shape(in)
		if err != nil || !shaped {
			return
		}
		if len(out) > s.Budget || len(out) >= len(in) {
			t.Fatalf("%d bytes out of %d, budget %d", len(out), len(in), s.Budget)
		}
		if json.Valid(in) && !json.Valid(out) {
			t.Fatalf("valid input shaped to invalid JSON:\n%s\n->\n%s", in, out)
		}
		// The output made of parts (what the built-in hands the host) is
		// the same bytes.
		want := string(out)
		p := &Shaper{Budget: s.Budget, Offload: s.Offload}
		data, parts, shaped, err := p.ShapeParts(in)
		if err != nil || !shaped {
			t.Fatalf("ShapeParts: shaped %v, err %v; Shape shaped it", shaped, err)
		}
		if got := string(Assemble(nil, in, data, parts)); got != want {
			t.Fatalf("parts assemble to\n%s\nShape gave\n%s", got, want)
		}
		for i, q := range parts {
			if q.N <= 0 || q.Off < 0 || (q.Input && q.Off+q.N > len(in)) || (!q.Input && q.Off+q.N > len(data)) {
				t.Fatalf("part %d %+v out of range (input %d, data %d)", i, q, len(in), len(data))
			}
		}
	})
}

func TestMarkerSize(t *testing.T) {
	for _, c := range []struct {
		budget, total, omitted int
		handle                 string
	}{
		{16384, 65536, 49000, "r-0123456789abcdef"},
		{1024, 9, 0, ""},
		{1 << 30, 1<<31 - 1, 1, "a\"b\x00é"},
	} {
		if got, want := markerSize(c.budget, c.total, c.omitted, c.handle), len(marker(nil, c.budget, c.total, c.omitted, c.handle)); got != want {
			t.Errorf("markerSize%v = %d, marker is %d bytes", c, got, want)
		}
	}
	m := string(marker(nil, 16384, 65536, 100, `h"1`))
	for _, part := range []string{"65536 bytes", "16384-byte", "100 bytes were omitted", "handle h_1;", `"uri":"sluice://results/h_1"`, `"name":"h_1"`} {
		if !strings.Contains(m, part) {
			t.Errorf("marker %s lacks %q", m, part)
		}
	}
	if !json.Valid([]byte("[" + m + "]")) {
		t.Errorf("marker is not valid JSON: %s", m)
	}
}

func FuzzRedactResult(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"AKIAIOSFODNN7EXAMPLE"}],"structuredContent":{"a":["ghp_` + strings.Repeat("x", 36) + `"]}}`))
	r, _ := NewRedactor(nil)
	f.Fuzz(func(t *testing.T, in []byte) {
		out, changed, err := r.RedactResult(in)
		if err != nil || !changed {
			return
		}
		if json.Valid(in) && !json.Valid(out) {
			t.Fatalf("valid input redacted to invalid JSON:\n%s\n->\n%s", in, out)
		}
	})
}
