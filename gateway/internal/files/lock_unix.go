//go:build unix && !solaris && !aix

package files

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f, blocking until it is free.
func lockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }

// releaseFile drops the lock and closes f.
func releaseFile(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
}

// closeUnlocked closes f after lockFile failed.
func closeUnlocked(f *os.File) { f.Close() }
