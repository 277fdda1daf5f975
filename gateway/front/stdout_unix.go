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
// the stream. restore undoes it.
func reserveStdout() (proto *os.File, restore func(), err error) {
	fd, err := syscall.Dup(1)
	if err != nil {
		return nil, nil, fmt.Errorf("front: duplicating stdout: %w", err)
	}
	syscall.CloseOnExec(fd)
	if err := dupTo(2, 1); err != nil {
		syscall.Close(fd)
		return nil, nil, fmt.Errorf("front: redirecting stdout to stderr: %w", err)
	}
	proto = os.NewFile(uintptr(fd), "stdout (protocol)")
	return proto, func() {
		_ = dupTo(fd, 1)
		_ = proto.Close()
	}, nil
}
