package clitool

import (
	"encoding/json"
	"fmt"
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

// childModeEnv selects what a re-executed test binary does; tests pass it
// through Spec.Env, the way a declaration's env reaches the command.
const childModeEnv = "CLITOOL_TESTCHILD"

// runLogEnv names a file every stub run appends its argv to, so a test can
// prove that a refused call ran nothing.
const runLogEnv = "CLITOOL_RUNLOG"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childModeEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

func runChild(mode string) int {
	args := os.Args[1:]
	if log := os.Getenv(runLogEnv); log != "" {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			b, _ := json.Marshal(args)
			fmt.Fprintf(f, "%s\n", b)
			f.Close()
		}
	}
	switch mode {
	case "argv": // print argv (after argv[0]) as a JSON array
		b, _ := json.Marshal(args)
		os.Stdout.Write(b)
		return 0
	case "argv-object": // the same as an object, for output: json
		b, _ := json.Marshal(map[string]any{"argv": args, "n": len(args)})
		os.Stdout.Write(b)
		return 0
	case "lines": // one argument per line
		for _, a := range args {
			fmt.Println(a)
		}
		return 0
	case "text":
		fmt.Print("not json {")
		return 0
	case "pwd-env":
		wd, _ := os.Getwd()
		fmt.Printf("%s\n%s\n", wd, os.Getenv("STUB_GREETING"))
		return 0
	case "fail":
		for i := 1; i <= 30; i++ {
			fmt.Fprintf(os.Stderr, "err line %d\n", i)
		}
		fmt.Print("partial")
		return 3
	case "flood":
		chunk := []byte(strings.Repeat("x", 4096))
		for {
			if _, err := os.Stdout.Write(chunk); err != nil {
				return 0
			}
		}
	case "block": // touch $STUB_STARTED, then wait for $STUB_RELEASE to exist
		os.WriteFile(os.Getenv("STUB_STARTED"), nil, 0o600)
		for {
			if _, err := os.Stat(os.Getenv("STUB_RELEASE")); err == nil {
				fmt.Print("released")
				return 0
			}
			time.Sleep(10 * time.Millisecond)
		}
	case "grandchild":
		// Start a grandchild in our group that ignores SIGTERM, record
		// both pids, ignore SIGTERM ourselves and never exit.
		signal.Ignore(syscall.SIGTERM)
		gc := exec.Command(os.Args[0])
		gc.Env = append(os.Environ(), childModeEnv+"=stubborn")
		if err := gc.Start(); err != nil {
			return 11
		}
		writeWhole(os.Getenv("STUB_PIDS"), fmt.Sprintf("%d %d", os.Getpid(), gc.Process.Pid))
		fmt.Print("spawned")
		sleepForever()
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		sleepForever()
	}
	fmt.Fprintf(os.Stderr, "unknown test child mode %q\n", mode)
	return 2
}

// writeWhole writes path by rename, so a test that sees the file sees all
// of it (os.WriteFile creates the file before writing: a reader, or a kill,
// in between leaves it empty).
func writeWhole(path, data string) {
	tmp := path + ".tmp"
	if os.WriteFile(tmp, []byte(data), 0o600) == nil {
		os.Rename(tmp, path)
	}
}

// readPids reads the "leader grandchild" pids a grandchild stub wrote.
func readPids(t *testing.T, path string) (leader, grandchild int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the stub did not record its pids: %v", err)
	}
	if _, err := fmt.Sscan(string(b), &leader, &grandchild); err != nil || leader <= 0 || grandchild <= 0 {
		t.Fatalf("pids file %q: %v", b, err)
	}
	return leader, grandchild
}

// sleepForever blocks without ending the process. A bare select{} would
// not do: with no other goroutine the runtime reports a deadlock and
// exits (it does not under -race, whose runtime keeps one), and the tests
// that need a child which never exits would pass for the wrong reason or
// fail.
func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

// self is the test binary, the stub every tool runs.
func self(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// alive reports whether pid names a live, non-zombie process.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// gone waits, within a bound, for pid to stop running.
func gone(pid int) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func runLog(t *testing.T) (string, func() []string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "runs")
	return p, func() []string {
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
}
