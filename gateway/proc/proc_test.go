//go:build linux || darwin || windows

package proc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// hangGuard bounds any wait in these tests; it is never an assertion
// about speed.
const hangGuard = 20 * time.Second

func testExe(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func childSpec(t testing.TB, mode string) Spec {
	s := Spec{
		Server:  "t",
		Command: testExe(t),
		Env:     map[string]string{childModeEnv: mode},
		// Generous: a child that leaves on stdin EOF always gets to, so
		// the reported stage never depends on scheduling.
		StdinGrace: hangGuard,
		KillGrace:  200 * time.Millisecond,
		// A bound, not an expectation: on a loaded machine a SIGKILLed
		// process can take seconds to finish exiting.
		KillBound: hangGuard / 2,
	}
	if strings.Contains(mode, "ignore-term") || strings.Contains(mode, "stubborn") {
		s.StdinGrace = 50 * time.Millisecond // it will not leave; do not wait long
	}
	return s
}

func mustStart(t testing.TB, s Spec) *Process {
	t.Helper()
	p, err := Start(s)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { killGroup(p.Pid()); p.Close() })
	return p
}

func readLine(t testing.TB, r io.Reader) string {
	t.Helper()
	ch := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(r).ReadString('\n')
		ch <- strings.TrimSpace(l)
	}()
	select {
	case l := <-ch:
		return l
	case <-time.After(hangGuard):
		t.Fatal("no line from child")
		return ""
	}
}

// assertGroupGone checks that no process of the group remains. Killed
// orphans are reaped by init on its own schedule, so zombies get a bounded
// moment to disappear.
func assertGroupGone(t testing.TB, pgid int) {
	t.Helper()
	if !settle(func() bool { return !GroupAlive(pgid) }) {
		t.Fatalf("process group %d still has processes", pgid)
	}
}

func TestStdinEOFExit(t *testing.T) {
	p := mustStart(t, childSpec(t, "eof"))
	if _, err := io.WriteString(p.Stdin(), "hello\n"); err != nil {
		t.Fatal(err)
	}
	if got := readLine(t, p.Stdout()); got != "hello" {
		t.Fatalf("echo = %q", got)
	}
	if p.Phase() != PhaseLive {
		t.Fatalf("phase = %v, want live", p.Phase())
	}
	out := p.Close()
	if !out.Complete || out.Stage != StageExited || out.Pgid != p.Pid() || out.Reason != "" {
		t.Fatalf("outcome = %+v", out)
	}
	if err := p.ExitError(); err != nil {
		t.Fatalf("ExitError = %v", err)
	}
	if p.Phase() != PhaseReleased {
		t.Fatalf("phase = %v", p.Phase())
	}
	if !strings.Contains(p.StderrTail(), "child eof ready") {
		t.Fatalf("stderr tail = %q", p.StderrTail())
	}
	assertGroupGone(t, p.Pid())
}

func TestIgnoresSIGTERM(t *testing.T) {
	p := mustStart(t, childSpec(t, "ignore-term"))
	readLine(t, p.Stdout())
	out := p.Close()
	if !out.Complete || out.Stage != StageSigkill {
		t.Fatalf("outcome = %+v", out)
	}
	var ee *ExitError
	if !errors.As(p.ExitError(), &ee) || ee.Signal != syscall.SIGKILL {
		t.Fatalf("ExitError = %v", p.ExitError())
	}
	assertGroupGone(t, p.Pid())
}

func TestGrandchildIgnoringSIGTERM(t *testing.T) {
	p := mustStart(t, childSpec(t, "grandchild"))
	line := readLine(t, p.Stdout())
	gc, err := strconv.Atoi(strings.TrimPrefix(line, "grandchild "))
	if err != nil {
		t.Fatalf("line %q", line)
	}
	if !inGroup(p, gc) {
		t.Fatalf("grandchild %d is not in the group of %d", gc, p.Pid())
	}
	out := p.Close()
	// The leader leaves on stdin EOF; the grandchild needs SIGKILL.
	if !out.Complete || out.Stage != StageSigkill {
		t.Fatalf("outcome = %+v", out)
	}
	if p.ExitError() != nil {
		t.Fatalf("leader ExitError = %v", p.ExitError())
	}
	assertGroupGone(t, p.Pid())
}

