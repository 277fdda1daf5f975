package proc

import (
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// macOS: no pidfd, no waitid(WNOWAIT) in golang.org/x/sys, no death
// signal, no procfs. The leader's exit is noticed through a kqueue
// EVFILT_PROC/NOTE_EXIT filter registered right after spawn, which
// reports the exit (and, with NOTE_EXITSTATUS, the wait status) without
// reaping; members are counted with sysctl kern.proc.pgrp; the watchdog
// also watches the gateway's pid through kqueue (watchdog_darwin.go). See
// the package doc for why the group id stays pinned.

func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// startProcess forks from whatever thread the caller runs on: without a
// death signal the forking thread's life does not matter.
func startProcess(exe string, argv []string, attr *os.ProcAttr) (*os.Process, error) {
	return os.StartProcess(exe, argv, attr)
}

// szomb is p_stat of a zombie in struct extern_proc (sys/proc.h).
const szomb = 5

// leaderWatch is a kqueue with one EVFILT_PROC/NOTE_EXIT filter on the
// leader. early is set when the filter could not be registered because
// the leader had already exited (the kernel refuses a filter on an exiting
// process); its status is then learnt when it is reaped.
type leaderWatch struct {
	mu    sync.Mutex
	kq    int
	early bool
}

func watchLeader(pid int) *leaderWatch {
	lw := &leaderWatch{kq: -1}
	kq, err := unix.Kqueue()
	if err != nil {
		return lw
	}
	unix.CloseOnExec(kq)
	ev := procExitEvent(pid)
	if _, err := unix.Kevent(kq, []unix.Kevent_t{ev}, nil, nil); err != nil {
		unix.Close(kq)
		lw.early = err == unix.ESRCH
		return lw
	}
	lw.kq = kq
	return lw
}

// procExitEvent is the filter for pid's exit, with its wait status.
func procExitEvent(pid int) unix.Kevent_t {
	return unix.Kevent_t{
		Ident:  uint64(pid),
		Filter: unix.EVFILT_PROC,
		Flags:  unix.EV_ADD | unix.EV_ENABLE | unix.EV_ONESHOT,
		Fflags: unix.NOTE_EXIT | unix.NOTE_EXITSTATUS,
	}
}

func (lw *leaderWatch) close() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.kq >= 0 {
		unix.Close(lw.kq)
		lw.kq = -1
	}
}

// signal uses kill(2): the leader is unreaped, so pid is still its own.
func (lw *leaderWatch) signal(pid int, sig syscall.Signal) { _ = unix.Kill(pid, sig) }

// wait blocks until the kqueue reports the leader's exit, through the
// runtime's poller when it can watch the kqueue (a kqueue descriptor is
// readable while an event is pending), so a live server does not hold an
// OS thread blocked in kevent. The leader stays a zombie.
func (lw *leaderWatch) wait(server string, pid int) error {
	lw.mu.Lock()
	kq, early := lw.kq, lw.early
	lw.kq = -1 // this call owns it now
	lw.mu.Unlock()
	if kq < 0 {
		if early {
			return errStatusAtRelease
		}
		// No kqueue: poll the leader's state until it is a zombie, which
		// is still no reap.
		pollZombie(pid)
		return errStatusAtRelease
	}
	var ev [1]unix.Kevent_t
	f := os.NewFile(uintptr(kq), "kqueue")
	defer f.Close()
	if unix.SetNonblock(kq, true) == nil {
		if rc, err := f.SyscallConn(); err == nil {
			var n int
			var kerr error
			zero := unix.Timespec{}
			err = rc.Read(func(fd uintptr) bool {
				n, kerr = unix.Kevent(int(fd), nil, ev[:], &zero)
				return kerr != unix.EINTR && (kerr != nil || n > 0)
			})
			if err == nil && kerr == nil && n == 1 {
				return exitFromKevent(server, ev[0])
			}
		}
	}
	for {
		n, err := unix.Kevent(kq, nil, ev[:], nil)
		if err == unix.EINTR || (err == nil && n == 0) {
			continue
		}
		if err != nil {
			return errStatusAtRelease
		}
		return exitFromKevent(server, ev[0])
	}
}

// pollZombie returns once pid is a zombie (or gone from the process
// table, which for our unreaped child means the same), by sysctl
// kern.proc.pid. Only used when no kqueue could be created.
func pollZombie(pid int) {
	step := time.Millisecond
	for {
		kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
		if err != nil || kp.Proc.P_pid != int32(pid) || kp.Proc.P_stat == szomb {
			return
		}
		time.Sleep(step)
		step = min(step*2, 100*time.Millisecond)
	}
}

// exitFromKevent decodes the NOTE_EXIT event: with NOTE_EXITSTATUS its
// data holds the wait status.
func exitFromKevent(server string, ev unix.Kevent_t) error {
	if ev.Fflags&unix.NOTE_EXITSTATUS == 0 {
		return errStatusAtRelease
	}
	return exitFromWaitStatus(server, syscall.WaitStatus(uint32(ev.Data)))
}

// liveMembers reports whether a live process (not a zombie) other than
// those in skip has process group id pgid, from sysctl kern.proc.pgrp.
// If sysctl fails it falls back to GroupAlive, which then sees the zombie
// leader too and makes teardown wait its bounds.
func liveMembers(pgid int, skip ...int) bool {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.pgrp", pgid)
	if err != nil {
		return GroupAlive(pgid)
	}
	for i := range procs {
		kp := &procs[i]
		if memberCounts(pgid, skip, int(kp.Proc.P_pid), int(kp.Eproc.Pgid), kp.Proc.P_stat == szomb) {
			return true
		}
	}
	return false
}

// pinDir has no descriptor-relative chdir to offer on macOS (no procfs;
// /dev/fd names are not usable as a working directory by path): the child
// changes to the path that was just checked. The window between that
// check and the child's chdir is the residual race named in the package
// doc.
func pinDir(spec Spec, dir, realRoot string) (*os.File, string, error) { return nil, dir, nil }

// watchGateway blocks until the gateway (the watchdog's parent, pid)
// exits and reports true, by a kqueue NOTE_EXIT filter on its pid. If the
// gateway is already gone (the watchdog was reparented, pid is 1, or the
// filter is refused with ESRCH) it reports true at once. It reports false
// if it cannot watch at all; the control pipe still can.
func watchGateway(pid int) bool {
	if pid <= 1 {
		return true
	}
	kq, err := unix.Kqueue()
	if err != nil {
		return false
	}
	defer unix.Close(kq)
	ev := unix.Kevent_t{Ident: uint64(pid), Filter: unix.EVFILT_PROC, Flags: unix.EV_ADD | unix.EV_ENABLE | unix.EV_ONESHOT, Fflags: unix.NOTE_EXIT}
	if _, err := unix.Kevent(kq, []unix.Kevent_t{ev}, nil, nil); err != nil {
		return err == unix.ESRCH
	}
	// Registered on the pid read as our parent; if the parent died in
	// between and its pid went to someone else, the filter watches a
	// stranger — the pipe's EOF still reports the death.
	if unix.Getppid() != pid {
		return true
	}
	var out [1]unix.Kevent_t
	for {
		n, err := unix.Kevent(kq, nil, out[:], nil)
		if err == unix.EINTR || (err == nil && n == 0) {
			continue
		}
		return err == nil
	}
}
