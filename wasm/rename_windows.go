package wasm

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// errorSharingViolation is ERROR_SHARING_VIOLATION.
const errorSharingViolation syscall.Errno = 32

// renameResult moves a just-written temp file to its handle's name. On
// Windows a file another handle holds open without FILE_SHARE_DELETE
// cannot be renamed: MoveFileEx fails with access denied or a sharing
// violation until that handle closes. The destination is always a new
// name, but the source is a file that was created a moment ago, which is
// exactly what virus scanners and indexers open to look at; they hold it
// only briefly, so the rename is retried for a bounded time before Put
// reports the error (and removes the temp file). It is the same rule as
// the gateway's atomic writer; wasm imports no package of ours, so it is
// written here again.
func renameResult(from, to string) error {
	return renameRetrying(os.Rename, renameBusy, from, to, renameRetryFor, time.Now, time.Sleep)
}

// renameBusy reports an error another open handle causes.
func renameBusy(err error) bool {
	return errors.Is(err, syscall.ERROR_ACCESS_DENIED) || errors.Is(err, errorSharingViolation)
}
