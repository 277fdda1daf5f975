package wasm

import "testing"

// TestMasks64BothPaths runs the mask and skip tests on the SSE2 path too
// (and on AVX2 where the machine has it).
func TestMasks64BothPaths(t *testing.T) {
	saved := useAVX2
	defer func() { useAVX2 = saved }()
	for _, avx2 := range []bool{false, true} {
		if avx2 && !hasAVX2() {
			continue // this machine has no AVX2: only its SSE2 path exists
		}
		useAVX2 = avx2
		TestMasks64(t)
		TestScanJSONString(t)
	}
}
