package wasm

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// importFilter is a filter importing one function, name, of type
// (i32 × nparams) -> i32 as function 0 (from mcpf when it is one of its
// functions, else from WASI), with pages of memory; its mcpf_filter
// (function 2) runs code with one i32 local, set to the memory's size in
// bytes first, and returns what code leaves on the stack.
func importFilter(name string, nparams int, pages uint32, code []byte) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	ty := []byte{3, 0x60, 0, 0, 0x60, 0, 1, tI32, 0x60, byte(nparams)}
	for range nparams {
		ty = append(ty, tI32)
	}
	out = wasmSection(out, 1, append(ty, 1, tI32))
	mod := "wasi_snapshot_preview1"
	if _, ok := mcpfSignatures[name]; ok {
		mod = "mcpf"
	}
	out = wasmSection(out, 2, append(wasmName(wasmName([]byte{1}, mod), name), 0, 2))
	out = wasmSection(out, 3, []byte{2, 0, 1})
	out = wasmSection(out, 5, appendU32([]byte{1, 0}, pages))
	var ex []byte
	ex = append(wasmName(append(ex, 3), "memory"), 2, 0)
	ex = append(wasmName(ex, "mcpf_abi_v1"), 0, 1)
	ex = append(wasmName(ex, "mcpf_filter"), 0, 2)
	out = wasmSection(out, 7, ex)
	size := cat([]byte{0x3f, 0}, i32c(16), []byte{0x74, opLocalSet, 0}) // local0 = memory.size << 16
	body := append(append([]byte{1, 1, tI32}, cat(size, code)...), opEnd)
	sec := []byte{2, 2, 0, opEnd}
	sec = appendU32(sec, uint32(len(body)))
	return wasmSection(out, 10, append(sec, body...))
}

const (
	opI32Ne   = 0x47
	opI32DivU = 0x6e
	opI32ShrU = 0x76
)

var (
	memBytes = []byte{opLocalGet, 0}
	// expectResult traps unless the call before it returned want, then
	// returns 0 (the filter's success).
	expectResult = func(want int32) []byte {
		return cat(i32c(want), []byte{opI32Ne, opIf, blockEmpty, opUnreachable, opEnd}, i32c(0))
	}
)

// TestRandomGetStopsAtDeadline: WASI random_get asked to fill all of a
// 32 MiB memory, eight times, with a 1 ms deadline ends with the deadline,
// having produced less than one memory's worth: the host function checks
// the deadline as it fills (before, one call filled all of it, tens of
// milliseconds, several seconds at a 4 GiB memory cap, past any deadline).
func TestRandomGetStopsAtDeadline(t *testing.T) {
	const pages = 512
	call := cat(i32c(0), memBytes, []byte{opCall, 0, opDrop})
	mod := importFilter("random_get", 2, pages, cat(call, call, call, call, call, call, call, call, i32c(0)))
	h := newTestHost(t, &Options{Timeout: time.Millisecond, TimeoutPerMiB: -1, DisableAfter: -1})
	f := mustLoad(t, h, Spec{Name: "random", Module: mod})
	before := h.randomBytes.Load()
	_, err := runBounded(t, f, "in")
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("%v; want a TimeoutError", err)
	}
	if n := h.randomBytes.Load() - before; n >= pages<<16 {
		t.Fatalf("random_get produced %d bytes after a 1 ms deadline; want less than the %d of one call", n, pages<<16)
	}
}

// TestRandomGetFills: random_get within the deadline fills the buffer
// (a guest that needs random bytes gets them all).
func TestRandomGetFills(t *testing.T) {
	// random_get(0, 200000) == 0, then the first word is not zero
	code := cat(i32c(0), i32c(200000), []byte{opCall, 0}, expectResult(0)[:len(expectResult(0))-2],
		i32c(0), []byte{0x28, 2, 0, opI32Eqz, opIf, blockEmpty, opUnreachable, opEnd}, i32c(0))
	h := newTestHost(t, &Options{DisableAfter: -1})
	f := mustLoad(t, h, Spec{Name: "random", Module: importFilter("random_get", 2, 8, code)})
	before := h.randomBytes.Load()
	if _, err := runBounded(t, f, "in"); err != nil {
		t.Fatal(err)
	}
	if n := h.randomBytes.Load() - before; n != 200000 {
		t.Fatalf("random_get produced %d bytes; want 200000", n)
	}
}

