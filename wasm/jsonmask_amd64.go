package wasm

// masks64 returns, for the 64 bytes at p, the masks of its quotes,
// backslashes and control bytes (below 0x20): bit k for byte p[k]. In
// assembly (jsonmask_amd64.s): sixteen bytes an instruction.
//
//go:noescape
func masks64(p *byte) (quote, backslash, control uint64)
