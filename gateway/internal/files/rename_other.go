//go:build !windows

package files

import "os"

// rename is os.Rename: replacing an open file is fine on Unix.
func rename(from, to string) error { return os.Rename(from, to) }
