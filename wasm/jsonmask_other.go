//go:build !amd64

package wasm

import "unsafe"

// masks64 returns, for the 64 bytes at p, the masks of its quotes,
// backslashes and control bytes (below 0x20): bit k for byte p[k].
func masks64(p *byte) (quote, backslash, control uint64) {
	return masks64Go((*[64]byte)(unsafe.Pointer(p)))
}
