package proc

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Linux: the leader is watched and signalled through a pidfd, its exit is
// seen with waitid(WEXITED|WNOWAIT), members are counted from /proc, the
// leader carries a SIGKILL death signal, and the child changes directory
// through /proc/self/fd. See the package doc.

func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// startProcess forks on the spawn thread, because of Pdeathsig.
func startProcess(exe string, argv []string, attr *os.ProcAttr) (p *os.Process, err error) {
	onSpawnThread(func() { p, err = os.StartProcess(exe, argv, attr) })
	return p, err
}

// leaderWatch holds the leader's pidfd (-1 when the kernel has none).
type leaderWatch struct {
	mu    sync.Mutex
	pidfd int
}

func watchLeader(pid int) *leaderWatch {
	lw := &leaderWatch{pidfd: -1}
	if fd, err := unix.PidfdOpen(pid, 0); err == nil {
		lw.pidfd = fd
	}
	return lw
}

func (lw *leaderWatch) fd() int {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.pidfd
}

func (lw *leaderWatch) close() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.pidfd >= 0 {
		unix.Close(lw.pidfd)
		lw.pidfd = -1
	}
}

// signal signals the leader through its pidfd, which reaches it even if
// it moved to another group.
func (lw *leaderWatch) signal(pid int, sig syscall.Signal) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.pidfd >= 0 {
		_ = unix.PidfdSendSignal(lw.pidfd, sig, nil, 0)
	} else {
		_ = unix.Kill(pid, sig)
	}
}

// wait blocks until the leader exits and returns its status as an error
// (nil for exit 0). The leader stays a zombie.
func (lw *leaderWatch) wait(server string, pid int) error {
	var info unix.Siginfo
	if fd := lw.fd(); fd >= 0 && pollLeader(fd, &info) {
		return exitFromSiginfo(server, &info)
	}
	for {
		// P_PID, not the pidfd: pollLeader may have left the shared open
		// file description non-blocking.
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			// Cannot happen for our own unreaped child; treat as exited.
			return &ExitError{Server: server, Code: -1}
		}
		return exitFromSiginfo(server, &info)
	}
}

// pollLeader waits for the leader's exit through the runtime's poller (a
// pidfd becomes readable when its process exits), so a live server does
// not hold an OS thread blocked in waitid. It reports false when the
// poller cannot watch the pidfd; the caller then blocks instead.
func pollLeader(pidfd int, info *unix.Siginfo) bool {
	fd, err := unix.Dup(pidfd)
	if err != nil {
		return false
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return false
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var werr error
	err = rc.Read(func(fd uintptr) bool {
		*info = unix.Siginfo{}
		werr = unix.Waitid(unix.P_PIDFD, int(fd), info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
		switch {
		case werr == unix.EAGAIN, werr == unix.EINTR:
			return false // still running: wait for readability
		case werr == nil && info.Signo == 0:
			return false
		}
		return true
	})
	return err == nil && werr == nil && info.Signo != 0
}

// exitFromSiginfo decodes a SIGCHLD siginfo (from waitid) into nil for a
// clean exit or an *ExitError.
func exitFromSiginfo(server string, info *unix.Siginfo) error {
	// The siginfo union starts 16 bytes in on every 64-bit and 12 on
	// 32-bit Linux; for SIGCHLD it holds pid, uid, status as 32-bit ints.
	raw := (*[128]byte)(unsafe.Pointer(info))
	off := 16
	if unsafe.Sizeof(uintptr(0)) == 4 {
		off = 12
	}
	status := int32(binary.NativeEndian.Uint32(raw[off+8:]))
	switch info.Code {
	case 1: // CLD_EXITED
		if status == 0 {
			return nil
		}
		return &ExitError{Server: server, Code: int(status)}
	case 2, 3: // CLD_KILLED, CLD_DUMPED
		return &ExitError{Server: server, Code: -1, Signal: syscall.Signal(status)}
	}
	return &ExitError{Server: server, Code: -1}
}

// liveMembers reports whether a live process (not a reap-pending zombie)
// other than those in skip has process group id pgid. The leader is
// skipped by its callers because the supervisor keeps it an unreaped
// zombie (which kill(-pgid, 0) would still count) until the rest of the
// group is gone. Without procfs it falls back to GroupAlive, which then
// sees the zombie leader too and makes teardown wait its bounds.
func liveMembers(pgid int, skip ...int) bool {
	d, err := os.Open("/proc")
	if err != nil {
		return GroupAlive(pgid)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return GroupAlive(pgid)
	}
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || slices.Contains(skip, pid) {
			continue
		}
		if st, ok := procStat(pid); ok && st.pgrp == pgid && !st.dead() {
			return true
		}
	}
	return false
}

// procStat reads state, process group and thread count of pid from
// /proc/pid/stat.
func procStat(pid int) (procStatus, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStatus{}, false
	}
	return parseStat(b)
}

// procPgrp reads the process group of pid.
func procPgrp(pid int) (int, bool) {
	st, ok := procStat(pid)
	return st.pgrp, ok
}

// pinDir opens the checked directory dir and returns the path the child
// should change to: "/proc/self/fd/N" names exactly the directory that
// was checked, so a symlink swapped in after the check cannot redirect
// the child. (The child inherits every descriptor until exec, so N is
// valid there when it changes directory.) Without procfs it falls back to
// the checked path.
func pinDir(spec Spec, dir, realRoot string) (*os.File, string, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, "", &CwdError{Server: spec.Server, Root: spec.Root, Dir: spec.Dir, Reason: ReasonCwdNotFound, Err: errors.Join(ErrCwdInvalid, err)}
	}
	fdPath := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	opened, err := os.Readlink(fdPath)
	if err != nil {
		f.Close()
		return nil, dir, nil
	}
	if !within(realRoot, filepath.Clean(opened)) {
		f.Close()
		return nil, "", &CwdError{Server: spec.Server, Root: spec.Root, Dir: spec.Dir, Reason: ReasonCwdEscapesSymlink, Err: ErrCwdEscape}
	}
	return f, fdPath, nil
}

// spawnThread forks every child from one goroutine locked to one OS thread
// for the life of the process. Pdeathsig is delivered when the thread that
// forked the child exits, not the process; Go threads can exit (a goroutine
// that ends while locked takes its thread with it), so forking from an
// arbitrary thread could SIGKILL a healthy server at a random moment.
var spawnThread struct {
	once sync.Once
	reqs chan func()
}

func onSpawnThread(fn func()) {
	spawnThread.once.Do(func() {
		spawnThread.reqs = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: this thread lives as long as the process
			for f := range spawnThread.reqs {
				f()
			}
		}()
	})
	done := make(chan struct{})
	spawnThread.reqs <- func() { fn(); close(done) }
	<-done
}

// watchGateway is not needed on Linux: the control pipe's EOF is the
// watchdog's sign of the gateway's death (every descriptor this package
// creates is close-on-exec from birth, pipe2(O_CLOEXEC), so no other
// process holds the write end). It reports false: no second watch.
func watchGateway(pid int) bool { return false }
