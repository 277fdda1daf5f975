package wasm

import "sync/atomic"

// outBuf is a buffer a call's output is assembled in (Output.Data), lent
// to the caller until Output.Release gives it back to its Host's free list.
//
// gen counts the buffer's lendings: an Output remembers the generation it
// was lent under, and only the Release that moves gen on from that
// generation returns the buffer. A second Release of the same Output, or
// the Release of a copy of an Output already released (whose buffer may be
// lent to another call by then), is a no-op.
type outBuf struct {
	b    []byte
	gen  atomic.Uint64
	home chan *outBuf // the Host's free list
}

// Bounds of the free list of output buffers: what a Host keeps for later
// calls is at most maxFreeOutBufs buffers of at most maxPooledOutBytes
// each (the built-in shape's output is its budget, 16 KiB by default).
// Larger outputs are allocated for their call and left to the garbage
// collector after Release.
const (
	maxFreeOutBufs    = 8
	maxPooledOutBytes = 256 << 10
)

// maxScratchBytes: an instance keeps its output_write buffer across calls
// up to this size; a larger one (a rare big output) is dropped after the
// call, so a pooled instance never pins megabytes of host memory.
const maxScratchBytes = 256 << 10

// lendOut returns a buffer with room for n bytes (length 0), from the free
// list when one there is large enough.
func (h *Host) lendOut(n int) *outBuf {
	var ob *outBuf
	select {
	case ob = <-h.freeOut:
	default:
		ob = &outBuf{home: h.freeOut}
	}
	if cap(ob.b) < n || ob.b == nil {
		ob.b = make([]byte, 0, n) // never nil: an empty output is empty, not absent
	}
	ob.b = ob.b[:0]
	return ob
}

// Release gives the buffer of o.Data back to the filter host, for the
// output of a later call. After Release, Data and every slice taken from
// it must not be used: another call overwrites those bytes. Release sets
// o.Data to nil; calling it again, or on a copy of o made before or after,
// does nothing (the buffer is returned once per call). Only an output the
// filter made (StatusReplaced) holds a buffer; for the others Release only
// clears o.Data (for StatusPass, Data is the caller's own input and is left
// alone). Not calling Release is always safe: the buffer is then garbage
// like any slice.
//
// In -race builds (every test run of the project) the released bytes are
// overwritten with 0xFF, which is never valid JSON or UTF-8, so a use after
// Release shows up as corrupt output in tests, and the race detector
// reports a released buffer read while another call writes it.
func (o *Output) Release() {
	ob, gen := o.buf, o.gen
	o.Data, o.buf = nil, nil
	if ob == nil || !ob.gen.CompareAndSwap(gen, gen+1) {
		return
	}
	if poisonReleased {
		b := ob.b[:cap(ob.b)]
		for i := range b {
			b[i] = 0xFF
		}
	}
	if cap(ob.b) > maxPooledOutBytes {
		return
	}
	select {
	case ob.home <- ob:
	default:
	}
}

// takeBack returns a buffer that was never lent (its call failed) to the
// free list.
func (h *Host) takeBack(ob *outBuf) {
	if cap(ob.b) > maxPooledOutBytes {
		return
	}
	select {
	case h.freeOut <- ob:
	default:
	}
}
