package clitool

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestShowArgsMasksLiteralsOnly: ShowArgs gets the whole template as a
// command line, groups flattened in order, and only its literal
// elements are shown as it returns them; elements with a placeholder
// stay as written, in and out of groups, in Template and in the
// description made for a tool that declares none.
func TestShowArgsMasksLiteralsOnly(t *testing.T) {
	s := Spec{
		Name:  "get",
		Argv:  argv("/usr/bin/curl", "-H", "X-Key: k1", []any{"-H", "X-Other: k2", "--limit={n}"}, "https://h/{path}"),
		Input: []Param{{Name: "n", Type: TypeInteger}, {Name: "path", Type: TypeString, Required: true}},
	}
	var got []string
	s.ShowArgs = func(a []string) []string {
		got = slices.Clone(a)
		out := make([]string, len(a))
		for i, x := range a {
			out[i] = strings.ToUpper(x)
		}
		return out
	}
	tool, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	const want = "/usr/bin/curl -H X-KEY: K1 [-H X-OTHER: K2 --limit={n}] https://h/{path}"
	if tpl := tool.Template(); tpl != want {
		t.Errorf("Template() = %q, want %q", tpl, want)
	}
	if flat := []string{"/usr/bin/curl", "-H", "X-Key: k1", "-H", "X-Other: k2", "--limit={n}", "https://h/{path}"}; !slices.Equal(got, flat) {
		t.Errorf("ShowArgs got %q, want %q", got, flat)
	}
	var def struct{ Description string }
	if err := json.Unmarshal(tool.Definition(), &def); err != nil || def.Description != "Runs curl -H X-KEY: K1 [-H X-OTHER: K2 --limit={n}] https://h/{path}." {
		t.Errorf("description = %q (%v)", def.Description, err)
	}
}

// TestShowArgsMasksLiteralsWithBraces: an element with no placeholder is
// a literal even with a brace in it (a lone "{", or "{{x}}" for the text
// "{x}"): ShowArgs gets it as the program does and its mask is shown.
// Before, any element with a "{" was shown as written, so a literal
// password with a brace reached the description and the listings.
func TestShowArgsMasksLiteralsWithBraces(t *testing.T) {
	s := Spec{
		Name:  "get",
		Argv:  argv("srv", "--password=Pa{ss-w0rd!", "--password", "hunter2pw{{x}}", "--format={{y}}", "--q={q}"),
		Input: []Param{{Name: "q", Type: TypeString, Required: true}},
	}
	var got []string
	s.ShowArgs = func(a []string) []string {
		got = slices.Clone(a)
		out := slices.Clone(a)
		for i, x := range out {
			if strings.HasPrefix(x, "--password=") {
				out[i] = "--password=(hidden)"
			} else if i > 0 && out[i-1] == "--password" {
				out[i] = "(hidden)"
			}
		}
		return out
	}
	tool, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	if flat := []string{"srv", "--password=Pa{ss-w0rd!", "--password", "hunter2pw{x}", "--format={y}", "--q={q}"}; !slices.Equal(got, flat) {
		t.Errorf("ShowArgs got %q, want %q", got, flat)
	}
	const want = "srv --password=(hidden) --password (hidden) --format={{y}} --q={q}"
	if tpl := tool.Template(); tpl != want {
		t.Errorf("Template() = %q, want %q", tpl, want)
	}
	var def struct{ Description string }
	if err := json.Unmarshal(tool.Definition(), &def); err != nil || def.Description != "Runs "+want+"." {
		t.Errorf("description = %q (%v)", def.Description, err)
	}
}
