//go:build unix

package front

import (
	"fmt"
	"os"
	"syscall"
)

// pollableStdin returns standard input as a file the Go runtime's poller
// waits on, when it is a pipe or a socket in blocking mode (what an agent
// that launched serve hands it): see "Why stdin is read through the
// poller" in doc.go. restore puts the descriptor back in blocking mode,
// so whoever reads it next finds it as it was. A terminal or a regular
// file is left alone (ok false), and so is stdin already non-blocking
// (os.Stdin is then polled already).
func pollableStdin() (in *os.File, restore func(), ok bool, err error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(0, &st); err != nil {
		return nil, nil, false, fmt.Errorf("front: reading what stdin is: %w", err)
	}
	if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFIFO && kind != syscall.S_IFSOCK {
		return nil, nil, false, nil
	}
	fl, _, e := syscall.Syscall(syscall.SYS_FCNTL, 0, syscall.F_GETFL, 0)
	if e != 0 {
		return nil, nil, false, fmt.Errorf("front: reading stdin's flags: %w", e)
	}
	if fl&syscall.O_NONBLOCK != 0 {
		// The flag belongs to the open file description, which whoever
		// handed stdin over shares: leave it as it is.
		return nil, nil, false, nil
	}
	fd, err := syscall.Dup(0)
	if err != nil {
		return nil, nil, false, fmt.Errorf("front: duplicating stdin: %w", err)
	}
	syscall.CloseOnExec(fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, nil, false, fmt.Errorf("front: making stdin non-blocking: %w", err)
	}
	in = os.NewFile(uintptr(fd), "stdin (protocol)") // non-blocking: the poller waits on it
	return in, func() {
		_ = in.Close()
		_ = syscall.SetNonblock(0, false)
	}, true, nil
}
