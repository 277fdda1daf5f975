//go:build linux || darwin

package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The watchdog is a second copy of the running executable that joins the
// server's process group and holds the read end of a pipe whose only write
// end lives in the gateway. If the gateway dies without standing it down
// (SIGKILL, crash, OOM kill), the pipe reports EOF and the watchdog
// terminates the whole group — grandchildren included, which Pdeathsig
// cannot reach. Being a member, it pins the group id, so the id it signals
// is still the server's group. See the package documentation.

// watchdogEnv marks a process as a watchdog; the value is the group id.
// The deny-list keeps declarations from setting it.
const watchdogEnv = "SLUICE_PROC_WATCHDOG"

// standDown is written by the gateway before closing the control pipe
// when it tears the group down itself.
const standDown = 'x'

// ready is written by the watchdog once its signal dispositions are set.
const ready = 'r'

// watchdogReadyBound bounds the wait for a new watchdog's ready byte.
const watchdogReadyBound = 10 * time.Second

// watchdogGrace is how long orphaned members get between SIGTERM and
// SIGKILL once the gateway is gone.
const watchdogGrace = 500 * time.Millisecond

func init() {
	if v, ok := os.LookupEnv(watchdogEnv); ok {
		runWatchdog(v) // never returns
	}
}

func runWatchdog(v string) {
	// SIGTERM is ignored from the start: the gateway's own teardown sends
	// it to the group, and a gateway killed during that grace period must
	// still find its watchdog on guard. (The gateway never waits for the
	// watchdog to leave; it stands it down or SIGKILLs the group.)
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGPIPE, syscall.SIGTERM)
	pgid, err := strconv.Atoi(v)
	if err != nil || pgid <= 1 || unix.Getpgrp() != pgid {
		unix.Exit(2)
	}
	gatewayPid := unix.Getppid() // the gateway started us; 1 if it is already gone
	// Ready: from here on a SIGTERM to the group cannot end us. The
	// gateway waits for this byte before it lets Start return.
	if _, err := os.Stdout.Write([]byte{ready}); err != nil {
		unix.Exit(2)
	}
	os.Stdout.Close()
	// Two independent signs of the gateway's death: EOF on the control
	// pipe (both systems), and on macOS a kqueue NOTE_EXIT on the
	// gateway's pid (watchGateway), which does not depend on who else
	// might hold a copy of the pipe's write end.
	standingDown := make(chan bool, 2)
	go func() {
		var b [1]byte
		n, _ := io.ReadFull(os.Stdin, b[:])
		standingDown <- n == 1 && b[0] == standDown // EOF or any failure: the gateway is gone
	}()
	go func() {
		if watchGateway(gatewayPid) {
			standingDown <- false
		}
	}()
	if <-standingDown {
		unix.Exit(0)
	}
	// We are a member of pgid, so the id is still this group's: no other
	// group can have it while we live.
	self := os.Getpid()
	_ = unix.Kill(-pgid, unix.SIGTERM)
	waitGone(func() bool { return liveMembers(pgid, self) }, watchdogGrace)
	_ = unix.Kill(-pgid, unix.SIGKILL) // ends us too
	unix.Exit(0)
}

// watchdog is the gateway's handle on one watchdog process.
type watchdog struct {
	proc *os.Process
	ctl  *os.File // write end of the control pipe
}

// startWatchdog starts a watchdog in group pgid (whose leader is unreaped,
// so the group exists) and returns once the watchdog reports that it is
// ready — before that, a SIGTERM to the group would still end it.
func startWatchdog(pgid int) (*watchdog, error) {
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer ctlR.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		ctlW.Close()
		return nil, err
	}
	defer readyR.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		ctlW.Close()
		readyW.Close()
		return nil, err
	}
	defer devnull.Close()
	exe := "/proc/self/exe"
	if _, err := os.Stat(exe); err != nil {
		if exe, err = os.Executable(); err != nil {
			ctlW.Close()
			readyW.Close()
			return nil, err
		}
	}
	env := []string{watchdogEnv + "=" + strconv.Itoa(pgid)}
	if v, ok := os.LookupEnv("GORACE"); ok {
		env = append(env, "GORACE="+v)
	}
	p, err := os.StartProcess(exe, []string{"sluice-proc-watchdog"}, &os.ProcAttr{
		Dir:   "/",
		Env:   env,
		Files: []*os.File{ctlR, readyW, devnull},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pgid: pgid},
	})
	readyW.Close()
	if err != nil {
		ctlW.Close()
		return nil, err
	}
	var b [1]byte
	_ = readyR.SetReadDeadline(time.Now().Add(watchdogReadyBound))
	if _, err := io.ReadFull(readyR, b[:]); err != nil || b[0] != ready {
		ctlW.Close()
		_ = p.Kill() // unreaped: the pid is still the watchdog's
		_, _ = p.Wait()
		if err == nil {
			err = errors.New("unexpected handshake byte")
		}
		return nil, fmt.Errorf("watchdog not ready: %w", err)
	}
	return &watchdog{proc: p, ctl: ctlW}, nil
}

// release stands the watchdog down and reaps it. If it is already dead
// (the group was signalled) the write fails and it is just reaped.
func (wd *watchdog) release(bound time.Duration) {
	if wd == nil {
		return
	}
	_, _ = wd.ctl.Write([]byte{standDown})
	wd.ctl.Close()
	done := make(chan struct{})
	go func() { _, _ = wd.proc.Wait(); close(done) }()
	if !wait(done, bound) {
		// Unreaped, so the pid is still this watchdog's.
		_ = wd.proc.Kill()
		<-done
	}
}

func (wd *watchdog) pid() int {
	if wd == nil {
		return 0
	}
	return wd.proc.Pid
}

var errNoWatchdog = errors.New("watchdog could not be started")
