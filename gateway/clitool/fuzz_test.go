package clitool

import (
	"strings"
	"testing"
)

// FuzzParseText: any element text parses; the literal pieces and the
// placeholders put back together give the text again, modulo the
// {{name}} escape.
func FuzzParseText(f *testing.F) {
	for _, s := range []string{"", "--max-count={limit}", "{a}:{b}", "{{a}}", "{{.Name}}", "{a...}", "{", "}", "{{", "{a", "{1}", "x{a}{b...}y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var b strings.Builder
		for _, r := range parseText(s) {
			if r.ph {
				if !nameRe().MatchString(r.name) {
					t.Fatalf("placeholder %q from %q is not an identifier", r.name, s)
				}
				b.WriteString("{" + r.name)
				if r.expand {
					b.WriteString("...")
				}
				b.WriteString("}")
				continue
			}
			if r.lit == "" {
				t.Fatalf("empty literal segment from %q", s)
			}
			b.WriteString(r.lit)
		}
		// Re-parsing never finds more placeholders than the escapes allow,
		// and text without "{{" round-trips exactly.
		if !strings.Contains(s, "{{") && b.String() != s {
			t.Fatalf("parse(%q) rebuilt as %q", s, b.String())
		}
	})
}

// FuzzArgs: arbitrary arguments against a tool using every feature never
// panic, and an accepted call renders an argv with no NUL and no value
// starting with "-" before the literal "--".
func FuzzArgs(f *testing.F) {
	tool, err := Compile(Spec{Name: "fz", Argv: argv("/bin/x", "sub", "--n={n}", []any{"--s={s}"}, []any{"--all{b}"}, []any{"{s}", "--", "{a...}"}, "{r}"),
		Input: []Param{
			{Name: "n", Type: TypeInteger, Default: raw("3"), Minimum: "-5", Maximum: "1e3", AllowDash: true},
			{Name: "s", Type: TypeString, MaxLength: 50},
			{Name: "b", Type: TypeBoolean},
			{Name: "a", Type: TypeArray, Items: &Param{Type: TypeString}},
			{Name: "r", Type: TypeNumber, Required: true},
		}})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{`{}`, `{"r": 1}`, `{"r": 1.5, "s": "x", "a": ["-y", "z"], "b": true, "n": -2}`, `{"r": "1"}`, `{"r": 1e400}`, `[]`, `null`, `{"r": 1, "s": "\u0000"}`, `{"r":-0}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		out, err := tool.Argv(raw(args))
		if err != nil {
			return
		}
		if out[0] != "/bin/x" || out[1] != "sub" {
			t.Fatalf("argv %q lost its command", out)
		}
		dd := false
		for _, a := range out {
			if strings.IndexByte(a, 0) >= 0 {
				t.Fatalf("argv %q holds a NUL", out)
			}
			if a == "--" {
				dd = true
			}
			if !dd && strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--n=") && !strings.HasPrefix(a, "--s=") && a != "--all" {
				t.Fatalf("argv %q: %q reads as an option", out, a)
			}
		}
	})
}
