package files

import (
	"errors"
	"os"
	"syscall"
)

// Lock takes an exclusive lock on the lock file at path (created 0600
// when missing), waiting until no other process — or other open of the
// file in this one — holds it, and returns the function that releases
// it. The lock goes with the open file: it is released when the process
// dies, so a crash never leaves it held. The file's content is never
// used; it stays in place for the next lock.
func Lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = lockFile(f)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		closeUnlocked(f)
		return nil, err
	}
	return func() { releaseFile(f) }, nil
}