func TestLeaderExitStartsCleanupWithoutClose(t *testing.T) {
	p := mustStart(t, childSpec(t, "grandchild"))
	readLine(t, p.Stdout())
	p.Stdin().Close() // the leader exits; nobody calls Close yet
	select {
	case <-p.Exited():
	case <-time.After(hangGuard):
		t.Fatal("leader did not exit")
	}
	select {
	case <-p.done:
	case <-time.After(hangGuard):
		t.Fatal("group cleanup did not finish without Close")
	}
	if p.Phase() != PhaseReleased {
		t.Fatalf("phase = %v", p.Phase())
	}
	assertGroupGone(t, p.Pid())
	if out := p.Close(); !out.Complete || out.Stage != StageSigkill {
		t.Fatalf("outcome = %+v", out)
	}
}

func TestExitStatus(t *testing.T) {
	p := mustStart(t, childSpec(t, "exit3"))
	<-p.Exited()
	var ee *ExitError
	if !errors.As(p.ExitError(), &ee) || ee.Code != 3 || ee.Signal != 0 {
		t.Fatalf("ExitError = %#v", p.ExitError())
	}
	out := p.Close()
	if !out.Complete || out.Stage != StageExited {
		t.Fatalf("outcome = %+v", out)
	}
	if !strings.Contains(p.StderrTail(), "failing on purpose") {
		t.Fatalf("tail = %q", p.StderrTail())
	}
}

func TestCloseIdempotentConcurrent(t *testing.T) {
	p := mustStart(t, childSpec(t, "ignore-term"))
	readLine(t, p.Stdout())
	var wg sync.WaitGroup
	outs := make([]Outcome, 8)
	for i := range outs {
		wg.Add(1)
		go func() { defer wg.Done(); outs[i] = p.Close() }()
	}
	wg.Wait()
	for _, o := range outs[1:] {
		if o != outs[0] {
			t.Fatalf("outcomes differ: %+v vs %+v", o, outs[0])
		}
	}
	if !outs[0].Complete {
		t.Fatalf("outcome = %+v", outs[0])
	}
	if o := p.Close(); o != outs[0] {
		t.Fatalf("late Close = %+v", o)
	}
}

// TestSurvivedSIGKILLOutcome drives the report path with an injected
// membership check that always sees a survivor; the processes are real
// and are cleaned up by group id afterwards.
func TestSurvivedSIGKILLOutcome(t *testing.T) {
	s := childSpec(t, "grandchild")
	s.KillBound = 100 * time.Millisecond
	s.groupHasMembers = func(pgid, leader int) bool { return true }
	p := mustStart(t, s)
	readLine(t, p.Stdout())
	out := p.Close()
	if out.Complete || out.Reason != ReasonGroupSurvived || out.Pgid != p.Pid() || out.Stage != StageSigkill {
		t.Fatalf("outcome = %+v", out)
	}
	// The pipes are destroyed: reading stdout fails at once.
	if _, err := p.Stdout().Read(make([]byte, 1)); err == nil {
		t.Fatal("stdout still readable after incomplete teardown")
	}
	// The real SIGKILL did reach the group.
	assertGroupGone(t, p.Pid())
}

// TestLateCloseNeverSignals: once the leader is reaped its id may be
// reused by an unrelated process, so nothing may be signalled any more —
// not by a late Close, not by a late escalation.
func TestLateCloseNeverSignals(t *testing.T) {
	var mu sync.Mutex
	var sent []int
	s := childSpec(t, "grandchild")
	s.onSignal = func(target int, sig syscall.Signal) {
		mu.Lock()
		sent = append(sent, target)
		mu.Unlock()
	}
	p := mustStart(t, s)
	readLine(t, p.Stdout())
	p.Stdin().Close()
	<-p.done // leader left, group cleaned by the supervisor, id released
	mu.Lock()
	before := len(sent)
	mu.Unlock()
	if before == 0 {
		t.Fatal("the grandchild was never signalled")
	}
	p.escalate(StageSigkill) // would be a stray kill(-pgid) if allowed
	out := p.Close()
	if !out.Complete {
		t.Fatalf("outcome = %+v", out)
	}
	mu.Lock()
	after := len(sent)
	mu.Unlock()
	if after != before {
		t.Fatalf("signals sent after release: %v", sent[before:])
	}
	if h := leaderHandles(p); h != "" {
		t.Fatalf("still open after release: %s", h)
	}
}

