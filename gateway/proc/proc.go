package proc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Defaults for the zero values of Spec's durations and sizes.
const (
	DefaultStdinGrace      = 500 * time.Millisecond
	DefaultKillGrace       = 3 * time.Second
	DefaultKillBound       = 2 * time.Second
	DefaultStderrTailBytes = 16 << 10
	maxStderrLine          = 64 << 10
)

// Stages reported in Outcome.Stage: the strongest step teardown needed.
const (
	StageExited  = "exited"  // the group left on its own (stdin EOF or exit)
	StageSigterm = "sigterm" // SIGTERM to the group was needed
	StageSigkill = "sigkill" // SIGKILL to the group was needed
)

// Spec describes one server process. The zero value of every optional field
// means the documented default.
type Spec struct {
	Server          string            // server id, for errors and logs
	Command         string            // absolute path, or a bare name resolved on PATH (Env's PATH if set, else the gateway's). Never a shell.
	Args            []string          // arguments after the command name
	Dir             string            // working directory; "" = Root (or the gateway's cwd when Root is "")
	Root            string            // containment root for Dir ("" = no containment check; Dir must then be absolute or "")
	Env             map[string]string // declared env, already expanded by the caller
	PassEnv         []string          // extra names copied from the gateway's environment (opt-in)
	AllowCommands   *AllowList        // nil = no allow-list; applies to bare command names
	StdinGrace      time.Duration     // wait after closing stdin before SIGTERM; default 500ms
	KillGrace       time.Duration     // SIGTERM -> SIGKILL; default 3s
	KillBound       time.Duration     // after SIGKILL, how long to wait for the group; default 2s
	StderrTailBytes int               // bound of StderrTail; default 16 KiB
	Stderr          io.Writer         // optional: every stderr line is also copied here; must not block for long
	NoWatchdog      bool              // do not start the watchdog that kills the group if the gateway dies (see package doc)

	// Scrub, when set, rewrites every stderr line before the tail and
	// Stderr get it: the caller hides the credentials it gave the server.
	Scrub Scrubber

	// groupHasMembers replaces the /proc scan in tests (nil = real scan).
	groupHasMembers func(pgid, leader int) bool
	// onSignal, when set, is told about every signal about to be sent
	// (target as passed to kill: negative for the group). Tests only.
	onSignal func(target int, sig syscall.Signal)
}

// Outcome reports how a teardown ended. It is a report, never an error: a
// caller's shutdown path can do nothing about a survivor except report it.
type Outcome struct {
	Complete bool          // no process of the group remains
	Reason   string        // ReasonGroupSurvived when !Complete
	Pgid     int           // the group id (== leader pid)
	Stage    string        // StageExited, StageSigterm or StageSigkill
	Elapsed  time.Duration // from Close (or the leader's exit, if earlier) to the end of teardown
}

// Phase is the state of a process group as this package tracks it.
type Phase int32

const (
	PhaseUnspawned Phase = iota // not started (never observable on a *Process from Start)
	PhaseLive                   // the leader runs; the group id is pinned by it
	PhaseCleaning               // the leader exited (unreaped, so the id is still pinned); the rest of the group is being terminated
	PhaseReleased               // the leader is reaped; the id may be reused and is never signalled again
)

func (ph Phase) String() string {
	switch ph {
	case PhaseUnspawned:
		return "unspawned"
	case PhaseLive:
		return "live"
	case PhaseCleaning:
		return "cleaning"
	case PhaseReleased:
		return "released"
	}
	return "phase(" + strconv.Itoa(int(ph)) + ")"
}

// Process is one spawned server: the leader of its own process group.
type Process struct {
	spec Spec
	pid  int
	g    group // the platform's handle on the group (see group.go)

	stdin   *os.File
	stdout  *os.File
	stderrR *os.File
	tail    *tail

	exited     chan struct{} // leader exited; group cleanup has started
	done       chan struct{} // group released (leader reaped)
	stderrDone chan struct{}

	mu        sync.Mutex
	phase     Phase
	stage     string
	sigtermAt time.Time
	sigkillAt time.Time
	exitErr   error
	outcome   Outcome // set by the supervisor before done is closed
	firstT    time.Time

	closeOnce sync.Once
	closeOut  Outcome
}

