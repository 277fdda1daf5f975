package admin

// This file is the audit log file: one JSON line per decision, appended by
// every process that decides (a serving dashboard, an elicitation, and the
// command line: sluice trust, untrust, review --accept).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// auditTailBytes is how much of the end of the audit file the Activity
// page reads for its recent decisions.
const auditTailBytes = 128 << 10

// AuditLog is the audit file at Path. Appends from any number of
// processes are serialised by Lock, so a rotation never races another
// writer and a line is never written into the middle of another.
type AuditLog struct {
	Path string
	// Lock takes an exclusive lock that other processes respect on the
	// file it is given (Path+".lock") and returns its release; the gateway
	// passes its cross-process file lock. nil: writers in this process are
	// serialised, other processes are not.
	Lock func(path string) (unlock func(), err error)
}

// Append writes d (bounded; a zero Time is now) as one line. The file is
// created 0600, a symlink or other non-regular file is refused, and a
// file that would grow past 4 MiB is first moved to Path+".1". When the
// file does not end in a newline (a writer died mid-line), the new line
// starts on a line of its own, so one torn line never takes a whole
// decision with it.
func (l AuditLog) Append(d Decision) error {
	if err := os.MkdirAll(filepath.Dir(l.Path), 0o700); err != nil {
		return fmt.Errorf("audit log %s: %w", l.Path, err)
	}
	if l.Lock != nil {
		unlock, err := l.Lock(l.Path + ".lock")
		if err != nil {
			return fmt.Errorf("audit log %s: cannot lock: %w", l.Path, err)
		}
		defer unlock()
	}
	if d.Time.IsZero() {
		d.Time = time.Now() // under the lock: the file is in time order
	}
	line, err := json.Marshal(boundDecision(d))
	if err != nil {
		return err
	}
	line = append(line, '\n')
	if fi, err := os.Lstat(l.Path); err == nil && fi.Mode().IsRegular() && fi.Size()+int64(len(line)) > maxAuditFileBytes {
		// Bounded: keep the current file as <file>.1 and start a new one.
		if err := os.Rename(l.Path, l.Path+".1"); err != nil {
			return fmt.Errorf("audit log: rotating: %w", err)
		}
	}
	f, err := openAudit(l.Path)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		last := make([]byte, 1)
		if r, err := os.Open(l.Path); err == nil {
			if _, err := r.ReadAt(last, fi.Size()-1); err == nil && last[0] != '\n' {
				line = append([]byte{'\n'}, line...)
			}
			r.Close()
		}
	}
	_, err = f.Write(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Recent returns up to n (n > 0) of the newest decisions, newest first,
// read from the last 128 KiB of the file and, when that holds fewer, of
// the rotated Path+".1"; lines that are not decisions (a torn line) are
// skipped. A missing file has none.
func (l AuditLog) Recent(n int) ([]Decision, error) {
	out, err := tail(l.Path, n)
	if err != nil || len(out) >= n {
		return out, err
	}
	older, err := tail(l.Path+".1", n-len(out))
	if err != nil {
		return out, nil
	}
	return append(out, older...), nil
}

// tail reads up to n of the newest decisions of one file.
func tail(path string, n int) ([]Decision, error) {
	// Look before opening: an open of a FIFO planted at the path would
	// block the reader (the Activity page) until something wrote to it.
	if fi, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("audit log %s is not a regular file", path)
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("audit log %s is not a regular file", path)
	}
	off := fi.Size() - auditTailBytes
	if off < 0 {
		off = 0
	}
	data, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if err != nil {
		return nil, err
	}
	if off > 0 {
		// The first line read is most likely a part of one.
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	var all []Decision
	for _, ln := range bytes.Split(data, []byte{'\n'}) {
		var d Decision
		if len(ln) > 0 && json.Unmarshal(ln, &d) == nil && d.Kind != "" && !d.Time.IsZero() {
			all = append(all, d)
		}
	}
	if n > len(all) {
		n = len(all)
	}
	out := make([]Decision, 0, n)
	for i := len(all) - 1; i >= len(all)-n; i-- {
		out = append(out, all[i])
	}
	return out, nil
}