func TestStderrTailBoundedUTF8(t *testing.T) {
	s := childSpec(t, "stderr-flood")
	s.StderrTailBytes = 1000
	var mu sync.Mutex
	var lines int
	s.Stderr = writerFunc(func(b []byte) (int, error) {
		mu.Lock()
		lines += strings.Count(string(b), "\n")
		mu.Unlock()
		return len(b), nil
	})
	p := mustStart(t, s)
	out := p.Close()
	if !out.Complete {
		t.Fatalf("outcome = %+v", out)
	}
	tail := p.StderrTail()
	if !utf8.ValidString(tail) || strings.ContainsRune(tail, utf8.RuneError) {
		t.Fatalf("tail not clean UTF-8: %q", tail)
	}
	if len(tail) > 1000+len("…") || !strings.HasPrefix(tail, "…") || !strings.HasSuffix(tail, "line 1999 ünïcödé ✓\n") {
		t.Fatalf("tail = %q (%d bytes)", tail, len(tail))
	}
	mu.Lock()
	defer mu.Unlock()
	if lines != 2000 {
		t.Fatalf("copied %d stderr lines, want 2000", lines)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

func TestSpawnErrors(t *testing.T) {
	exe := testExe(t)
	root := tempDir(t)
	allow, _ := ParseAllowList("node")
	cases := []struct {
		name   string
		spec   Spec
		reason string
	}{
		{"not allowed", Spec{Command: "true", AllowCommands: allow}, ReasonCommandNotAllowed},
		{"not found", Spec{Command: "no-such-command-sluice"}, ReasonCommandNotFound},
		{"relative path", Spec{Command: "./x"}, ReasonCommandInvalid},
		{"denied env", Spec{Command: exe, Env: map[string]string{"LD_PRELOAD": "x.so"}}, ReasonEnvDeniedLoader},
		{"denied passEnv", Spec{Command: exe, PassEnv: []string{"NODE_OPTIONS"}}, ReasonEnvDeniedInterp},
		{"cwd escape", Spec{Command: exe, Root: root, Dir: "../.."}, ReasonCwdEscapes},
		{"cwd missing", Spec{Command: exe, Root: root, Dir: "nope"}, ReasonCwdNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.spec.Server = "srv"
			p, err := Start(c.spec)
			if err == nil {
				p.Close()
				t.Fatal("Start succeeded")
			}
			if got := reasonOf(err); got != c.reason {
				t.Fatalf("reason = %q, want %q (%v)", got, c.reason, err)
			}
			if !strings.Contains(err.Error(), "server srv") {
				t.Fatalf("error does not name the server: %v", err)
			}
		})
	}
}

func reasonOf(err error) string {
	var ee *EnvError
	var ce *CwdError
	var me *CommandError
	switch {
	case errors.As(err, &ee):
		return ee.Reason
	case errors.As(err, &ce):
		return ce.Reason
	case errors.As(err, &me):
		return me.Reason
	}
	return ""
}

func TestAllowListAppliesToBareNames(t *testing.T) {
	allow, _ := ParseAllowList("SLEEP, " + filepath.Base(testExe(t)))
	s := childSpec(t, "exit3")
	s.AllowCommands = allow
	s.Command = filepath.Base(testExe(t))
	s.Env["PATH"] = filepath.Dir(testExe(t))
	p := mustStart(t, s)
	p.Close()
}

func TestCwdAndEnvReachChild(t *testing.T) {
	root := tempDir(t)
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLUICE_PASS_ME", "passed")
	t.Setenv("SECRET_NOT_SAFE", "leak")
	t.Setenv("LANG", "C.UTF-8")
	s := childSpec(t, "pwd-env")
	s.Root, s.Dir = root, "sub"
	s.PassEnv = []string{"SLUICE_PASS_ME"}
	p := mustStart(t, s)
	data, _ := io.ReadAll(p.Stdout())
	p.Close()
	got := string(data)
	want, _ := filepath.EvalSymlinks(filepath.Join(root, "sub"))
	for _, must := range []string{"cwd=" + want + "\n", "env=SLUICE_PASS_ME=passed\n", "env=LANG=C.UTF-8\n", "env=" + childModeEnv + "=pwd-env\n"} {
		if !strings.Contains(got, must) {
			t.Errorf("child output lacks %q:\n%s", must, got)
		}
	}
	if strings.Contains(got, "SECRET_NOT_SAFE") {
		t.Errorf("unsafe variable reached the child")
	}
}

// settle waits (bounded) for f to hold, for counters that lag a little
// behind (goroutines finishing their last instructions).
func settle(f func() bool) bool {
	deadline := time.Now().Add(hangGuard)
	for time.Now().Before(deadline) {
		if f() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return f()
}

func TestNoLeaks(t *testing.T) {
	// Warm up: the spawn thread and runtime pollers are created once.
	p := mustStart(t, childSpec(t, "exit3"))
	p.Close()
	fds := fdCount(t)
	gs := runtime.NumGoroutine()
	for _, mode := range []string{"eof", "ignore-term", "grandchild", "exit3", "grandchild-stubborn"} {
		p, err := Start(childSpec(t, mode))
		if err != nil {
			t.Fatal(err)
		}
		if out := p.Close(); !out.Complete {
			t.Fatalf("%s: outcome %+v", mode, out)
		}
		assertGroupGone(t, p.Pid())
	}
	if !settle(func() bool { return fdCount(t) <= fds }) {
		t.Fatalf("fds: before %d, after %d", fds, fdCount(t))
	}
	if !settle(func() bool { return runtime.NumGoroutine() <= gs }) {
		t.Fatalf("goroutines: before %d, after %d", gs, runtime.NumGoroutine())
	}
}

func TestSoak(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 20
	}
	modes := []string{"eof", "ignore-term", "grandchild", "exit3", "grandchild-stubborn"}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 8)
	pgids := make(chan int, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			s := childSpec(t, modes[i%len(modes)])
			s.StdinGrace = 20 * time.Millisecond
			s.KillGrace = 50 * time.Millisecond
			p, err := Start(s)
			if err != nil {
				errs <- err
				return
			}
			pgids <- p.Pid()
			if i%3 == 0 {
				p.Stdin().Close()
			}
			if out := p.Close(); !out.Complete {
				errs <- fmt.Errorf("mode %s: outcome %+v; phase %v; %s", s.Env[childModeEnv], out, p.Phase(), describeGroup(p.Pid()))
			}
		}()
	}
	wg.Wait()
	close(errs)
	close(pgids)
	for err := range errs {
		t.Error(err)
	}
	for pg := range pgids {
		if !settle(func() bool { return !GroupAlive(pg) }) {
			t.Errorf("group %d survived", pg)
			killGroup(pg)
		}
	}
}