// Start spawns spec.Command in a new process group and returns once it
// runs. Errors are *CommandError, *EnvError, *CwdError or *SpawnError.
func Start(spec Spec) (*Process, error) {
	if spec.StdinGrace <= 0 {
		spec.StdinGrace = DefaultStdinGrace
	}
	if spec.KillGrace <= 0 {
		spec.KillGrace = DefaultKillGrace
	}
	if spec.KillBound <= 0 {
		spec.KillBound = DefaultKillBound
	}
	if spec.StderrTailBytes <= 0 {
		spec.StderrTailBytes = DefaultStderrTailBytes
	}

	env, err := BuildEnv(spec.Env, spec.PassEnv, os.Environ())
	if err != nil {
		var ee *EnvError
		if errors.As(err, &ee) {
			ee.Server = spec.Server
		}
		return nil, err
	}

	if !filepath.IsAbs(spec.Command) && !spec.AllowCommands.Allows(spec.Command) {
		return nil, &CommandError{Server: spec.Server, Command: spec.Command, Reason: ReasonCommandNotAllowed, Err: ErrCommandNotAllowed}
	}
	path, ok := lookupEnv(env, "PATH")
	if !ok {
		path = os.Getenv("PATH")
	}
	exe, err := ResolveCommand(spec.Command, path)
	if err != nil {
		var ce *CommandError
		if errors.As(err, &ce) {
			ce.Server = spec.Server
		}
		return nil, err
	}

	dirFile, childDir, err := openDir(spec)
	if err != nil {
		return nil, err
	}
	if dirFile != nil {
		defer dirFile.Close()
	}

	var files [6]*os.File // stdinR, stdinW, stdoutR, stdoutW, stderrR, stderrW
	closeAll := func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}
	for i := 0; i < 3; i++ {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll()
			return nil, &SpawnError{Server: spec.Server, Command: spec.Command, Err: err}
		}
		files[2*i], files[2*i+1] = r, w
	}
	argv := append([]string{spec.Command}, spec.Args...)
	g, pid, err := spawn(&spec, exe, argv, env, childDir, []*os.File{files[0], files[3], files[5]})
	files[0].Close()
	files[3].Close()
	files[5].Close()
	if err != nil {
		files[1].Close()
		files[2].Close()
		files[4].Close()
		return nil, &SpawnError{Server: spec.Server, Command: spec.Command, Err: err}
	}

	p := &Process{
		spec:       spec,
		pid:        pid,
		g:          g,
		stdin:      files[1],
		stdout:     files[2],
		stderrR:    files[4],
		tail:       newTail(spec.StderrTailBytes),
		exited:     make(chan struct{}),
		done:       make(chan struct{}),
		stderrDone: make(chan struct{}),
		phase:      PhaseLive,
	}
	go p.readStderr()
	go p.supervise()
	return p, nil
}

// openDir resolves the working directory at spawn. It returns the path
// the child should change to and, where the platform can pin the checked
// directory (pinDir), an open handle on it that must stay open until the
// child has started.
func openDir(spec Spec) (*os.File, string, error) {
	if spec.Root == "" {
		if spec.Dir == "" {
			return nil, "", nil
		}
		if !filepath.IsAbs(spec.Dir) {
			return nil, "", &CwdError{Server: spec.Server, Dir: spec.Dir, Reason: ReasonCwdNotFound, Err: fmt.Errorf("%w: a cwd without a root must be absolute", ErrCwdInvalid)}
		}
		return nil, filepath.Clean(spec.Dir), nil
	}
	dir, err := Contain(spec.Root, spec.Dir)
	if err != nil {
		var ce *CwdError
		if errors.As(err, &ce) {
			ce.Server = spec.Server
		}
		return nil, "", err
	}
	realRoot, err := filepath.EvalSymlinks(spec.Root)
	if err != nil {
		return nil, "", &CwdError{Server: spec.Server, Root: spec.Root, Dir: spec.Dir, Reason: ReasonRootInvalid, Err: errors.Join(ErrCwdInvalid, err)}
	}
	return pinDir(spec, dir, realRoot)
}

