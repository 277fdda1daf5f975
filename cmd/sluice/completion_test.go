package main

import (
	"encoding/json"
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

// TestCompletionNeverRunsToolNames: a tool name is whatever an upstream
// server says, and the recorded catalog feeds capability completion. A
// name holding shell syntax must never be run by a completion script
// (bash's compgen -W expands its word list: a "$(...)" in it runs), nor
// be offered as a candidate that a shell would mangle; the plain names
// beside it are still offered.
func TestCompletionNeverRunsToolNames(t *testing.T) {
	w := newWorld(t)
	mark := filepath.Join(w.root, "ran")
	hostile := []string{
		"x$(touch${IFS}" + mark + ")",
		"y`touch " + mark + "`",
		"z;touch " + mark,
		"w\nfx__forged",
		"v\tdescribed",
		"u*",
		"~root",
		`t\"q'`,
	}
	var defs []string
	for _, n := range hostile {
		b, _ := json.Marshal(n)
		defs = append(defs, `{"name":`+string(b)+`,"inputSchema":{"type":"object"}}`)
	}
	file := filepath.Join(w.root, "tools.json")
	writeFile(t, file, "["+strings.Join(defs, ",")+"]")
	w.writeUser("servers:\n" + fixture(t, "fx", "-tools-file", file))
	want(t, sluice(t, "", "find", "--server", "fx", "--refresh"), exitOK)

	// The candidate lists offer the plain names only.
	r := sluice(t, "", "completion", "--list", "line", "call", "")
	want(t, r, exitOK, "fx__echo\n")
	for _, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		if !safeCompletionWord(l) {
			t.Errorf("candidate %q holds characters a shell would interpret", l)
		}
	}

	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed to drive the completion script")
	}
	bin := filepath.Join(w.root, "bin")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sluiceBin, filepath.Join(bin, "sluice")); err != nil {
		t.Fatal(err)
	}
	// The script as printed, and a catalog answer a script printed by an
	// older version would also see (the candidate list is what matters,
	// so it is checked above; here the script itself is driven).
	script := sluice(t, "", "completion", "bash").stdout + `
COMP_WORDS=(sluice call ""); COMP_CWORD=2; _sluice; printf 'call:%s\n' "${COMPREPLY[@]}"
COMP_WORDS=(sluice call fx__e); COMP_CWORD=2; _sluice; printf 'prefix:%s\n' "${COMPREPLY[@]}"
`
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", script)
	cmd.Dir = w.root
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash completion: %v\n%s", err, out)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatalf("completing ran a command from a tool name:\n%s", out)
	}
	for _, l := range []string{"call:fx__echo\n", "prefix:fx__echo\n"} {
		if !strings.Contains(string(out), l) {
			t.Errorf("bash completion lacks %q:\n%s", l, out)
		}
	}
	if strings.Contains(string(out), "prefix:fx__add") || strings.Contains(string(out), "forged") {
		t.Errorf("bash completion offers what it must not:\n%s", out)
	}
}

func safeCompletionWord(s string) bool {
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.ContainsRune("_-.:/@+,=%", c):
		default:
			return false
		}
	}
	return s != ""
}
