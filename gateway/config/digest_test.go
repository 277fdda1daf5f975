package config

import (
	"errors"
	"strings"
	"testing"
)

func oneServer(t *testing.T, scope Scope, text string) Server {
	t.Helper()
	ss, _, ds := Parse([]byte(text), "mcp.yaml", scope, t.TempDir())
	if len(ss) != 1 {
		t.Fatalf("want one server, got %d;%s", len(ss), dump(ds))
	}
	return ss[0]
}

func TestDigestStable(t *testing.T) {
	a := oneServer(t, ScopeProject, `
servers:
  fs:
    command: npx
    args: [-y, pkg]
    cwd: sub
    env: {A: "1", B: "${env:TOKEN}"}
    timeoutMs: 1000
`)
	// Same declaration, keys reordered, flow vs block style, quoting,
	// comments and stdoutNoise/maxLineBytes added.
	b := oneServer(t, ScopeProject, `
# comment
servers:
  fs: # trailing
    timeoutMs: 1_000
    env:
      B: ${env:TOKEN}
      A: '1'
    stdoutNoise: fatal
    maxLineBytes: 65536
    args:
      - "-y"
      - pkg
    cwd: "sub"
    command: 'npx'
`)
	if a.Digest != b.Digest {
		t.Fatalf("digest changed with formatting: %s vs %s", a.Digest, b.Digest)
	}
	fa, fb := a.FieldDigests(), b.FieldDigests()
	if len(fa) != len(DigestFields) {
		t.Fatalf("field digests %v", fa)
	}
	for _, k := range DigestFields {
		if fa[k] == "" || fa[k] != fb[k] {
			t.Errorf("field %s: %q vs %q", k, fa[k], fb[k])
		}
	}
}

func TestDigestFields(t *testing.T) {
	base := Server{ID: "fs", Command: "npx", Args: []string{"a"}, Cwd: "c", Env: map[string]string{"A": "1"}, PassEnv: []string{"P"}, TimeoutMs: 5}
	d0, f0 := base.ComputeDigest(), base.FieldDigests()
	mut := map[string]func(s *Server){
		"id":        func(s *Server) { s.ID = "fs2" },
		"command":   func(s *Server) { s.Command = "uvx" },
		"args":      func(s *Server) { s.Args = []string{"a", "b"} },
		"cwd":       func(s *Server) { s.Cwd = "d" },
		"env":       func(s *Server) { s.Env = map[string]string{"A": "2"} },
		"passEnv":   func(s *Server) { s.PassEnv = nil },
		"timeoutMs": func(s *Server) { s.TimeoutMs = 6 },
	}
	for field, m := range mut {
		s := base
		s.Env = map[string]string{"A": "1"}
		m(&s)
		if s.ComputeDigest() == d0 {
			t.Errorf("changing %s did not change the digest", field)
		}
		f := s.FieldDigests()
		for k := range f0 {
			if (k == field) == (f[k] == f0[k]) {
				t.Errorf("changing %s: field digest %s changed=%v", field, k, f[k] != f0[k])
			}
		}
	}
	// Not bound: they do not change what runs.
	s := base
	s.ActionClass, s.StdoutNoise, s.MaxLineBytes, s.Dir, s.Root, s.File, s.Line = "execute", "fatal", 9999, "/x", "/", "other", 7
	if s.ComputeDigest() != d0 {
		t.Error("unbound fields changed the digest")
	}
	// nil and empty collections are the same declaration.
	e1 := Server{ID: "x", Command: "y"}
	e2 := Server{ID: "x", Command: "y", Args: []string{}, Env: map[string]string{}, PassEnv: []string{}}
	if e1.ComputeDigest() != e2.ComputeDigest() {
		t.Error("nil vs empty changed the digest")
	}
	// Boundaries between fields cannot be shifted.
	a := Server{ID: "x", Command: "y", Args: []string{"a b"}}
	b := Server{ID: "x", Command: "y", Args: []string{"a", "b"}}
	if a.ComputeDigest() == b.ComputeDigest() {
		t.Error("args boundary ambiguity")
	}
}

