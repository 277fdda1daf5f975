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
// of one file in this process take turns on a mutex first, held from
// before the record lock until after the descriptor is closed; the
// record lock then keeps other processes out, as flock does elsewhere.

var (
	pathLocksMu sync.Mutex
	pathLocks   = map[fileKey]*sync.Mutex{}
	held        = map[*os.File]*sync.Mutex{} // the turn each locked open holds
)

// fileKey names the file itself, not the path it was opened by: two
// spellings of one lock file (relative and absolute, a symlink) must take
// turns too, or the first one's close would drop the process's record
// lock while the other still counts on it.
type fileKey struct {
	dev, ino uint64
	name     string // only when the file cannot be looked at
}

func keyOf(f *os.File) fileKey {
	if fi, err := f.Stat(); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			return fileKey{dev: uint64(st.Dev), ino: uint64(st.Ino)}
		}
	}
	return fileKey{name: f.Name()}
}

func pathLock(k fileKey) *sync.Mutex {
	pathLocksMu.Lock()
	defer pathLocksMu.Unlock()
	m := pathLocks[k]
	if m == nil {
		m = new(sync.Mutex)
		pathLocks[k] = m
	}
	return m
}

// lockFile takes the in-process turn for f's file, then an exclusive
// record lock on f's first byte, blocking until it is free. On an error
// other than EINTR the turn is given back by closeUnlocked.
func lockFile(f *os.File) error {
	m := pathLock(keyOf(f))
	m.Lock()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 0, Len: 1}
	err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLKW, &lk)
	if err != nil {
		m.Unlock()
		return err
	}
	pathLocksMu.Lock()
	held[f] = m
	pathLocksMu.Unlock()
	return nil
}

// releaseFile drops the record lock, closes f, and only then gives the
// turn to the next open of the file in this process.
func releaseFile(f *os.File) {
	pathLocksMu.Lock()
	m := held[f]
	delete(held, f)
	pathLocksMu.Unlock()
	lk := syscall.Flock_t{Type: syscall.F_UNLCK, Whence: 0, Start: 0, Len: 1}
	_ = syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk)
	f.Close()
	if m != nil {
		m.Unlock()
	}
}

// closeUnlocked closes f after lockFile failed (the turn is already
// given back).
func closeUnlocked(f *os.File) { f.Close() }
