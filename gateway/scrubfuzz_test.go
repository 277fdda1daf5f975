package gateway

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// maxFuzzLine bounds a fuzzed message: the walk's cost is what grows
// with a line, and a bounded line keeps each run short.
const maxFuzzLine = 1 << 14

// FuzzScrubMessage: for any line a server writes and any credentials it
// was given, ScrubMessage
//   - keeps a valid JSON message valid, with the same JSON-RPC shape: an
//     object stays an object, with its id as it was and its method,
//     result and error members (unless a member's name holds a secret),
//     or is the error answer to the same id that withholds it;
//   - leaves no secret in the output: not in its bytes in any form the
//     scrubber knows (but for a match inside one string, judged decoded),
//     and not in any string, member name or number the client decodes
//     (in any ASCII case);
//   - returns a line that holds no secret as it is, without a copy.
//
// A line is at most maxFuzzLine bytes (nested as deep as that allows).
func FuzzScrubMessage(f *testing.F) {
	seeds := []struct{ line, s1, s2 string }{
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"token hunter2hunter2"}]}}`, "hunter2hunter2", ""},
		{`{"jsonrpc":"2.0","id":"a","result":{"text":"HUNTER2HUNTER2"}}`, "hunter2hunter2", ""},
		{`{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"pa\"ss\\word"}}`, `pa"ss\word`, ""},
		{`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"a\u003cb\u003e\u0026c"}}`, "a<b>&c", ""},
		{`{"id":3,"result":{"u":"https:\/\/x\/y"}}`, "https://x/y", ""},
		{`{"id":4,"result":{"t":"caf\u00e9-s3cret"}}`, "café-s3cret", ""},
		{`{"id":5,"result":{"t":"{\"k\":\"pa\\\"ss\"}"}}`, `pa"ss`, ""},
		{`{"id":6,"result":12345678}`, "12345678", ""},
		{`{"id":7,"result":["ab","cd"]}`, `ab","cd`, ""},
		{`{"id":8,"res":"x","ult":"y"}`, `x","ult`, ""},
		{`{"method":"x","params":{"a":"s3cr","b":"et99"}}`, `s3cr","b":"et99`, ""},
		{`{"id":9,"result":{"hunter2hunter2":1}}`, "hunter2hunter2", ""},
		{`{"id":10,"result":"tab\there"}`, "tab\there", ""},
		{`{"id":11,"result":"` + strings.Repeat("[", 70) + `"`, "xxxxxxxx", ""},
		{`{"id":12,"result":` + strings.Repeat("[", 70) + `"12345678"` + strings.Repeat("]", 70) + `}`, "12345678", ""},
		{`not json at all: hunter2hunter2`, "hunter2hunter2", ""},
		{`{"id":13,"result":{"a":"abcdef","b":"qwerty123"}}`, "abcdef", "qwerty123"},
		{`{"id":14,"result":"nothing here"}`, "hunter2hunter2", ""},
		{`  {"id" : 15 , "result" : [ 1 , "x" ] }  `, "zzzzzzzz", ""},
		{`{"id":16,"result":"emoji \ud83d\ude00 key"}`, "\U0001F600 key", ""},
		{`{"id":true}`, "true", ""},
		{`[{"id":17,"result":"hunter2hunter2"}]`, "hunter2hunter2", ""},
		{`{"id":18,"result":` + strings.Repeat(`{"a":[`, 1200) + `"hunter2hunter2"` + strings.Repeat(`]}`, 1200) + `}`, "hunter2hunter2", ""},
		{strings.Repeat("[", 6000) + `"x"` + strings.Repeat("]", 6000), "hunter2hunter2", ""},
	}
	for _, s := range seeds {
		f.Add([]byte(s.line), s.s1, s.s2)
	}
	f.Fuzz(func(t *testing.T, line []byte, s1, s2 string) {
		if len(line) > maxFuzzLine {
			return
		}
		var secrets []string
		for _, s := range []string{s1, s2} {
			if fuzzSecretUsable(s) {
				secrets = append(secrets, s)
			}
		}
		if len(secrets) == 0 {
			return
		}
		ss := newScrubber(secrets)
		if ss == nil {
			t.Fatalf("no scrubber for usable secrets %q", secrets)
		}
		in := append([]byte(nil), line...)
		out := ss.ScrubMessage(line)
		if !bytes.Equal(line, in) {
			t.Fatalf("the input was changed: %q -> %q", in, line)
		}
		valid := json.Valid(in)

		// A line holding no secret in any form is given back as it is.
		if !ss.contains(in) && (!valid || !decodedHolds(in, secrets)) {
			if !bytes.Equal(out, in) {
				t.Fatalf("a line without a secret was changed:\n in  %q\n out %q", in, out)
			}
			if len(in) > 0 && &out[0] != &line[0] {
				t.Fatalf("a line without a secret was copied: %q", in)
			}
			return
		}

		if !valid && ss.contains(out) || valid && isContainer(in) && outsideStrings(ss, out) {
			// (a lone scalar is no message: a form across its own quotes
			// is not in anything the client decodes)
			t.Fatalf("a secret form remains in the bytes:\n secrets %q\n in  %q\n out %q", secrets, in, out)
		}
		if !valid {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("valid JSON became invalid:\n secrets %q\n in  %q\n out %q", secrets, in, out)
		}
		if decodedHolds(out, secrets) {
			t.Fatalf("a decoded string, name or number shows a secret:\n secrets %q\n in  %q\n out %q", secrets, in, out)
		}
		checkShape(t, ss, secrets, in, out)
	})
}

