package files

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// errorSharingViolation is ERROR_SHARING_VIOLATION.
const errorSharingViolation syscall.Errno = 32

// renameRetryFor bounds how long rename waits for a reader to let go.
const renameRetryFor = 2 * time.Second

// rename replaces to with from. On Windows a file that another handle
// holds open without FILE_SHARE_DELETE (every os.Open does) cannot be
// replaced: MoveFileEx fails with access denied or a sharing violation
// until that handle closes. Readers here hold a file only for the moment
// of a bounded read, so rename retries for a short, bounded time before
// it reports the error; on failure from stays in place, and the caller
// removes it.
func rename(from, to string) error {
	deadline := time.Now().Add(renameRetryFor)
	wait := time.Millisecond
	for {
		err := os.Rename(from, to)
		if err == nil || !(errors.Is(err, syscall.ERROR_ACCESS_DENIED) || errors.Is(err, errorSharingViolation)) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(wait)
		if wait < 50*time.Millisecond {
			wait *= 2
		}
	}
}
