//go:build solaris || aix

package files

import (
	"os"
	"sync"
	"syscall"
)

// # Why Solaris, illumos and AIX lock with fcntl and a mutex
//
// These systems' syscall package has no flock, only POSIX record locks
// (fcntl F_SETLKW). Those belong to the process, not to the open file:
// a second open in the same process would get the lock at once, and
// closing any descriptor of the file drops the process's lock. So opens
// of one path in this process take turns on a mutex first, held from
// before the record lock until after the descriptor is closed; the
// record lock then keeps other processes out, as flock does elsewhere.

var (
	pathLocksMu sync.Mutex
	pathLocks   = map[string]*sync.Mutex{}
)

func pathLock(name string) *sync.Mutex {
	pathLocksMu.Lock()
	defer pathLocksMu.Unlock()
	m := pathLocks[name]
	if m == nil {
		m = new(sync.Mutex)
		pathLocks[name] = m
	}
	return m
}

// lockFile takes the in-process turn for f's path, then an exclusive
// record lock on f's first byte, blocking until it is free. On an error
// other than EINTR the turn is given back by closeUnlocked.
func lockFile(f *os.File) error {
	m := pathLock(f.Name())
	m.Lock()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 0, Len: 1}
	err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLKW, &lk)
	if err != nil {
		m.Unlock()
	}
	return err
}

// releaseFile drops the record lock, closes f, and only then gives the
// turn to the next open of the path in this process.
func releaseFile(f *os.File) {
	lk := syscall.Flock_t{Type: syscall.F_UNLCK, Whence: 0, Start: 0, Len: 1}
	_ = syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk)
	name := f.Name()
	f.Close()
	pathLock(name).Unlock()
}

// closeUnlocked closes f after lockFile failed (the turn is already
// given back).
func closeUnlocked(f *os.File) { f.Close() }
