package config

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

func TestExposeParse(t *testing.T) {
	ss, st, ds := parseIn(t, ScopeUser, t.TempDir(), `
expose: ["gh__search_*", "fs__read_text_file", "*__ping"]
servers:
  fs:
    command: node
    expose: [list_*, "stat"]
  gh:
    url: https://example.com/mcp
    expose: ["*"]
`)
	if errCount(ds) != 0 || len(ss) != 2 {
		t.Fatalf("%v%s", ids(ss), dump(ds))
	}
	if st.ExposeLine != 2 || st.ExposeFile != "mcp.yaml" {
		t.Errorf("expose position %s:%d", st.ExposeFile, st.ExposeLine)
	}
	for c, want := range map[string]bool{"gh__search_issues": true, "fs__read_text_file": true, "fs__read_file": false, "x__ping": true, "fs__write": false} {
		if got := st.Exposes(c); got != want {
			t.Errorf("Settings.Exposes(%s) = %v, want %v", c, got, want)
		}
	}
	fs, gh := ss[0], ss[1]
	for tool, want := range map[string]bool{"list_dir": true, "stat": true, "statx": false, "read": false} {
		if got := fs.Exposes(tool); got != want {
			t.Errorf("fs.Exposes(%s) = %v, want %v", tool, got, want)
		}
	}
	if !gh.Exposes("anything") {
		t.Errorf("a url server's expose: [*] exposes nothing: %+v", gh.Expose)
	}
}

// TestExposeKeepsTheDigest: expose changes how tools are listed, never
// what the server runs, so trust records stay valid across an edit.
func TestExposeKeepsTheDigest(t *testing.T) {
	a, _, ds := parseIn(t, ScopeProject, t.TempDir(), "servers:\n  s:\n    command: node\n    args: [x]\n")
	b, _, ds2 := parseIn(t, ScopeProject, t.TempDir(), "servers:\n  s:\n    command: node\n    args: [x]\n    expose: [\"*\"]\n")
	if errCount(ds)+errCount(ds2) != 0 || len(a) != 1 || len(b) != 1 {
		t.Fatalf("%s%s", dump(ds), dump(ds2))
	}
	if a[0].Digest != b[0].Digest {
		t.Fatalf("expose changed the digest: %s vs %s", a[0].Digest, b[0].Digest)
	}
	if len(b[0].Expose) != 1 {
		t.Fatalf("a project server's expose was dropped: %+v", b[0])
	}
}

func TestExposeErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"unclosed class", "expose: [\"fs__[ab\"]\n", `glob "fs__[ab" is malformed: "[" is never closed by "]" at character 5`},
		{"trailing escape", "expose: [\"fs__a\\\\\"]\n", `"\" escapes nothing at character 6`},
		{"backwards range", "expose: [\"fs__[z-a]\"]\n", `range 'z'-'a' runs backwards at character 7`},
		{"empty class", "expose: [\"fs__[]\"]\n", `"]" ends an empty class or range at character 6`},
		{"no server", "expose: [read_file]\n", `"read_file" names no server`},
		{"empty glob", "expose: [\"\"]\n", "glob is empty"},
		{"whitespace", "expose: [\"fs__a b\"]\n", "whitespace"},
		{"not a list", "expose: fs__a\n", "must be a list"},
		{"server bad glob", "servers:\n  a:\n    command: node\n    expose: [\"[\"]\n", "servers.a.expose[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, ds := parseIn(t, ScopeUser, t.TempDir(), tc.text)
			if errCount(ds) == 0 || !strings.Contains(dump(ds), tc.want) {
				t.Fatalf("want an error with %q:%s", tc.want, dump(ds))
			}
		})
	}
	// The position is the glob's own node.
	_, st, ds := parseIn(t, ScopeUser, t.TempDir(), "expose:\n  - fs__ok\n  - \"fs__[\"\n")
	if errCount(ds) != 1 || ds[0].Line != 3 || ds[0].Column != 5 || ds[0].Field != "expose[1]" || len(st.Expose) != 0 {
		t.Fatalf("want one error at 3:5 on expose[1] and nothing exposed: %+v %+v", ds, st.Expose)
	}
	if len(st.Invalid) != 1 || st.Invalid[0] != "expose" {
		t.Fatalf("Invalid = %v, want [expose]", st.Invalid)
	}
	_, _, ds = parseIn(t, ScopeProject, t.TempDir(), "expose: [\"a__b\"]\n")
	if errCount(ds) == 0 || !strings.Contains(dump(ds), "expose is only allowed in user config") {
		t.Fatalf("project top-level expose:%s", dump(ds))
	}
	_, _, ds = parseIn(t, ScopeUser, t.TempDir(), "expsoe: [a__b]\n")
	if !strings.Contains(dump(ds), "expose") {
		t.Fatalf("a misspelt expose key gets no suggestion:%s", dump(ds))
	}
}

