//go:build unix

package front

import (
	"fmt"
	"os"
	"syscall"
)

// reserveStdout keeps the process's real stdout for the protocol alone:
// it returns a duplicate of fd 1 for frames and points fd 1 at stderr, so a
// stray write to os.Stdout anywhere in the process (a library's debug
// print, a forgotten fmt.Println) lands in the log instead of corrupting
// the stream. A pipe or socket stdout is made non-blocking for the poller
// (pollableStdout). restore undoes both.
func reserveStdout() (proto *os.File, restore func(), err error) {
	fd, err := syscall.Dup(1)
	if err != nil {
		return nil, nil, fmt.Errorf("front: duplicating stdout: %w", err)
	}
	syscall.CloseOnExec(fd)
	nonblock := pollableStdout(fd)
	if err := dupTo(2, 1); err != nil {
		if nonblock {
			_ = syscall.SetNonblock(fd, false)
		}
		syscall.Close(fd)
		return nil, nil, fmt.Errorf("front: redirecting stdout to stderr: %w", err)
	}
	proto = os.NewFile(uintptr(fd), "stdout (protocol)")
	return proto, func() {
		_ = dupTo(fd, 1)
		// Closed before the mode goes back: a raw write (rawio) still
		// under way must not find the descriptor blocking. Close waits
		// for it, and later ones fail.
		_ = proto.Close()
		if nonblock {
			_ = syscall.SetNonblock(1, false)
		}
	}, nil
}

// pollableStdout puts fd, a duplicate of stdout, in non-blocking mode when
// it is a pipe or a socket in blocking mode, so the runtime's poller waits
// when the agent reads slowly instead of a write holding its thread (see
// "Why stdout is written through the poller" in doc.go); it reports whether
// it did, and the caller puts the mode back on return. A terminal or a
// file, or a stdout handed over non-blocking, is left as it is.
func pollableStdout(fd int) bool {
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil {
		return false
	}
	if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFIFO && kind != syscall.S_IFSOCK {
		return false
	}
	fl, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if e != 0 || fl&syscall.O_NONBLOCK != 0 {
		return false
	}
	return syscall.SetNonblock(fd, true) == nil
}
