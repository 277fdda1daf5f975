//go:build unix && !solaris && !aix

package gateway

import (
	"errors"
	"os"
	"syscall"
)

// loginLocks: a login file is held by a lock here.
const loginLocks = true

// holdFile takes an exclusive lock on f, kept until f is closed or the
// process ends.
func holdFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// heldElsewhere reports whether a process holds path's lock (known false
// when the file cannot be looked at: it is left alone).
func heldElsewhere(path string) (held, known bool) {
	f, err := os.Open(path)
	if err != nil {
		return false, false
	}
	defer f.Close()
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	switch {
	case err == nil:
		return false, true // closing f lets it go
	case errors.Is(err, syscall.EWOULDBLOCK):
		return true, true
	}
	return false, false
}
