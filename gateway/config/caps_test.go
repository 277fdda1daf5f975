package config

import (
	"strings"
	"testing"
)

// TestIDGrammarIsIDRe: the hand-written id check accepts exactly what the
// id pattern it reports in messages matches, for every byte at every
// position and every length around the cap.
func TestIDGrammarIsIDRe(t *testing.T) {
	var cases []string
	for n := 0; n <= 34; n++ {
		cases = append(cases, strings.Repeat("a", n), strings.Repeat("7", n), strings.Repeat("-", n))
	}
	for _, pos := range []int{0, 1, 5, 31, 32} {
		for c := 0; c < 256; c++ {
			b := []byte(strings.Repeat("a", 33))[:max(pos+1, 2)]
			b[pos] = byte(c)
			cases = append(cases, string(b))
		}
	}
	cases = append(cases, "fs", "a_b-c", "_a", "-a", "A", "a__b", "a_", "é", "a\n")
	for _, s := range cases {
		if got, want := idGrammar(s), idRe().MatchString(s); got != want {
			t.Errorf("idGrammar(%q) = %v, %s matches: %v", s, got, idRe(), want)
		}
	}
}
