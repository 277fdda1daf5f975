//go:build !windows

package wasm

import "os"

// renameResult is os.Rename: an open file can be renamed on Unix.
func renameResult(from, to string) error { return os.Rename(from, to) }
