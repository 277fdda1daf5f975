//go:build unix

package proc

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// signalName is the conventional name of sig ("SIGKILL").
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return sig.String()
}
