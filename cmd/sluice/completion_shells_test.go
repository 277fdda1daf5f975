package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// The zsh and fish completion scripts, driven by the real shells: zsh in
// an interactive shell on a pty (zsh/zpty) that receives typed lines and a
// TAB, with compadd wrapped to record what the completion offered; fish
// through 'complete -C', which answers what a TAB would offer.
// scripts/install-shells.sh (run by 'make test') installs both shells.

// shellPath finds a shell, or fails (CI) or skips the test.
func shellPath(t *testing.T, name string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("zsh and fish completion is for Unix shells")
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" || os.Getenv("SLUICE_REQUIRE_PEERS") == "1" {
		t.Fatalf("%s is not installed and this is CI (CI=true or SLUICE_REQUIRE_PEERS=1); run scripts/install-shells.sh", name)
	}
	t.Skipf("%s is not installed; run scripts/install-shells.sh (Debian: apt-get install zsh fish)", name)
	return ""
}

// completionCases are typed lines and candidates their TAB must offer
// (and, in none, must not).
var completionCases = []struct {
	line string
	want []string
	none []string
}{
	{"sluice revi", []string{"review"}, []string{"refresh"}},
	{"sluice re", []string{"refresh", "remove", "result", "review"}, []string{"serve"}},
	{"sluice review ", []string{"fx", "fy"}, nil},
	{"sluice review --a", []string{"--accept"}, nil},
	{"sluice refresh f", []string{"fx", "fy"}, nil},
	{"sluice --no-color review ", []string{"fx", "fy"}, nil},
	{"sluice find --server ", []string{"fx", "fy"}, nil},
	{"sluice call fx__ec", []string{"fx__echo"}, nil},
	{"sluice describe fx__a", []string{"fx__add"}, []string{"fx__echo"}},
	{"sluice import --from cu", []string{"cursor"}, nil},
	{"sluice install cl", []string{"claude-code", "claude-desktop"}, nil},
	{"sluice completion ", []string{"bash", "fish", "zsh"}, nil},
	{"sluice run scr", []string{"script.star"}, nil},
	{"sluice servers --", []string{"--json", "--no-color", "--progress=never"}, nil},
}

// completionWorld declares fx and fy, records fx's catalog, and puts the
// binary first on PATH as "sluice" (the scripts call it by that name).
func completionWorld(t *testing.T) (env []string) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx") + fixture(t, "fy"))
	want(t, sluice(t, "", "find", "--server", "fx", "--refresh"), exitOK)
	if err := os.WriteFile(filepath.Join(w.project, "script.star"), []byte("result = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(w.root, "bin")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sluiceBin, filepath.Join(bin, "sluice")); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+w.root)
}

func checkCandidates(t *testing.T, shell, line string, got, want, none []string) {
	t.Helper()
	for _, s := range want {
		if !slices.Contains(got, s) {
			t.Errorf("%s: %q completes to %q, which lacks %s", shell, line, got, s)
		}
	}
	for _, s := range none {
		if slices.Contains(got, s) {
			t.Errorf("%s: %q completes to %q, which must not have %s", shell, line, got, s)
		}
	}
}

// zshDriver types each line and a TAB into an interactive zsh on a pty,
// after the completion script; compadd is wrapped to append what it adds
// to OUT, and _sluice to append "--done" when a completion finished.
const zshDriver = `zmodload zsh/zpty || { print -u2 "zsh has no zsh/zpty module"; exit 3 }
out=$1 script=$2
shift 2
: >| $out
zpty z zsh -f -i
zpty -w z "PS1='> '; unsetopt AUTO_LIST AUTO_MENU; setopt NO_BEEP; autoload -Uz compinit; compinit -u -D"
zpty -w z "source ${(q)script}"
zpty -w z "compadd() { local -a __c; builtin compadd -O __c \"\$@\"; (( \${#__c} )) && print -rl -- \"\${__c[@]}\" >> ${(q)out}; builtin compadd \"\$@\"; }"
zpty -w z "functions[_sluice_real]=\$functions[_sluice]; _sluice() { _sluice_real \"\$@\"; print -r -- --done >> ${(q)out}; }"
n=0
for line in "$@"; do
	(( n++ ))
	zpty -w -n z "$line"$'\t'
	deadline=$(( SECONDS + 120 ))
	while :; do
		done_=(${(M)${(f)"$(<$out)"}:#--done})
		(( ${#done_} >= n )) && break
		(( SECONDS > deadline )) && { print -u2 "no completion within 120s for: $line"; zpty -d z; exit 4 }
		sleep 0.05
	done
	zpty -w -n z $'\C-e\C-u'
done
zpty -d z
`

func TestCompletionZsh(t *testing.T) {
	zsh := shellPath(t, "zsh")
	env := completionWorld(t)
	dir := t.TempDir()
	script, driver, out := filepath.Join(dir, "_sluice.zsh"), filepath.Join(dir, "drive.zsh"), filepath.Join(dir, "out")
	writeFile(t, script, sluice(t, "", "completion", "zsh").stdout)
	writeFile(t, driver, zshDriver)
	if b, err := exec.Command(zsh, "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("zsh -n: %v\n%s", err, b)
	}
	args := []string{"-f", driver, out, script}
	for _, c := range completionCases {
		args = append(args, c.line)
	}
	cmd := exec.Command(zsh, args...)
	cmd.Env = env
	ownGroup(cmd)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("driving zsh: %v\n%s\nrecorded:\n%s", err, b, readFile(t, out))
	}
	blocks := strings.Split(readFile(t, out), "--done\n")
	if len(blocks) != len(completionCases)+1 {
		t.Fatalf("%d completions recorded for %d lines:\n%s", len(blocks)-1, len(completionCases), readFile(t, out))
	}
	for i, c := range completionCases {
		checkCandidates(t, "zsh", c.line, strings.Fields(blocks[i]), c.want, c.none)
	}
}

func TestCompletionFish(t *testing.T) {
	fish := shellPath(t, "fish")
	env := completionWorld(t)
	script := filepath.Join(t.TempDir(), "sluice.fish")
	writeFile(t, script, sluice(t, "", "completion", "fish").stdout)
	if b, err := exec.Command(fish, "--no-config", "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("fish -n: %v\n%s", err, b)
	}
	var prog strings.Builder
	prog.WriteString("source " + fishQuote(script) + "\n")
	for _, c := range completionCases {
		prog.WriteString("complete -C " + fishQuote(c.line) + "\necho -- --done\n")
	}
	cmd := exec.Command(fish, "--no-config", "-c", prog.String())
	cmd.Env = env
	ownGroup(cmd)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fish: %v\n%s", err, b)
	}
	blocks := strings.Split(string(b), "--done\n")
	if len(blocks) != len(completionCases)+1 {
		t.Fatalf("%d answers for %d lines:\n%s", len(blocks)-1, len(completionCases), b)
	}
	for i, c := range completionCases {
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(blocks[i]), "\n") {
			cand, desc, _ := strings.Cut(l, "\t")
			got = append(got, cand)
			// A command comes with its summary.
			if cmd, ok := commands[cand]; ok && strings.HasPrefix(c.line, "sluice re") && desc != cmd.summary {
				t.Errorf("fish: %s is described as %q, want %q", cand, desc, cmd.summary)
			}
		}
		checkCandidates(t, "fish", c.line, got, c.want, c.none)
	}
}

// fishQuote quotes s for fish (single quotes; \ and ' escaped).
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
