//go:build !unix || solaris || aix

package wasm

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs on this platform") }
