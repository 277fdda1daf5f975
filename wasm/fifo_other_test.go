//go:build !unix

package wasm

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs on this platform") }
