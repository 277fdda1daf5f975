package wasm

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// hostCallFilter is a filter importing WASI random_get as function 0,
// with 512 pages of memory and a table holding function 0; its
// mcpf_filter (function 2) runs code with one i32 local.
func hostCallFilter(code []byte) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	// 0: () -> (), 1: () -> i32, 2: (i32, i32) -> i32
	out = wasmSection(out, 1, []byte{3, 0x60, 0, 0, 0x60, 0, 1, tI32, 0x60, 2, tI32, tI32, 1, tI32})
	out = wasmSection(out, 2, append(wasmName(wasmName([]byte{1}, "wasi_snapshot_preview1"), "random_get"), 0, 2))
	out = wasmSection(out, 3, []byte{2, 0, 1})
	out = wasmSection(out, 4, []byte{1, 0x70, 0, 1})
	out = wasmSection(out, 5, appendU32([]byte{1, 0}, 512))
	var ex []byte
	ex = append(wasmName(append(ex, 3), "memory"), 2, 0)
	ex = append(wasmName(ex, "mcpf_abi_v1"), 0, 1)
	ex = append(wasmName(ex, "mcpf_filter"), 0, 2)
	out = wasmSection(out, 7, ex)
	out = wasmSection(out, 9, []byte{1, 0, opI32Const, 0, opEnd, 1, 0}) // table[0] = random_get
	body := append(append([]byte{1, 1, tI32}, code...), opEnd)
	sec := []byte{2, 2, 0, opEnd}
	sec = appendU32(sec, uint32(len(body)))
	return wasmSection(out, 10, append(sec, body...))
}

// TestHostCallsStopped: straight-line code (no loop, no call of its own
// functions) of 100 host calls that each fill all of the guest's 32 MiB
// (random_get: more than 100 ms each here, passing no loop header), called directly
// or through a table, is stopped at its deadline, also on one thread: it
// never reaches the unreachable after them.
func TestHostCallsStopped(t *testing.T) {
	// local0 = memory.size << 16 (bytes)
	size := cat([]byte{0x3f, 0}, i32c(16), []byte{0x74, opLocalSet, 0})
	for _, c := range []struct {
		name string
		call []byte
	}{
		{"call", []byte{opI32Const, 0, opLocalGet, 0, opCall, 0, 0x1a}},
		{"call_indirect", []byte{opI32Const, 0, opLocalGet, 0, opI32Const, 0, 0x11, 2, 0, 0x1a}},
	} {
		mod := hostCallFilter(cat(size, bytes.Repeat(c.call, 100), []byte{opUnreachable}))
		for _, procs := range []int{2, 1} {
			t.Run(fmt.Sprintf("%s/procs=%d", c.name, procs), func(t *testing.T) {
				prev := runtime.GOMAXPROCS(procs)
				defer runtime.GOMAXPROCS(prev)
				h := newTestHost(t, &Options{Timeout: 50 * time.Millisecond, TimeoutPerMiB: -1, DisableAfter: -1})
				f := mustLoad(t, h, Spec{Name: c.name, Module: mod})
				_, err := runBounded(t, f, "in")
				var te *TimeoutError
				if !errors.As(err, &te) {
					t.Fatalf("%v; want a TimeoutError", err)
				}
			})
		}
	}
}
