package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestPassphraseArgsAreHidden: a passphrase of lowercase words after a
// flag named for what it opens (--auth, --session, --signature, a kind of
// key) is hidden by servers and not copied by import, while the short
// setting words such flags take stay readable.
func TestPassphraseArgsAreHidden(t *testing.T) {
	w := newWorld(t)
	secrets := []string{"opensesame.please", "mysessionsecret", "correcthorsebattery", "letmeinplease"}
	w.writeUser(`servers:
  a:
    command: /bin/cat
    args: [--auth, opensesame.please, --session, mysessionsecret, --signature, correcthorsebattery, --encryption-key, letmeinplease, --auth, required, --session, persistent]
`)
	r := sluiceProc(t, "", "servers", "--json")
	want(t, r, exitOK, `"--auth"`, `"(hidden)"`, `"required"`, `"persistent"`)
	for _, s := range secrets {
		if strings.Contains(r.stdout+r.stderr, s) {
			t.Errorf("servers shows %q:\n%s", s, r)
		}
	}
	home := clientHome(t, w)
	file := filepath.Join(home, ".cursor", "mcp.json")
	for i, s := range secrets {
		flag := []string{"--auth", "--session", "--signature", "--encryption-key"}[i]
		writeFile(t, file, `{"mcpServers": {"p": {"command": "p-mcp", "args": ["`+flag+`", "`+s+`"]}}}`)
		r := sluiceProc(t, "", "import", file, "--write", "--json")
		want(t, r, exitOK, "args[1] looks like a secret", `"written": false`)
		if strings.Contains(r.stdout+r.stderr, s) {
			t.Errorf("import copied %q:\n%s", s, r)
		}
	}
}
