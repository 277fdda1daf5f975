//go:build unix

package files

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f, blocking until it is free.
func lockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }

func unlockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
