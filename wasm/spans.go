package wasm

import (
	"slices"
	"unsafe"
)

// minTrustedSpan: input strings shorter than this are not recorded, nor are
// shorter output_input copies trusted (validating them again costs little).
const minTrustedSpan = 64

// assemble appends the call's output to dst: the bytes output_write
// wrote when the guest only wrote, else the pieces (written and copied from
// the input) in order.
func (s *callState) assemble(dst []byte) []byte {
	if len(s.segs) == 0 {
		return append(dst, s.out...)
	}
	for _, g := range s.segs {
		if g.fromInput {
			dst = append(dst, s.input[g.off:g.off+g.n]...)
		} else {
			dst = append(dst, s.out[g.off:g.off+g.n]...)
		}
	}
	return dst
}

// trustedSpans appends to dst the output ranges [start, end) that are
// copies (output_input) of the inside of one input string that
// input_json_skip walked over, starting and ending on character boundaries
// of that string (never inside an escape or a UTF-8 sequence). When the
// input is valid JSON, such a range is a run of whole, valid string
// characters: placed anywhere inside an output string it leaves the string
// valid, so the validator need not look at it again (see
// validator.trust). Only built-in filters, with an input the caller vouches
// for (Meta.ValidInput), get this; see Filter.result. A run must also hold
// no control byte (see hasControl); the skip that recorded the string saw
// every byte of it, so a string it found clean needs no second look.
func (s *callState) trustedSpans(dst [][2]int) [][2]int {
	if len(s.strs) == 0 {
		return dst
	}
	strs := s.strs
	if !slices.IsSortedFunc(strs, func(a, b inString) int { return a.start - b.start }) {
		slices.SortFunc(strs, func(a, b inString) int { return a.start - b.start })
	}
	o := 0
	for _, g := range s.segs {
		if !g.fromInput || g.n < minTrustedSpan {
			o += g.n
			continue
		}
		if st, ok := insideString(s.input, strs, g.off, g.off+g.n); ok && (st.clean || !hasControl(s.input[g.off:g.off+g.n])) {
			dst = append(dst, [2]int{o, o + g.n})
		}
		o += g.n
	}
	return dst
}

// hasControl reports whether b holds a byte below 0x20, sixteen bytes a
// step. Inside a string of valid JSON there is none; a guest that asked
// input_json_skip to start at a quote that closes a string got the span to
// the next string's opening quote recorded as a string, and whitespace
// between values would show up here.
func hasControl(b []byte) bool {
	i := 0
	for ; i+16 <= len(b); i += 16 {
		x := *(*uint64)(unsafe.Pointer(&b[i]))
		y := *(*uint64)(unsafe.Pointer(&b[i+8]))
		if ((x-0x20*lsb)&^x|(y-0x20*lsb)&^y)&msb != 0 {
			return true
		}
	}
	for ; i < len(b); i++ {
		if b[i] < 0x20 {
			return true
		}
	}
	return false
}

// insideString returns the one of strs (sorted by start, not overlapping)
// that input[a:b] lies inside between its quotes, with a and b on character
// boundaries; ok is false if there is none.
func insideString(in []byte, strs []inString, a, b int) (st inString, ok bool) {
	k, _ := slices.BinarySearchFunc(strs, a, func(s inString, a int) int { return s.start - a })
	// strs[k-1] is the last string starting before a.
	if k == 0 {
		return inString{}, false
	}
	st = strs[k-1]
	if a <= st.start || b > st.end-1 {
		return inString{}, false
	}
	return st, charBoundary(in, st.start, a) && charBoundary(in, st.start, b)
}

// charBoundary reports whether position p of the string whose opening
// quote is at in[qs] (qs < p, p at most the closing quote's position) is
// a character boundary: not a UTF-8 continuation byte, and not inside an
// escape. The escape that could hold p starts at the nearest backslash at
// most five bytes before it; that backslash starts an escape when the run
// of backslashes ending there is odd (else it ends a "\\" pair, and p is
// past every escape). An unusually long run is not looked through: p is
// then reported as no boundary (its bytes are validated as usual).
func charBoundary(in []byte, qs, p int) bool {
	if in[p]&0xC0 == 0x80 {
		return false
	}
	for k := p - 1; k > qs && k >= p-5; k-- {
		if in[k] != '\\' {
			continue
		}
		run := 0
		for j := k; j > qs && in[j] == '\\'; j-- {
			if run++; run > 64 {
				return false
			}
		}
		if run%2 == 0 {
			return true
		}
		n := 2
		if in[k+1] == 'u' {
			n = 6
		}
		return k+n <= p
	}
	return true
}
