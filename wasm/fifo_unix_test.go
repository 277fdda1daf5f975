//go:build unix && !solaris && !aix

package wasm

import "syscall"

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }
