//go:build unix && !solaris && !aix

package main

import (
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startDashboardProc runs 'sluice dashboard 127.0.0.1:0' with stderr a
// pipe and returns the process, its stderr and the login file it names.
func startDashboardProc(t *testing.T, w *world) (*exec.Cmd, *syncBuffer, chan error, string) {
	t.Helper()
	cmd := exec.Command(sluiceBin, "dashboard", "127.0.0.1:0")
	_, stderr, done := startWaited(t, cmd)
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if strings.Contains(stderr.String(), ".login,") {
			return cmd, stderr, done, loginFileOf(t, w, stderr)
		}
	}
	t.Fatalf("sluice dashboard named no login file:\n%s", stderr)
	return nil, nil, nil, ""
}

// hupAtDefault makes the processes the test starts from now on begin with
// SIGHUP at its default, as from a terminal, even when the test binary
// runs with it ignored (under nohup): a child inherits an ignored signal,
// and a sluice started with SIGHUP ignored keeps it so by design
// (nohup_unix_test.go). A signal the test binary handles is not inherited.
func hupAtDefault(t *testing.T) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGHUP)
	t.Cleanup(func() { signal.Stop(c) })
}

func waitEnd(t *testing.T, done chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(60 * time.Second):
		t.Fatalf("the dashboard did not end after %s", what)
		return nil
	}
}

// TestLoginFileOfAKilledProcessIsSwept: a dashboard killed with SIGKILL
// leaves its login file (with its dead token) behind; nobody holds it any
// more, so 'sluice status' removes it, and so does the next start, while
// the file of a live process is kept and named. A file planted under a
// live process's name pattern but held by nobody goes too.
func TestLoginFileOfAKilledProcessIsSwept(t *testing.T) {
	hupAtDefault(t)
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	cmd, _, done, file := startDashboardProc(t, w)
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitEnd(t, done, "SIGKILL")
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("the killed process's login file is not there to sweep: %v", err)
	}
	want(t, sluiceProc(t, "", "status"), exitFailure, "no sluice serve is running")
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("status left the login file of a killed process: %v", err)
	}

	// Another stale file (a pid that is alive again: ours) goes at the
	// next start; the new process's own file stays while it lives.
	stale := filepath.Join(w.state, "sluice", "dashboard-"+strconv.Itoa(os.Getpid())+"-0123456789ab.login")
	writeFile(t, stale, "http://127.0.0.1:1/admin/login#token=dead\n")
	cmd2, _, done2, file2 := startDashboardProc(t, w)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a start left a login file nobody holds: %v", err)
	}
	sluiceProc(t, "", "status")
	if _, err := os.Stat(file2); err != nil {
		t.Errorf("status removed the login file of a live process: %v", err)
	}
	if err := syscall.Kill(cmd2.Process.Pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// SIGHUP (the terminal went away) ends it like SIGTERM: cleanly, its
	// file removed.
	if err := waitEnd(t, done2, "SIGHUP"); err != nil {
		t.Errorf("the dashboard after SIGHUP: %v", err)
	}
	if _, err := os.Stat(file2); !os.IsNotExist(err) {
		t.Errorf("the login file outlived a SIGHUP: %v", err)
	}
}

// TestServeEndsOnSIGHUP: a serve whose terminal goes away (SIGHUP) ends as
// on SIGTERM, removing its dashboard login file, instead of dying with it
// left behind.
func TestServeEndsOnSIGHUP(t *testing.T) {
	hupAtDefault(t)
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	cmd, stdin, _, _ := startWithDashboard(t, "serve", "--admin", "127.0.0.1:0")
	defer stdin.Close()
	files, _ := filepath.Glob(filepath.Join(w.state, "sluice", "dashboard-"+strconv.Itoa(cmd.Process.Pid)+"-*.login"))
	if len(files) != 1 {
		t.Fatalf("login files of the serve: %v", files)
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := waitExit(t, cmd, "SIGHUP"); err != nil {
		t.Errorf("serve after SIGHUP: %v", err)
	}
	if _, err := os.Stat(files[0]); !os.IsNotExist(err) {
		t.Errorf("the login file outlived a SIGHUP: %v", err)
	}
}
