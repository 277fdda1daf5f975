//go:build !linux

package rawio

import "os"

// File is f (no raw system calls on this platform).
type File struct{ f *os.File }

// New reports false: use f as it is.
func New(f *os.File) (*File, bool) { return nil, false }

// File is the file it reads and writes.
func (r *File) File() *os.File { return r.f }

// Read is f.Read.
func (r *File) Read(p []byte) (int, error) { return r.f.Read(p) }

// Write is f.Write.
func (r *File) Write(p []byte) (int, error) { return r.f.Write(p) }

// TryWrite is f.Write (never called: New reports false).
func (r *File) TryWrite(p []byte) (int, error) { return r.f.Write(p) }
