//go:build linux || darwin

package proc

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGatewaySIGKILL re-executes the test binary as a "gateway" that starts
// a server (leader ignoring SIGTERM and stdin EOF) with a grandchild that
// ignores SIGTERM, SIGKILLs that gateway, and looks at what survives. The
// finding is written up in the package documentation.
func TestGatewaySIGKILL(t *testing.T) {
	for _, c := range []struct {
		name       string
		mode       string
		noWatchdog bool
	}{
		{"without watchdog", "gateway-nowatchdog", true},
		{"with watchdog", "gateway", false},
		{"with watchdog, killed during its own teardown", "gateway-closing", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(testExe(t))
			cmd.Env = append(os.Environ(), childModeEnv+"="+c.mode)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { killGroup(cmd.Process.Pid); cmd.Wait() })
			line := readLine(t, out)
			f := strings.Fields(line)
			if len(f) != 3 || f[0] != "pids" {
				t.Fatalf("gateway said %q", line)
			}
			leader, _ := strconv.Atoi(f[1])
			gc, _ := strconv.Atoi(f[2])
			t.Cleanup(func() { killGroup(leader) })
			if c.mode == "gateway-closing" {
				if l := readLine(t, out); l != "sigterm sent" {
					t.Fatalf("gateway said %q", l)
				}
			}
			if !alive(leader) || !alive(gc) {
				t.Fatal("server not running before the gateway is killed")
			}

			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()

			t.Cleanup(func() { killGroup(leader) }) // whatever the measurement left
			// Pdeathsig (Linux): the leader dies with the gateway in both
			// cases. macOS has no death signal: there only the watchdog
			// ends it.
			if runtime.GOOS == "linux" || !c.noWatchdog {
				if !settle(func() bool { return !alive(leader) }) {
					t.Fatalf("leader %d outlived the SIGKILLed gateway", leader)
				}
			}
			if c.noWatchdog {
				// Measurement, not a wish: observe the grandchild for a while.
				deadline := time.Now().Add(3 * time.Second)
				for time.Now().Before(deadline) && alive(gc) {
					time.Sleep(20 * time.Millisecond)
				}
				if alive(gc) {
					t.Logf("measured: grandchild %d SURVIVED the gateway's SIGKILL (%s)", gc, describePid(gc))
				} else {
					t.Logf("measured: grandchild %d died with the gateway", gc)
				}
				return
			}
			if !settle(func() bool { return !alive(gc) }) {
				t.Fatalf("grandchild %d outlived the gateway despite the watchdog", gc)
			}
			if !settle(func() bool { return !GroupAlive(leader) }) {
				t.Fatalf("group %d not empty", leader)
			}
			t.Logf("measured: with the watchdog, leader and grandchild are gone and group %d is empty", leader)
		})
	}
}
