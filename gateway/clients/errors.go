package clients

import (
	"errors"
	"fmt"
)

// Sentinels for branch points.
var (
	// ErrUnknownClient: no client of that name.
	ErrUnknownClient = errors.New("clients: unknown client")
	// ErrChanged: the file changed since sluice last wrote it.
	ErrChanged = errors.New("clients: file changed since sluice wrote it")
	// ErrNotInstalled: uninstall found no install record for the file.
	ErrNotInstalled = errors.New("clients: sluice is not installed there")
)

// FileError says why a client's file cannot be read or written: what,
// where, and how to fix it.
type FileError struct {
	Path    string
	Line    int // 1-based; 0 = not about a position
	Message string
	Fix     string
	Err     error
}

func (e *FileError) Error() string {
	s := e.Path
	if e.Line > 0 {
		s += fmt.Sprintf(":%d", e.Line)
	}
	s += ": " + e.Message
	if e.Fix != "" {
		s += "; " + e.Fix
	}
	return s
}

func (e *FileError) Unwrap() error { return e.Err }