// TestArgumentsReachChild: arguments that need quoting on Windows arrive
// intact in a real child (there split by the Go runtime's own parser).
func TestArgumentsReachChild(t *testing.T) {
	s := childSpec(t, "args")
	s.Args = []string{"a b", `c"d`, `e\`, `f\\"g`, "", "%PATH%", "&|^<>", "ü ✓", "-x"}
	p := mustStart(t, s)
	got := readLine(t, p.Stdout())
	var want []string
	for _, a := range s.Args {
		want = append(want, strconv.Quote(a))
	}
	if got != strings.Join(want, " ") {
		t.Fatalf("child saw %s, want %s", got, strings.Join(want, " "))
	}
	if out := p.Close(); !out.Complete {
		t.Fatalf("outcome = %+v", out)
	}
}

// oneSecret scrubs one text, as the gateway's scrubber does each of its.
type oneSecret string

func (o oneSecret) Scrub(line []byte) []byte {
	return bytes.ReplaceAll(line, []byte(o), []byte("(hidden)"))
}

func (o oneSecret) Partial(b []byte) int {
	for k := min(len(o)-1, len(b)); k > 0; k-- {
		if bytes.HasSuffix(b, []byte(o[:k])) {
			return k
		}
	}
	return 0
}

// TestScrubAcrossTheReadBuffer: a line longer than the read buffer is
// read in pieces; a credential across two of them is hidden all the
// same, in the tail and in the copy. Before, each piece was scrubbed on
// its own and one split at 64 KiB reached both whole.
func TestScrubAcrossTheReadBuffer(t *testing.T) {
	const secret = "hunter2secretpw"
	for _, pad := range []int{maxStderrLine - len(secret), maxStderrLine - 9, maxStderrLine - 1, maxStderrLine, 2*maxStderrLine - 3} {
		s := childSpec(t, "stderr-long")
		s.Env["PAD"] = strconv.Itoa(pad)
		s.Env["TAIL"] = secret + " end"
		s.StderrTailBytes = 4 * maxStderrLine
		s.Scrub = oneSecret(secret)
		var mu sync.Mutex
		var copied bytes.Buffer
		s.Stderr = writerFunc(func(b []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return copied.Write(b)
		})
		p := mustStart(t, s)
		if out := p.Close(); !out.Complete {
			t.Fatalf("outcome = %+v", out)
		}
		want := strings.Repeat("x", pad) + "(hidden) end\n"
		if tail := p.StderrTail(); tail != want {
			t.Errorf("pad %d: tail ends %q, want it to end %q", pad, tail[max(0, len(tail)-40):], want[len(want)-40:])
		}
		mu.Lock()
		if got := copied.String(); got != want {
			t.Errorf("pad %d: copy ends %q, want it to end %q", pad, got[max(0, len(got)-40):], want[len(want)-40:])
		}
		mu.Unlock()
	}
}