// Stdin is the server's standard input. Closing it is the polite request
// to exit; Close does it first.
func (p *Process) Stdin() io.WriteCloser { return p.stdin }

// Stdout is the server's standard output. Close closes it.
func (p *Process) Stdout() io.ReadCloser { return p.stdout }

// Pid is the leader's pid, which is also the process group id.
func (p *Process) Pid() int { return p.pid }

// Exited is closed when the leader has exited; cleanup of the rest of the
// group has started by then.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Phase reports the group's phase.
func (p *Process) Phase() Phase {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.phase
}

// ExitError is nil while the leader runs and after a clean exit (status 0);
// otherwise an *ExitError with the status or the signal.
func (p *Process) ExitError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// StderrTail returns the last StderrTailBytes of the server's stderr as
// valid UTF-8, prefixed by "…" when earlier output was discarded.
func (p *Process) StderrTail() string { return p.tail.String() }

// Close tears the whole group down: close stdin, wait StdinGrace, SIGTERM
// the group, wait KillGrace, SIGKILL the group, wait KillBound. It then
// closes every pipe end it holds. It is idempotent and safe to call
// concurrently; every call returns the same Outcome.
func (p *Process) Close() Outcome {
	p.closeOnce.Do(func() { p.closeOut = p.teardown() })
	return p.closeOut
}

func (p *Process) teardown() Outcome {
	start := time.Now()
	p.mu.Lock()
	if p.firstT.IsZero() {
		p.firstT = start
	}
	p.mu.Unlock()
	p.stdin.Close()

	leaderGone := wait(p.exited, p.spec.StdinGrace)
	if !leaderGone {
		p.escalate(StageSigterm)
		leaderGone = wait(p.exited, p.spec.KillGrace)
	}
	if !leaderGone {
		p.escalate(StageSigkill)
		leaderGone = wait(p.exited, p.spec.KillBound)
	}
	if !leaderGone {
		// The leader itself outlived SIGKILL (uninterruptible sleep, or a
		// frozen cgroup). Report it and let go of the pipes.
		p.destroyPipes()
		return Outcome{Complete: false, Reason: ReasonGroupSurvived, Pgid: p.pid, Stage: StageSigkill, Elapsed: time.Since(start)}
	}
	<-p.done // the supervisor's own waits are bounded
	out := p.outcome
	if !out.Complete {
		p.destroyPipes()
	} else {
		p.drainStderr()
		p.stdout.Close()
	}
	out.Elapsed = time.Since(start)
	return out
}

func (p *Process) destroyPipes() {
	p.stdin.Close()
	p.stdout.Close()
	p.stderrR.Close()
}

// drainStderr lets the stderr reader reach EOF (every writer is dead), and
// forces it if a process outside the group (one that left it) still holds
// the pipe.
func (p *Process) drainStderr() {
	if !wait(p.stderrDone, p.spec.KillBound) {
		p.stderrR.Close()
		<-p.stderrDone
	}
	p.stderrR.Close()
}

