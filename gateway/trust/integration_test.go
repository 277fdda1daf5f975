package trust_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sluice/gateway/config"
	"sluice/gateway/trust"
)

// declOf is what the gateway does: turn a config declaration into plain
// values for trust.
func declOf(s config.Server, root string) trust.Decl {
	return trust.Decl{Scope: trust.Scope(s.Scope), ProjectRoot: root, ID: s.ID, Digest: s.Digest, FieldDigests: s.FieldDigests(), ActionClass: s.ActionClass, Program: program}
}

// program stands for the path the declared command resolves to (Parse
// alone does not resolve it).
const program = "/opt/tools/bin/server"

// TestDeclarationBinding trusts a project declaration through the real
// config parser and checks which edits make the record stale.
func TestDeclarationBinding(t *testing.T) {
	repo := t.TempDir()
	for _, d := range []string{"sub", "other", ".sluice"} {
		if err := os.MkdirAll(filepath.Join(repo, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := t.TempDir()
	file := trust.FilePath(home)
	load := func(t *testing.T, text string) (config.Server, string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(repo, ".sluice", "mcp.yaml"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		l := config.Load(config.LoadOptions{Cwd: repo, ConfigDir: home})
		s, ok := l.Server("fs")
		if !ok {
			t.Fatalf("no server; diagnostics %v", l.Diagnostics)
		}
		return s, l.ProjectRoot
	}
	const original = `servers:
  fs:
    command: npx
    args: [-y, pkg]
    cwd: sub
    env: {TOKEN: "${env:T}"}
    passEnv: [SSH_AUTH_SOCK]
    timeoutMs: 1000
`
	s, root := load(t, original)
	st := trust.Read(file)
	if got := trust.Resolve(declOf(s, root), st); got.Status != trust.Untrusted || got.Remedy != "sluice trust fs --project "+root {
		t.Fatalf("before trust: %+v", got)
	}
	if err := trust.Upsert(file, trust.Record{ProjectRoot: root, ID: s.ID, Digest: s.Digest, Fields: s.FieldDigests(), Program: program, ActionClass: trust.ActionRead}); err != nil {
		t.Fatal(err)
	}
	if got := trust.Resolve(declOf(s, root), trust.Read(file)); got.Status != trust.Trusted || got.ActionClass != trust.ActionRead {
		t.Fatalf("after trust: %+v", got)
	}

	same := map[string]string{
		"reordered keys": `servers:
  fs:
    timeoutMs: 1000
    passEnv: [SSH_AUTH_SOCK]
    env:
      TOKEN: ${env:T}
    cwd: "sub"
    args:
      - -y
      - pkg
    command: npx
`,
		"noise settings": strings.Replace(original, "timeoutMs: 1000", "timeoutMs: 1000\n    stdoutNoise: fatal\n    maxLineBytes: 65536", 1),
	}
	for name, text := range same {
		t.Run(name, func(t *testing.T) {
			s, root := load(t, text)
			if got := trust.Resolve(declOf(s, root), trust.Read(file)); got.Status != trust.Trusted {
				t.Errorf("%+v", got)
			}
		})
	}
	stale := map[string]string{
		"command":   strings.Replace(original, "command: npx", "command: uvx", 1),
		"args":      strings.Replace(original, "[-y, pkg]", "[-y, pkg2]", 1),
		"cwd":       strings.Replace(original, "cwd: sub", "cwd: other", 1),
		"env":       strings.Replace(original, "${env:T}", "${env:U}", 1),
		"passEnv":   strings.Replace(original, "[SSH_AUTH_SOCK]", "[SSH_AUTH_SOCK, AWS_SECRET_ACCESS_KEY]", 1),
		"timeoutMs": strings.Replace(original, "timeoutMs: 1000", "timeoutMs: 2000", 1),
	}
	for field, text := range stale {
		t.Run("stale "+field, func(t *testing.T) {
			s, root := load(t, text)
			got := trust.Resolve(declOf(s, root), trust.Read(file))
			if got.Status != trust.Stale || strings.Join(got.Changed, ",") != field || got.Remedy != "sluice trust fs --project "+root || !strings.Contains(got.Reason, "sluice servers") {
				t.Errorf("%+v", got)
			}
		})
	}
	// Re-trusting with another action class changes only the class.
	if err := trust.Upsert(file, trust.Record{ProjectRoot: root, ID: s.ID, Digest: s.Digest, Fields: s.FieldDigests(), Program: program, ActionClass: trust.ActionExecute}); err != nil {
		t.Fatal(err)
	}
	s, root = load(t, original)
	if got := trust.Resolve(declOf(s, root), trust.Read(file)); got.Status != trust.Trusted || got.ActionClass != trust.ActionExecute {
		t.Errorf("class change: %+v", got)
	}
}
