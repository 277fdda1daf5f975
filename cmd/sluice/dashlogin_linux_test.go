//go:build linux

package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDashboardLoginLinkOnTerminal: a person who starts the dashboard at a
// terminal sees the login link there, once, and no file is written.
func TestDashboardLoginLinkOnTerminal(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	ctl, term := openPTY(t)
	defer ctl.Close()
	cmd := exec.Command(sluiceBin, "dashboard", "127.0.0.1:0")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, term
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		term.Close()
		t.Fatal(err)
	}
	term.Close()
	t.Cleanup(func() { killGroup(cmd) })
	var tty syncBuffer
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ctl.Read(buf)
			tty.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	var m []string
	for deadline := time.Now().Add(90 * time.Second); m == nil && time.Now().Before(deadline); {
		m = dashLoginLine.FindStringSubmatch(tty.String())
		time.Sleep(50 * time.Millisecond)
	}
	if m == nil || m[2] == "" {
		t.Fatalf("the terminal shows no login link:\n%q", tty.String())
	}
	tok := tokenOf(t, m[2])
	newDash(t, strings.TrimPrefix(m[1], "http://")).login(m[2])
	if files, _ := filepath.Glob(filepath.Join(w.state, "sluice", "dashboard-*.login")); len(files) != 0 {
		t.Errorf("a login file was written although the link was shown: %v", files)
	}
	_ = interrupt(cmd)
	_ = cmd.Wait()
	if n := strings.Count(tty.String(), tok); n != 1 {
		t.Errorf("the token is on the terminal %d times, want once:\n%q", n, tty.String())
	}
	if strings.Contains(out.String(), tok) {
		t.Errorf("the token reached stdout:\n%s", out.String())
	}
}
