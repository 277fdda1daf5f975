//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestCompletionBashQuotesFileNames: a cloned repository names its files
// as it likes. Completing one with bash (readline on a pty, as a person
// types it) must insert the name quoted, so pressing Enter runs sluice
// on that file and nothing else, and a name with a space stays one
// candidate.
func TestCompletionBashQuotesFileNames(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed to drive the completion script")
	}
	env := completionWorld(t)
	dir, _ := os.Getwd() // the world's project directory
	for _, n := range []string{"x;id>PWN", "a b.star"} {
		writeFile(t, filepath.Join(dir, n), "result = 1\n")
	}
	script := filepath.Join(t.TempDir(), "sluice.bash")
	writeFile(t, script, sluice(t, "", "completion", "bash").stdout)

	ctl, term := openPTY(t)
	defer ctl.Close()
	cmd := exec.Command(bash, "--norc", "--noprofile", "-i")
	cmd.Dir = dir
	cmd.Env = append(env, "PS1=$ ", "TERM=dumb", "INPUTRC=/dev/null")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = term, term, term
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		term.Close()
		t.Fatal(err)
	}
	term.Close()
	defer killGroup(cmd)
	// mu guards seen: a channel holding one token.
	mu := make(chan struct{}, 1)
	var seen bytes.Buffer
	mu <- struct{}{}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ctl.Read(buf)
			<-mu
			seen.Write(buf[:n])
			mu <- struct{}{}
			if err != nil {
				return
			}
		}
	}()
	wait := func(re *regexp.Regexp) string {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute) // hang guard
		for time.Now().Before(deadline) {
			<-mu
			s := seen.String()
			mu <- struct{}{}
			if m := re.FindStringSubmatch(s); m != nil {
				return m[len(m)-1]
			}
			time.Sleep(20 * time.Millisecond)
		}
		<-mu
		defer func() { mu <- struct{}{} }()
		t.Fatalf("bash never showed %s; the terminal showed:\n%q", re, seen.String())
		return ""
	}
	type_ := func(s string) {
		if _, err := ctl.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	// Ctrl-T prints what the line holds; Ctrl-U then clears it. Readline
	// takes keys in order: Ctrl-T runs once the completion is done.
	type_("source " + script + "; bind -x '\"\\C-t\": printf \"LINE1<%s>\\n\" \"$READLINE_LINE\"'; echo READY\n")
	wait(regexp.MustCompile(`(?m)^READY`))
	for i, c := range []struct{ typed, want string }{
		{"sluice run x", `sluice run x\;id\>PWN `},
		{"sluice run a", `sluice run a\ b.star `},
	} {
		marker := string(rune('1' + i))
		if i > 0 {
			type_("bind -x '\"\\C-t\": printf \"LINE" + marker + "<%s>\\n\" \"$READLINE_LINE\"'\n")
		}
		type_(c.typed + "\t")
		type_("\x14")
		got := wait(regexp.MustCompile(`LINE` + marker + `<([^>\n]*(?:>[^<\n]*)*)>\r?\n`))
		type_("\x15")
		if got != c.want {
			t.Errorf("%q + TAB gave the line %q, want %q", c.typed, got, c.want)
		}
	}
	type_("exit\n")
	if _, err := os.Stat(filepath.Join(dir, "PWN")); err == nil {
		t.Fatal("a file name ran a command")
	}
}