func TestExpandEnv(t *testing.T) {
	lookup := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	env := map[string]string{
		"A": "${env:X}",
		"B": "pre-${env:X}-${env:Y}-post",
		"C": "cost $5 and $${env:X} and $",
		"D": "",
	}
	got, err := ExpandEnv(env, lookup(map[string]string{"X": "x1", "Y": "y1"}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "x1", "B": "pre-x1-y1-post", "C": "cost $5 and ${env:X} and $", "D": ""}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q want %q", k, got[k], v)
		}
	}

	s := Server{ID: "fs", Env: map[string]string{"TOKEN": "Bearer ${env:MY_SECRET_TOKEN}"}}
	_, err = s.ExpandEnv(lookup(map[string]string{"OTHER": "sekrit-value"}))
	var ee *EnvRefError
	if !errors.As(err, &ee) || !errors.Is(err, ErrEnvMissing) {
		t.Fatalf("err = %v", err)
	}
	msg := err.Error()
	for _, w := range []string{`"fs"`, "TOKEN", "MY_SECRET_TOKEN"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not name %s", msg, w)
		}
	}
	if strings.Contains(msg, "sekrit") || strings.Contains(msg, "Bearer") {
		t.Errorf("error leaks a value: %q", msg)
	}
	if ee.Server != "fs" || ee.Key != "TOKEN" || ee.Var != "MY_SECRET_TOKEN" {
		t.Errorf("fields %+v", ee)
	}
	_, err = ExpandEnv(map[string]string{"K": "${nope}"}, lookup(nil))
	if !errors.Is(err, ErrEnvSyntax) {
		t.Errorf("syntax err = %v", err)
	}
	if refs := (&Server{Env: map[string]string{"A": "${env:B}${env:A}", "C": "${env:B}"}}).EnvRefs(); strings.Join(refs, ",") != "A,B" {
		t.Errorf("refs %v", refs)
	}
}

// TestDigestGolden pins the encoding: an accidental change would silently
// make every trust record stale. Change the values only together with the
// encoding's version tag.
func TestDigestGolden(t *testing.T) {
	s := Server{ID: "fs", Command: "npx", Args: []string{"-y", "pkg"}, Cwd: "sub", Env: map[string]string{"B": "${env:T}", "A": "1"}, PassEnv: []string{"SSH_AUTH_SOCK"}, TimeoutMs: 1000}
	if got, want := s.ComputeDigest(), "ed86c512bc4268b35adb2da212858e3b2174136e5427b29fafcfd590b120ac18"; got != want {
		t.Errorf("digest %s, want %s", got, want)
	}
	if got, want := s.FieldDigests()["command"], "242b55a8594fc56358d1a6bb4a8adfa0949c0ca7474356a6e6e588529ea8fd60"; got != want {
		t.Errorf("command field digest %s, want %s", got, want)
	}
	// Arbitrary bytes never collide (no replacement-character folding).
	a := Server{ID: "x", Command: "y", Args: []string{"\xff"}}
	b := Server{ID: "x", Command: "y", Args: []string{"\xfe"}}
	if a.ComputeDigest() == b.ComputeDigest() {
		t.Error("invalid UTF-8 args collide")
	}
	// Moving text between adjacent fields changes the digest.
	c := Server{ID: "x", Command: "y", Env: map[string]string{"AB": "C"}}
	d := Server{ID: "x", Command: "y", Env: map[string]string{"A": "BC"}}
	if c.ComputeDigest() == d.ComputeDigest() {
		t.Error("env key/value boundary ambiguity")
	}
}

func TestDigestIgnoresActionClass(t *testing.T) {
	a := oneServer(t, ScopeUser, "servers:\n  fs: {command: npx, actionClass: read}\n")
	b := oneServer(t, ScopeUser, "servers:\n  fs: {command: npx, actionClass: execute}\n")
	c := oneServer(t, ScopeUser, "servers:\n  fs: {command: npx}\n")
	if a.Digest != b.Digest || a.Digest != c.Digest || a.ActionClass != ActionRead || b.ActionClass != ActionExecute {
		t.Errorf("digests %s %s %s", a.Digest, b.Digest, c.Digest)
	}
}

func TestDiagnosticString(t *testing.T) {
	d := Diagnostic{Severity: SeverityError, File: "a.yaml", Line: 3, Column: 5, Field: "servers.fs.command", Message: "bad", Fix: "fix it"}
	if got, want := d.String(), "a.yaml:3:5: error: servers.fs.command: bad (fix: fix it)"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
	if got, want := (Diagnostic{Severity: SeverityWarning, Message: "m"}).Error(), "warning: m"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
}
