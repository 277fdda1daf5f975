//go:build unix && !solaris && !aix

package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hupIgnoredExec names the binary the test binary runs, started with
// SIGHUP ignored, as 'nohup' starts a command, and SIGINT ignored, as a
// non-interactive shell starts a background job.
const hupIgnoredExec = "SLUICE_TEST_EXEC_HUP_IGNORED"

func init() {
	bin := os.Getenv(hupIgnoredExec)
	if bin == "" {
		return
	}
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT)
	os.Unsetenv(hupIgnoredExec)
	err := syscall.Exec(bin, append([]string{bin}, os.Args[1:]...), os.Environ())
	fmt.Fprintln(os.Stderr, "exec:", err)
	os.Exit(2)
}

// startHupIgnored starts 'sluice args...' with SIGHUP ignored and returns
// it once stderr matched ready (the signals are set up by then).
func startHupIgnored(t *testing.T, ready string, args ...string) (*exec.Cmd, io.WriteCloser, *bufio.Reader, *syncBuffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), hupIgnoredExec+"="+sluiceBin)
	ownGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killGroup(cmd); _ = cmd.Wait() })
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if strings.Contains(stderr.String(), ready) {
			return cmd, stdin, bufio.NewReader(stdout), stderr
		}
	}
	t.Fatalf("sluice %v did not say %q:\n%s", args, ready, stderr)
	return nil, nil, nil, nil
}

// checkHupStillIgnored fails when the process no longer ignores SIGHUP
// or SIGINT (Linux says so in /proc; elsewhere the signals sent next
// show it).
func checkHupStillIgnored(t *testing.T, pid int) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatalf("SigIgn of %d: %q", pid, v)
			}
			for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT} {
				if mask&(1<<(uint(sig)-1)) == 0 {
					t.Errorf("the process started with %v ignored no longer ignores it (SigIgn %s)", sig, strings.TrimSpace(v))
				}
			}
			return
		}
	}
	t.Fatalf("no SigIgn line for %d", pid)
}

// TestServeStartedIgnoringSIGHUPKeepsServing: 'nohup sluice serve' (SIGHUP
// ignored at start) keeps serving when SIGHUP arrives, and still ends at
// stdin's end; a serve started without it ignored ends on SIGHUP
// (TestServeEndsOnSIGHUP).
func TestServeStartedIgnoringSIGHUPKeepsServing(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	cmd, stdin, stdout, stderr := startHupIgnored(t, "dashboard at", "serve", "--admin", "127.0.0.1:0")
	checkHupStillIgnored(t, cmd.Process.Pid)
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT} {
		if err := syscall.Kill(cmd.Process.Pid, sig); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"); err != nil {
		t.Fatalf("serve after SIGHUP: %v\n%s", err, stderr)
	}
	line, err := stdout.ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":1`) || !strings.Contains(line, `"result"`) {
		t.Fatalf("serve after SIGHUP answered %q (%v)\n%s", line, err, stderr)
	}
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if err := waitEnd(t, done, "stdin's end"); err != nil {
		t.Errorf("serve at stdin's end: %v\n%s", err, stderr)
	}
}

// TestDashboardStartedIgnoringSIGHUPKeepsServing: the same for 'nohup
// sluice dashboard', which then ends on SIGTERM.
func TestDashboardStartedIgnoringSIGHUPKeepsServing(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	cmd, _, _, stderr := startHupIgnored(t, ".login,", "dashboard", "127.0.0.1:0")
	checkHupStillIgnored(t, cmd.Process.Pid)
	m := dashboardAt.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no dashboard address on stderr:\n%s", stderr)
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + m[1] + "/admin/login")
	if err != nil {
		t.Fatalf("the dashboard after SIGHUP: %v\n%s", err, stderr)
	}
	resp.Body.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if err := interrupt(cmd); err != nil {
		t.Fatalf("SIGTERM after SIGHUP: %v (the dashboard ended on SIGHUP?)\n%s", err, stderr)
	}
	if err := waitEnd(t, done, "SIGTERM"); err != nil {
		t.Errorf("the dashboard on SIGTERM: %v\n%s", err, stderr)
	}
}
