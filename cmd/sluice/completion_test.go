package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompletion: the candidate lists come from the commands, their help,
// the declarations and the recorded catalog (nothing is launched), and
// the bash script completes through them.
func TestCompletion(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	want(t, sluice(t, "", "completion", "--list", "commands"), exitOK, "install\n", "review\n", "serve\n")
	want(t, sluice(t, "", "completion", "--list", "words", "review", "review", ""), exitOK, "fx\n")
	want(t, sluice(t, "", "completion", "--list", "words", "review", "x", "--"), exitOK, "--accept\n", "--json\n")
	want(t, sluice(t, "", "completion", "--list", "words", "find", "--server", ""), exitOK, "fx\n")
	want(t, sluice(t, "", "completion", "--list", "words", "import", "--from", ""), exitOK, "codex\n", "cursor\n")
	want(t, sluice(t, "", "completion", "--list", "words", "run", "run", ""), exitOK, "__files__")
	// No catalog yet: no capabilities, and nothing launched.
	r := sluice(t, "", "completion", "--list", "words", "call", "call", "")
	if r.code != exitOK || strings.TrimSpace(r.stdout) != "" {
		t.Fatalf("capabilities before a catalog: %s", r)
	}
	noChildren(t, "completion")
	want(t, sluice(t, "", "find", "--server", "fx", "--refresh"), exitOK)
	want(t, sluice(t, "", "completion", "--list", "words", "call", "call", ""), exitOK, "fx__echo\n", "fx__add\n")
	want(t, sluice(t, "", "completion", "zsh"), exitOK, "compdef _sluice sluice")
	want(t, sluice(t, "", "completion", "fish"), exitOK, "complete -c sluice")
	want(t, sluice(t, "", "completion", "bsh"), exitUsage, "did you mean bash?")

	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed to drive the completion script (the repository scripts need it too)")
	}
	bin := filepath.Join(w.root, "bin")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sluiceBin, filepath.Join(bin, "sluice")); err != nil {
		t.Fatal(err)
	}
	script := sluice(t, "", "completion", "bash").stdout + `
COMP_WORDS=(sluice call fx__ec); COMP_CWORD=2; _sluice; echo "call: ${COMPREPLY[*]}"
COMP_WORDS=(sluice revi); COMP_CWORD=1; _sluice; echo "cmd: ${COMPREPLY[*]}"
`
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "call: fx__echo") || !strings.Contains(string(out), "cmd: review") {
		t.Fatalf("bash completion: %v\n%s", err, out)
	}
}
