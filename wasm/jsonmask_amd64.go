package wasm

// masks64 returns, for the 64 bytes at p, the masks of its quotes,
// backslashes and control bytes (below 0x20): bit k for byte p[k]. In
// assembly (jsonmask_amd64.s), with AVX2 where the processor and the
// operating system support it, else SSE2.
//
//go:noescape
func masks64(p *byte) (quote, backslash, control uint64)

func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
func xgetbv() (eax, edx uint32)

// useAVX2 (read by masks64): AVX2 instructions are available and the
// operating system saves the YMM registers.
var useAVX2 = hasAVX2()

func hasAVX2() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const osxsave, avx = 1 << 27, 1 << 28
	if ecx1&osxsave == 0 || ecx1&avx == 0 {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&6 != 6 { // XMM and YMM state
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<5) != 0
}
