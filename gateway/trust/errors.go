package trust

import (
	"errors"
	"fmt"
)

// Sentinels for branch points.
var (
	// ErrInvalidRecord means a record handed to Upsert (or read from the
	// file) breaks the record grammar.
	ErrInvalidRecord = errors.New("trust: invalid record")
	// ErrCorrupt means the trust file exists but cannot be used: it is not
	// the expected JSON, is oversized, or holds too many records. Reads
	// treat it as empty; writes refuse to replace it.
	ErrCorrupt = errors.New("trust: trust file is unusable")
	// ErrFull means an Upsert would exceed MaxRecords.
	ErrFull = errors.New("trust: too many trust records")
)

// RecordError names the record and field that failed validation.
type RecordError struct {
	Index int // position in the file; -1 for a record passed to Upsert
	Field string
	Msg   string
}

func (e *RecordError) Error() string {
	if e.Index >= 0 {
		return fmt.Sprintf("trust: record %d: %s: %s", e.Index, e.Field, e.Msg)
	}
	return fmt.Sprintf("trust: record: %s: %s", e.Field, e.Msg)
}

func (e *RecordError) Unwrap() error { return ErrInvalidRecord }

// FileError reports an unusable trust file with the way out.
type FileError struct {
	Path string
	Msg  string
	Fix  string
	Err  error // ErrCorrupt or the underlying I/O error
}

func (e *FileError) Error() string {
	s := fmt.Sprintf("trust file %s: %s", e.Path, e.Msg)
	if e.Fix != "" {
		s += " (fix: " + e.Fix + ")"
	}
	return s
}

func (e *FileError) Unwrap() error { return e.Err }

// Diagnostic is a problem found while reading the trust file. Reads never
// fail: the state is empty and the diagnostic says why.
type Diagnostic struct {
	File    string
	Message string
	Fix     string
}

func (d Diagnostic) String() string {
	s := d.File + ": " + d.Message
	if d.Fix != "" {
		s += " (fix: " + d.Fix + ")"
	}
	return s
}
