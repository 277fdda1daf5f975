package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sluice/gateway/mcp/mcptest"
)

// The test binary doubles as the fixture MCP server (mcptest.Command).
func init() { mcptest.RunIfReexec() }

// sluiceBin is the sluice binary built once by TestMain, for the checks
// that need a real process (exit status, os.Exit, real stdio).
var sluiceBin string

func TestMain(m *testing.M) {
	if bin := os.Getenv("SLUICE_TEST_BIN"); bin != "" {
		// A prebuilt binary, where no Go toolchain runs (scripts/wine-test.sh
		// runs the Windows tests of this package under Wine).
		abs, err := filepath.Abs(bin)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		sluiceBin = abs
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "sluice-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin := filepath.Join(dir, "sluice")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	// CGO_ENABLED=0 as make build ships it; the sluicetest tag adds
	// hooks that stay inert unless a test's environment turns them on
	// (wasm/testhook_sluicetest.go).
	cmd := exec.Command(gobin, "build", "-tags", "sluicetest", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "building sluice for the process tests: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	sluiceBin = bin
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// world is an isolated sluice home, cache, state and project for one test.
// The environment is set with t.Setenv because run reads the process
// environment, so tests that call run in-process are not parallel.
type world struct {
	t       *testing.T
	root    string
	home    string
	cache   string
	state   string
	project string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	root := t.TempDir()
	// The cache lives outside t.TempDir: the gateway may still be writing a
	// catalog after Close returned (a launch records its catalog after
	// releasing its waiters), which would make TempDir's cleanup fail.
	cache, err := os.MkdirTemp("", "sluice-cli-cache-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeSettled(t, cache) })
	w := &world{t: t, root: root, home: filepath.Join(root, "home"), cache: cache,
		state: filepath.Join(root, "state"), project: filepath.Join(root, "project")}
	for _, d := range []string{w.home, w.cache, w.state, filepath.Join(w.project, ".sluice")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("SLUICE_HOME", w.home)
	t.Setenv("SLUICE_CACHE_DIR", w.cache)
	t.Setenv("XDG_STATE_HOME", w.state)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(root, "config"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(root, "xdgcache"))
	t.Setenv("SLUICE_LOG_LEVEL", "")
	t.Chdir(w.project)
	t.Cleanup(func() { waitNoChildren(t) })
	return w
}

func (w *world) writeUser(body string) {
	w.t.Helper()
	if err := os.WriteFile(filepath.Join(w.home, "mcp.yaml"), []byte(body), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) writeProject(body string) {
	w.t.Helper()
	if err := os.WriteFile(filepath.Join(w.project, ".sluice", "mcp.yaml"), []byte(body), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// fixture returns a YAML server declaration running the fixture with args.
func fixture(t testing.TB, id string, args ...string) string {
	t.Helper()
	exe, argv, err := mcptest.Command(args...)
	if err != nil {
		t.Fatal(err)
	}
	return decl(id, exe, argv...)
}

// decl is a YAML server declaration (two-space indented under servers:).
func decl(id, command string, args ...string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return fmt.Sprintf("  %s:\n    command: %s\n    args: [%s]\n", id, strconv.Quote(command), strings.Join(q, ", "))
}

// result is one command's outcome.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s--- stderr:\n%s", r.code, r.stdout, r.stderr)
}

// syncBuffer is a bytes.Buffer safe against a late write from a gateway
// goroutine while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startPiped starts cmd in a process group of its own (killed when the
// test ends) with its stdin a pipe and its stdout and stderr kept.
func startPiped(t *testing.T, cmd *exec.Cmd) (stdin io.WriteCloser, out, errb *syncBuffer) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, errb = &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, errb
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killGroup(cmd) })
	return stdin, out, errb
}

// startWaited starts cmd in a process group of its own (killed when the
// test ends) with its stdout and stderr kept, and waits for it in the
// background: done gets Wait's error.
func startWaited(t *testing.T, cmd *exec.Cmd) (stdout, stderr *syncBuffer, done chan error) {
	t.Helper()
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done = make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { killGroup(cmd) })
	return stdout, stderr, done
}

// waitExit waits for cmd, which the test started, to exit after what
// (stdin's end, a signal) and returns Wait's error. One still running
// after two minutes (a hang guard, not a timing) is killed with its
// group, reaped, and fails the test.
func waitExit(t *testing.T, cmd *exec.Cmd, what string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(2 * time.Minute):
		killGroup(cmd)
		<-done
		t.Fatalf("%v did not exit after %s", cmd.Args[1:], what)
		return nil
	}
}

// sluice runs the CLI in-process with stdin as given.
func sluice(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb syncBuffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// want fails unless r exited with code and every fragment appears in
// stdout+stderr.
func want(t *testing.T, r result, code int, fragments ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("want exit %d, got %s", code, r)
	}
	all := r.stdout + r.stderr
	for _, f := range fragments {
		if !strings.Contains(all, f) {
			t.Fatalf("output lacks %q:\n%s", f, r)
		}
	}
}

// sluiceProc runs the built binary as a real process.
func sluiceProc(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(sluiceBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("running sluice %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// fakeTerminal makes every stream count as a terminal for one test.
func fakeTerminal(t *testing.T) {
	old := isTerminal
	isTerminal = func(any) bool { return true }
	t.Cleanup(func() { isTerminal = old })
}

// children counts running servers: process groups of live children.
func children() int { return mcptest.ChildGroups() }

func waitNoChildren(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for children() > 0 {
		if time.Now().After(deadline) {
			t.Errorf("%d child process groups still alive", children())
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// removeSettled removes dir, retrying while a late writer recreates files
// in it.
func removeSettled(t testing.TB, dir string) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := os.RemoveAll(dir)
		if err == nil {
			time.Sleep(20 * time.Millisecond)
			if _, serr := os.Stat(dir); os.IsNotExist(serr) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Errorf("cannot remove %s: %v", dir, err)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// noChildren asserts that nothing runs right now (after a command returned,
// its gateway is closed, so every server must be gone).
func noChildren(t *testing.T, after string) {
	t.Helper()
	if n := children(); n != 0 {
		t.Fatalf("after %s: %d child process groups alive", after, n)
	}
}