// TestFdWriteBuffersBounded: one fd_write to stdout or stderr naming
// all of a 32 MiB memory as four million (empty) buffers is refused after
// the call's write budget (each buffer counts at least stderrWriteCost),
// not walked to the end (before: tens of milliseconds, seconds at a 4 GiB
// memory cap, then success).
func TestFdWriteBuffersBounded(t *testing.T) {
	for _, fd := range []int32{1, 2} {
		// fd_write(fd, iovs 0, size/8 - 1 buffers, nwritten at size-4) != 0
		code := cat(i32c(fd), i32c(0), memBytes, i32c(3), []byte{opI32ShrU}, i32c(1), []byte{opI32Sub},
			memBytes, i32c(4), []byte{opI32Sub, opCall, 0}, i32c(0), []byte{0x46, opIf, blockEmpty, opUnreachable, opEnd}, i32c(0))
		h := newTestHost(t, &Options{DisableAfter: -1})
		f := mustLoad(t, h, Spec{Name: "write", Module: importFilter("fd_write", 4, 512, code)})
		if _, err := runBounded(t, f, "in"); err != nil {
			t.Fatalf("fd %d: %v; want fd_write refused (an errno), the filter then succeeding", fd, err)
		}
	}
}

// TestPollOneoffCapped: poll_oneoff with more than maxPollSubscriptions
// subscriptions (here all of a 32 MiB memory: 700,000) gets EINVAL at
// once; one clock subscription gets its event.
func TestPollOneoffCapped(t *testing.T) {
	for _, c := range []struct {
		name string
		n    []byte
		want int32
	}{
		{"all memory", cat(memBytes, i32c(48), []byte{opI32DivU}), errnoInval},
		{"cap", i32c(maxPollSubscriptions + 1), errnoInval},
		{"one clock", i32c(1), 0},
		{"at the cap", i32c(maxPollSubscriptions), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			// poll_oneoff(in 0, out 0, n, nevents at size-4)
			code := cat(i32c(0), i32c(0), c.n, memBytes, i32c(4), []byte{opI32Sub, opCall, 0}, expectResult(c.want))
			h := newTestHost(t, &Options{DisableAfter: -1})
			f := mustLoad(t, h, Spec{Name: "poll", Module: importFilter("poll_oneoff", 4, 512, code)})
			if _, err := runBounded(t, f, "in"); err != nil {
				t.Fatalf("%v; want poll_oneoff to return %d", err, c.want)
			}
		})
	}
}

// TestOffloadStopsAtDeadline: offload_put of all of a 32 MiB memory with
// a 1 ms deadline, into an OffloadStore, ends with the deadline and
// leaves nothing in the store (before: the store wrote all of it, past
// the deadline, and kept the result).
func TestOffloadStopsAtDeadline(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := NewOffloadStore(OffloadOptions{Dir: dir, SweepEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// offload_put(0, size-256, size-256, 256)
	code := cat(i32c(0), memBytes, i32c(256), []byte{opI32Sub}, memBytes, i32c(256), []byte{opI32Sub}, i32c(256), []byte{opCall, 0})
	h := newTestHost(t, &Options{Timeout: time.Millisecond, TimeoutPerMiB: -1, DisableAfter: -1, Offload: s.PutContext})
	f := mustLoad(t, h, Spec{Name: "offload", Module: importFilter("offload_put", 4, 512, code)})
	_, err = runBounded(t, f, "in")
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("%v; want a TimeoutError", err)
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left in the store after the deadline: %s", e.Name())
	}
}
