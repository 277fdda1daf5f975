//go:build !unix

package wasm

import (
	"fmt"
	"os"
)

// openResult refuses a symlink (checked with Lstat: these platforms have
// no O_NOFOLLOW) and opens the file for reading; Get then checks that what
// it opened is a regular file.
func openResult(path string) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("%w: %s is a symlink", ErrHandleNotRegular, path)
	}
	return os.Open(path)
}
