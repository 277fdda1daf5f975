// Package files holds the file-system rules that several packages must
// apply identically: replacing a file atomically, locking a file across
// processes (Lock: flock on Unix, LockFileEx on Windows), and the
// canonical form of a directory. gateway/catalog (catalogs and indexes),
// gateway/trust (the trust file and its lock), gateway/oauth (tokens and
// the refresh lock) and gateway/config (declarations and their roots) use
// them; the wasm results store keeps its own writer because wasm imports
// no package of ours.
//
// It imports only the standard library and must never import another
// package of the module.
//
// # Why a package for a few functions
//
// catalog and trust take plain values and may not import each other or
// config, yet each wrote files the same way with its own copy (one synced
// the directory, one did not). A file replaced without the directory sync
// can come back empty after a crash; the rule now exists once.
package files

import (
	"os"
	"path/filepath"
)

// WriteAtomic replaces path with data: a temp file in the same directory
// (mode perm), written, fsynced, closed, renamed over path, then the
// directory fsynced. A reader sees the old file or the new one, never a
// part. On error nothing but the old file remains.
func WriteAtomic(path string, data []byte, perm os.FileMode) error {
	_, err := WriteAtomicInfo(path, data, perm)
	return err
}

// WriteAtomicInfo is WriteAtomic that also returns the written file's
// FileInfo, taken before the rename: a file derived from path can record
// its size and modification time and later tell whether path is still
// the file it was derived from, even when another writer replaced it
// right after this one.
func WriteAtomicInfo(path string, data []byte, perm os.FileMode) (fi os.FileInfo, err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(perm); err != nil {
		return nil, err
	}
	if _, err = f.Write(data); err != nil {
		return nil, err
	}
	if err = f.Sync(); err != nil {
		return nil, err
	}
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err = f.Close(); err != nil {
		return nil, err
	}
	if err = rename(tmp, path); err != nil {
		return nil, err
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // best effort: not every platform syncs directories
		d.Close()
	}
	return fi, nil
}

// Canonical returns the absolute, symlink-free form of dir (which must
// exist).
func Canonical(dir string) (string, error) {
	a, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(a)
}