// TestExposeUnknownServerWarns: a literal server that is declared in
// neither file is a warning naming the closest declared id; globs over
// the server part and declared (also disabled) servers are quiet.
func TestExposeUnknownServerWarns(t *testing.T) {
	home := t.TempDir()
	proj := t.TempDir()
	os.MkdirAll(filepath.Join(proj, ProjectDirName), 0o700)
	os.WriteFile(filepath.Join(home, UserFileName), []byte("expose: [githb__search, off__x, pj__y, \"*__ping\", \"g?__z\"]\nservers:\n  github:\n    command: node\n  off:\n    command: node\n    enabled: false\n"), 0o600)
	os.WriteFile(filepath.Join(proj, ProjectDirName, ProjectFileName), []byte("servers:\n  pj:\n    command: node\n"), 0o600)
	l := Load(LoadOptions{Cwd: proj, ConfigDir: home, Getenv: func(k string) string {
		if k == "PATH" {
			return os.Getenv("PATH")
		}
		return ""
	}})
	var warns []Diagnostic
	for _, d := range l.Diagnostics {
		if d.Field != "" && strings.HasPrefix(d.Field, "expose") {
			warns = append(warns, d)
		}
	}
	if len(warns) != 1 || warns[0].Severity != SeverityWarning || warns[0].Line != 1 || warns[0].Field != "expose[0]" ||
		!strings.Contains(warns[0].Message, `names server "githb", which is not declared`) || !strings.Contains(warns[0].Fix, "did you mean github? (github__search)") {
		t.Fatalf("want one warning for githb:%s", dump(l.Diagnostics))
	}
	if l.Errors() {
		t.Fatalf("an unknown server in expose is not an error:%s", dump(l.Diagnostics))
	}
}

// TestCheckGlobAgreesWithPathMatch: every glob path.Match refuses,
// CheckGlob refuses too; CheckGlob refuses more only for a range that
// runs backwards (valid for path.Match, but it matches nothing).
func TestCheckGlobAgreesWithPathMatch(t *testing.T) {
	alphabet := []rune{'a', 'z', '*', '?', '[', ']', '^', '-', '\\', '_', 'é'}
	var gen func(prefix []rune, n int)
	count := 0
	gen = func(prefix []rune, n int) {
		if n == 0 {
			g := string(prefix)
			_, perr := path.Match(g, "")
			cerr := CheckGlob(g)
			count++
			switch {
			case perr != nil && cerr == nil:
				t.Errorf("CheckGlob(%q) accepts what path.Match refuses", g)
			case perr == nil && cerr != nil:
				var ge *GlobError
				if !errors.As(cerr, &ge) || !strings.Contains(ge.Reason, "runs backwards") {
					t.Errorf("CheckGlob(%q) = %v; path.Match accepts it", g, cerr)
				}
			}
			if cerr != nil {
				var ge *GlobError
				if !errors.As(cerr, &ge) || ge.Offset < 1 || ge.Offset > len([]rune(g)) {
					t.Errorf("CheckGlob(%q): position %v outside the glob", g, cerr)
				}
			}
			return
		}
		for _, r := range alphabet {
			gen(append(prefix, r), n-1)
		}
	}
	for n := 1; n <= 5; n++ {
		gen(nil, n)
	}
	if count < 100000 {
		t.Fatalf("only %d globs checked", count)
	}
}

func TestExposeServer(t *testing.T) {
	for g, want := range map[string]string{"fs__read": "fs", "fs__*": "fs", "f?__x": "", "*__x": "", "nounderscores": "", "[a]__x": ""} {
		if got := ExposeServer(g); got != want {
			t.Errorf("ExposeServer(%q) = %q, want %q", g, got, want)
		}
	}
}

// FuzzCheckGlob: CheckGlob refuses whatever path.Match refuses, accepts
// the rest except backwards ranges, and always points inside the glob.
func FuzzCheckGlob(f *testing.F) {
	for _, s := range []string{"fs__read_*", "[a-z]?", "[^x]", `\*`, "[", "a\\", "[]", "[z-a]", "[-a]", "é[é-ü]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, g string) {
		_, perr := path.Match(g, "")
		cerr := CheckGlob(g)
		var ge *GlobError
		switch {
		case perr != nil && cerr == nil:
			t.Fatalf("CheckGlob(%q) accepts what path.Match refuses", g)
		case perr == nil && cerr != nil && (!errors.As(cerr, &ge) || !strings.Contains(ge.Reason, "runs backwards")):
			t.Fatalf("CheckGlob(%q) = %v; path.Match accepts it", g, cerr)
		}
		if cerr != nil && (!errors.As(cerr, &ge) || ge.Offset < 1 || ge.Offset > len([]rune(g))) {
			t.Fatalf("CheckGlob(%q): position %v outside the glob", g, cerr)
		}
	})
}