func wait(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

var stageRank = map[string]int{"": 0, StageExited: 0, StageSigterm: 1, StageSigkill: 2}

// escalate records stage and signals the group (and the leader through
// its pidfd, in case it left its own group) — unless the group is already
// released, in which case the id may belong to someone else and nothing is
// sent.
func (p *Process) escalate(stage string) {
	sig := syscall.SIGTERM
	if stage == StageSigkill {
		sig = syscall.SIGKILL
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if stageRank[stage] <= stageRank[p.stage] {
		return
	}
	p.stage = stage
	now := time.Now()
	if stage == StageSigterm {
		p.sigtermAt = now
	} else {
		p.sigkillAt = now
	}
	if p.phase == PhaseReleased {
		return
	}
	// Safe: the leader is not reaped (phase < released), so its pid — the
	// group id — cannot have been handed to anyone else.
	live := p.phase == PhaseLive
	if p.spec.onSignal != nil {
		if live {
			p.spec.onSignal(p.pid, sig)
		}
		p.spec.onSignal(-p.pid, sig)
	}
	p.g.signal(sig, live)
}

// supervise waits for the leader to exit without reaping it, terminates the
// rest of the group while the unreaped leader still pins the group id, and
// only then reaps the leader and releases the id.
func (p *Process) supervise() {
	status := p.g.wait()
	p.mu.Lock()
	p.phase = PhaseCleaning
	if status != errStatusAtRelease {
		p.exitErr = status
	}
	if p.firstT.IsZero() {
		p.firstT = time.Now()
	}
	p.mu.Unlock()
	close(p.exited)

	out := p.cleanGroup()

	p.mu.Lock()
	p.phase = PhaseReleased // from here on the id is never signalled
	out.Elapsed = time.Since(p.firstT)
	p.outcome = out
	p.mu.Unlock()
	final := p.g.release(p.spec.KillBound)
	if status == errStatusAtRelease {
		p.mu.Lock()
		p.exitErr = final
		p.mu.Unlock()
	}
	close(p.done)
}

// cleanGroup terminates what is left of the group after the leader exited.
func (p *Process) cleanGroup() Outcome {
	has := p.g.members
	if p.spec.groupHasMembers != nil {
		has = func() bool { return p.spec.groupHasMembers(p.pid, p.pid) }
	}
	stageNow := func() (string, time.Time, time.Time) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.stage, p.sigtermAt, p.sigkillAt
	}
	done := func() Outcome {
		st, _, _ := stageNow()
		if st == "" {
			st = StageExited
		}
		return Outcome{Complete: true, Pgid: p.pid, Stage: st}
	}
	if !has() {
		return done()
	}
	st, termAt, _ := stageNow()
	if stageRank[st] < stageRank[StageSigterm] {
		p.escalate(StageSigterm)
		_, termAt, _ = stageNow()
	}
	if st, _, _ = stageNow(); stageRank[st] < stageRank[StageSigkill] {
		if waitGone(has, p.spec.KillGrace-time.Since(termAt)) {
			return done()
		}
		p.escalate(StageSigkill)
	}
	_, _, killAt := stageNow()
	if waitGone(has, p.spec.KillBound-time.Since(killAt)) {
		return done()
	}
	return Outcome{Complete: false, Reason: ReasonGroupSurvived, Pgid: p.pid, Stage: StageSigkill}
}

// waitGone polls has until it reports false or d elapses; it always polls
// at least once after the deadline.
func waitGone(has func() bool, d time.Duration) bool {
	deadline := time.Now().Add(d)
	step := time.Millisecond
	for {
		if !has() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(min(step, max(time.Until(deadline), 0)+time.Millisecond))
		step = min(step*2, 25*time.Millisecond)
	}
}

// A Scrubber hides text (the credentials a server was given) in its
// stderr.
//
// # Why Partial
//
// A line longer than the read buffer is read in pieces; a credential
// across two pieces matches in neither. The end of a piece that may
// begin one is held back and read again with the next piece.
type Scrubber interface {
	// Scrub returns line with each hidden text replaced.
	Scrub(line []byte) []byte
	// Partial is the length of the longest end of b that begins a text
	// Scrub hides but is not all of it; 0 when none.
	Partial(b []byte) int
}

func (p *Process) readStderr() {
	defer close(p.stderrDone)
	br := bufio.NewReaderSize(p.stderrR, maxStderrLine)
	var held []byte // the end of the last piece of a long line, not yet written
	for {
		line, err := br.ReadSlice('\n')
		more := err == bufio.ErrBufferFull
		if len(held) > 0 {
			line, held = append(held, line...), nil
		}
		if len(line) > 0 {
			if p.spec.Scrub != nil {
				line = p.spec.Scrub.Scrub(line)
				if more {
					k := p.spec.Scrub.Partial(line)
					held = append([]byte(nil), line[len(line)-k:]...)
					line = line[:len(line)-k]
				}
			}
			p.tail.Write(line)
			if p.spec.Stderr != nil {
				_, _ = p.spec.Stderr.Write(line)
			}
		}
		if err != nil && !more {
			return
		}
	}
}
