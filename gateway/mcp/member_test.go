package mcp

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// memberByScanner is member as the validating scanner reads it: the
// reference member must agree with on valid JSON.
func memberByScanner(obj []byte, name string) []byte {
	s := scanner{b: obj}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return nil
	}
	s.i++
	for {
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] == '}' {
			return nil
		}
		ks := s.i
		if s.str() != nil {
			return nil
		}
		key := s.b[ks:s.i]
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return nil
		}
		s.i++
		s.ws()
		v, err := s.value()
		if err != nil {
			return nil
		}
		if k := plainKey(key); len(k) == len(name)+2 && string(k[1:len(k)-1]) == name {
			return v
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ',' {
			return nil
		}
		s.i++
	}
}

// randomJSON writes a random valid JSON value: strings with escaped
// quotes, backslashes and \u escapes, brackets inside strings, numbers,
// literals, nesting, and whitespace between tokens.
func randomJSON(r *rand.Rand, b *strings.Builder, depth int) {
	ws := func() {
		for range r.IntN(3) {
			b.WriteByte(" \t\n\r"[r.IntN(4)])
		}
	}
	switch k := r.IntN(8); {
	case depth > 0 && k == 0:
		b.WriteByte('{')
		ws()
		for i := range r.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
				ws()
			}
			b.WriteString(randomString(r))
			ws()
			b.WriteByte(':')
			ws()
			randomJSON(r, b, depth-1)
			ws()
		}
		b.WriteByte('}')
	case depth > 0 && k == 1:
		b.WriteByte('[')
		ws()
		for i := range r.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
				ws()
			}
			randomJSON(r, b, depth-1)
			ws()
		}
		b.WriteByte(']')
	case k == 2:
		b.WriteString([]string{"true", "false", "null"}[r.IntN(3)])
	case k == 3:
		b.WriteString([]string{"0", "-1", "12.5e-3", "1E9", "-0.0", "123456789"}[r.IntN(6)])
	default:
		b.WriteString(randomString(r))
	}
}

func randomString(r *rand.Rand) string {
	parts := []string{`a`, `isError`, `resultType`, `_meta`, `\"`, `\\`, `\\\"`, `\u0045`, `is\u0045rror`, `{`, `}`, `[`, `]`, `,`, `:`, `é`, `\n`, ` `}
	var b strings.Builder
	b.WriteByte('"')
	for range r.IntN(5) {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	b.WriteByte('"')
	return b.String()
}

// TestMemberMatchesTheScanner: on valid JSON objects, member finds what the
// validating scanner finds, for names present, absent, escaped in the
// input, and written after nested values holding quotes and brackets.
func TestMemberMatchesTheScanner(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 3))
	names := []string{"isError", "resultType", "_meta", "a", "isE", "content"}
	checked := 0
	for range 20000 {
		var b strings.Builder
		if r.IntN(4) == 0 {
			b.WriteString("  ")
		}
		b.WriteByte('{')
		for i := range r.IntN(6) {
			if i > 0 {
				b.WriteByte(',')
			}
			key := randomString(r)
			if r.IntN(3) == 0 {
				key = `"` + names[r.IntN(len(names))] + `"`
			}
			fmt.Fprintf(&b, "%s :", key)
			randomJSON(r, &b, 3)
		}
		b.WriteString("}\n")
		obj := []byte(b.String())
		if !json.Valid(obj) {
			t.Fatalf("generator wrote invalid JSON: %s", obj)
		}
		for _, name := range names {
			got, want := member(obj, name), memberByScanner(obj, name)
			if string(got) != string(want) || (got == nil) != (want == nil) {
				t.Fatalf("member(%s, %q) = %q, the scanner finds %q", obj, name, got, want)
			}
			if want != nil {
				checked++
			}
		}
		// member2 finds what member finds, for two names in one walk.
		for _, pair := range [][2]string{{"resultType", "isError"}, {"a", "isE"}, {"isError", "_meta"}} {
			ga, gb := member2(obj, pair[0], pair[1])
			wa, wb := memberByScanner(obj, pair[0]), memberByScanner(obj, pair[1])
			if string(ga) != string(wa) || (ga == nil) != (wa == nil) || string(gb) != string(wb) || (gb == nil) != (wb == nil) {
				t.Fatalf("member2(%s, %q, %q) = %q, %q; the scanner finds %q, %q", obj, pair[0], pair[1], ga, gb, wa, wb)
			}
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d lookups found a member: the generator does not exercise the match", checked)
	}
}

// TestMemberStaysInBounds: on truncated or malformed input member ends
// without panicking.
func TestMemberStaysInBounds(t *testing.T) {
	for _, in := range []string{``, `{`, `{"`, `{"a`, `{"a"`, `{"a":`, `{"a":"`, `{"a":"\`, `{"a":[`, `{"a":{"b":`, `{"a":1`, `{"a":1,`, `{"a":1,"b"`, `{"a"1}`, `["a"]`, `{"a":"x\\"}`} {
		for n := range len(in) + 1 {
			_ = member([]byte(in[:n]), "a")
			_ = member([]byte(in[:n]), "b")
			_, _ = member2([]byte(in[:n]), "a", "b")
		}
	}
}
