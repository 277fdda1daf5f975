package wasm

import "io/fs"

// looseMode is false on Windows, where modes say nothing about who may
// read a directory (Go reports 0777 for every one). Access there is by
// ACL: the gateway makes the directory owner-only before it opens the
// store (proc.MkdirPrivate), and the files inherit that.
func looseMode(fs.FileInfo) bool { return false }