// fuzzSecretUsable tells whether s is a credential the properties can be
// judged for: one the scrubber takes (long enough), valid UTF-8, and no
// part of the text the scrubber writes itself (its marker, the answer
// that withholds a message), which would be "shown" by the scrubbing.
func fuzzSecretUsable(s string) bool {
	if len(s) < minScrubbed || len(s) > 64 || !utf8.ValidString(s) || strings.TrimSpace(s) == "" {
		return false
	}
	l := lowerASCII(s)
	if strings.ContainsAny(l, "()") || strings.Contains(strings.ToLower(string(withheld([]byte(`{"id":0}`)))+withheldNote), l) {
		return false
	}
	// a secret the JSON escape of another secret or of the marker can
	// make (its forms hold only a backslash and hex digits beyond it)
	return strings.Trim(l, `\u0123456789abcdef"`) != ""
}

// decodedHolds tells whether the JSON value b, decoded as a client does,
// shows one of secrets (ASCII case folded) in a string, a member's name
// or a number's text.
func decodedHolds(b []byte, secrets []string) bool {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return false
	}
	var lows []string
	for _, s := range secrets {
		lows = append(lows, lowerASCII(s))
	}
	holds := func(s string) bool {
		s = lowerASCII(s)
		for _, l := range lows {
			if strings.Contains(s, l) {
				return true
			}
		}
		return false
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case string:
			return holds(v)
		case json.Number:
			return holds(string(v))
		case []any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		case map[string]any:
			for k, e := range v {
				if holds(k) || walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

// checkShape: an object message stays an object with its id as it was
// and its method, result and error members, or is the answer that
// withholds it (an error to the same id, or a log notification for a
// request, a notification or a message without a clean id).
func checkShape(t *testing.T, ss *secretScrubber, secrets []string, in, out []byte) {
	t.Helper()
	var im, om map[string]json.RawMessage
	if json.Unmarshal(in, &im) != nil {
		return // not an object: nothing more to keep
	}
	if json.Unmarshal(out, &om) != nil {
		t.Fatalf("an object became something else:\n secrets %q\n in  %q\n out %q", secrets, in, out)
	}
	if bytes.Equal(out, withheld(in)) {
		return
	}
	for _, k := range []string{"id", "method", "result", "error", "jsonrpc"} {
		v, ok := im[k]
		if decodedHolds([]byte(`"`+k+`"`), secrets) {
			continue // the name itself is hidden
		}
		if !ok {
			if _, added := om[k]; added {
				t.Fatalf("member %q appeared:\n in  %q\n out %q", k, in, out)
			}
			continue
		}
		// a duplicate member's earlier value may hold a secret the last
		// one does not: judge the raw object, not the map
		if _, kept := om[k]; !kept {
			t.Fatalf("member %q was dropped:\n secrets %q\n in  %q\n out %q", k, secrets, in, out)
		}
		if k == "id" && !ss.contains(v) && !bytes.Equal(bytes.TrimSpace(om[k]), bytes.TrimSpace(v)) {
			t.Fatalf("the id changed:\n in  %q\n out %q", in, out)
		}
	}
}

// outsideStrings tells whether a form of ss matches in the JSON text b
// other than wholly inside one string (where the decoded check judges
// it: a match inside an escape, "\u0000X" for 000X, shows nothing).
func outsideStrings(ss *secretScrubber, b []byte) bool {
	var str [][2]int // the strings' extents, quotes included
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		j := i + 1
		for ; j < len(b) && b[j] != '"'; j++ {
			if b[j] == '\\' {
				j++
			}
		}
		str = append(str, [2]int{i, j + 1})
		i = j
	}
	for _, p := range ss.forms {
		for from := 0; from < len(b); {
			k := p.index(b[from:])
			if k < 0 {
				break
			}
			at, end := from+k, from+k+len(p.s)
			inside := false
			for _, s := range str {
				if s[0] < at && end < s[1] {
					inside = true
					break
				}
			}
			if !inside {
				return true
			}
			from = at + 1
		}
	}
	return false
}

// isContainer tells whether the JSON text b is an object or an array.
func isContainer(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && (b[0] == '{' || b[0] == '[')
}
