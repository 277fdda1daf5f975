package proc

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/windows"
)

// TestGatewayKilledWindows re-executes the test binary as a "gateway"
// that starts a server (leader surviving CTRL_BREAK and stdin EOF) with a
// grandchild that does the same, ends that gateway with TerminateProcess
// (what Task Manager and a crash amount to), and checks that the kernel
// ended both through the job's kill-on-close — no watchdog involved.
func TestGatewayKilledWindows(t *testing.T) {
	for _, mode := range []string{"gateway", "gateway-closing"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(testExe(t))
			cmd.Env = append(os.Environ(), childModeEnv+"="+mode)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); cmd.Wait() })
			line := readLine(t, out)
			f := strings.Fields(line)
			if len(f) != 3 || f[0] != "pids" {
				t.Fatalf("gateway said %q", line)
			}
			leader, _ := strconv.Atoi(f[1])
			gc, _ := strconv.Atoi(f[2])
			if mode == "gateway-closing" {
				if l := readLine(t, out); l != "sigterm sent" {
					t.Fatalf("gateway said %q", l)
				}
			}
			if !pidRunning(leader) || !pidRunning(gc) {
				t.Fatal("server not running before the gateway is killed")
			}
			// Hold handles on both so their pids cannot be reused while we
			// look.
			hs := make([]windows.Handle, 0, 2)
			for _, pid := range []int{leader, gc} {
				h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
				if err != nil {
					t.Fatal(err)
				}
				hs = append(hs, h)
			}
			defer func() {
				for _, h := range hs {
					windows.CloseHandle(h)
				}
			}()
			if err := cmd.Process.Kill(); err != nil { // TerminateProcess
				t.Fatal(err)
			}
			cmd.Wait()
			for i, h := range hs {
				ev, err := windows.WaitForSingleObject(h, uint32(hangGuard.Milliseconds()))
				if err != nil || ev != windows.WAIT_OBJECT_0 {
					t.Fatalf("process %d outlived the killed gateway (wait = %#x, %v)", []int{leader, gc}[i], ev, err)
				}
			}
			t.Logf("measured: gateway killed by TerminateProcess; leader %d and grandchild %d ended by the job's kill-on-close", leader, gc)
		})
	}
}

// TestCommandLineMatchesWindows checks windowsCommandLine against
// Windows' own parser, CommandLineToArgvW.
func TestCommandLineMatchesWindows(t *testing.T) {
	args := [][]string{
		{`C:\Program Files\x\y.exe`, "a b", `c"d`, `e\`, `f\\"g`, "", "\t", `\\server\share\`, "ü ✓"},
		{"node", `--eval=console.log("hi")`, `C:\dir with space\`, `"`, `\`},
	}
	for _, argv := range args {
		line, err := windowsCommandLine(argv)
		if err != nil {
			t.Fatal(err)
		}
		got, err := windows.DecomposeCommandLine(line)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, argv) {
			t.Errorf("CommandLineToArgvW(%q) = %q, want %q", line, got, argv)
		}
	}
}
