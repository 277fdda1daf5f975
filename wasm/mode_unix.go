//go:build !windows

package wasm

import "io/fs"

// looseMode reports a directory others may read or enter.
func looseMode(fi fs.FileInfo) bool { return fi.Mode().Perm()&0o077 != 0 }
