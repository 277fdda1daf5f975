//go:build unix

package wasm

import (
	"errors"
	"os"
	"syscall"
)

// openResult opens a stored result for reading without following a
// symlink (O_NOFOLLOW: a link planted in the store directory fails with
// ELOOP instead of exposing its target) and without blocking on a FIFO
// (O_NONBLOCK; Get checks the file is regular before reading).
func openResult(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, ErrHandleNotRegular
	}
	return f, err
}
