package wasm

import (
	"bytes"
	"math/bits"
	"unsafe"
)

// maxSkipDepth bounds the nesting skipJSON follows.
const maxSkipDepth = 10000

// skipJSON returns the index just past the JSON value that starts at b[i]
// (after optional whitespace), or -1 if there is none. It matches brackets
// and skips strings (quote search with bytes.IndexByte, escaped quotes
// recognised by counting backslashes) but does not validate scalars: it backs
// the input_json_skip import, a navigation aid; guest output is validated
// separately.
func skipJSON(b []byte, i int) int {
	if i < 0 {
		return -1
	}
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipJSONString(b, i)
	case '{', '[':
	case ',', ':', '}', ']':
		return -1
	default:
		j := i
		for j < len(b) {
			switch b[j] {
			case ' ', '\n', '\r', '\t', ',', ':', '}', ']', '{', '[', '"':
				return j
			}
			j++
		}
		return j
	}
	var stack [64]byte
	open := stack[:0]
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			e := skipJSONString(b, i)
			if e < 0 {
				return -1
			}
			i = e
			continue
		case '{', '[':
			if len(open) >= maxSkipDepth {
				return -1
			}
			open = append(open, c)
		case '}', ']':
			if len(open) == 0 || open[len(open)-1] != c-2 { // '{'+2 == '}', '['+2 == ']'
				return -1
			}
			open = open[:len(open)-1]
			if len(open) == 0 {
				return i + 1
			}
		}
		i++
	}
	return -1
}

// skipJSONString returns the index just past the string whose opening
// quote is at b[i], or -1. Sixteen bytes a step: every quote of a word is
// looked at from the one mask (text with many escaped quotes, such as JSON
// inside a string, has several per word), a quote is escaped when an odd
// run of backslashes precedes it, and after 128 bytes without a quote the
// rest is searched with memchr (long runs: base64). Prose has an escaped
// quote every line or so: a memchr call for each (the first version went
// to memchr after 64 bytes) cost more than the words it saved, about a
// third of the skip.
func skipJSONString(b []byte, i int) int {
	start := i
	i++
	for {
		n := 0
		for ; n < 16 && i+16 <= len(b); n += 2 {
			x := *(*uint64)(unsafe.Pointer(&b[i]))
			y := *(*uint64)(unsafe.Pointer(&b[i+8]))
			qx, qy := x^(0x22*lsb), y^(0x22*lsb)
			mx := (qx - lsb) &^ qx & msb
			my := (qy - lsb) &^ qy & msb
			if mx|my != 0 {
				for m := mx; m != 0; m &= m - 1 {
					p := i + bits.TrailingZeros64(m)>>3
					if b[p] == '"' && !escapedQuote(b, start, p) { // (bits above the lowest may be false hits)
						return p + 1
					}
				}
				for m := my; m != 0; m &= m - 1 {
					p := i + 8 + bits.TrailingZeros64(m)>>3
					if b[p] == '"' && !escapedQuote(b, start, p) {
						return p + 1
					}
				}
				n = 0
			}
			i += 16
		}
		if i+16 > len(b) { // fewer than sixteen bytes left
			for ; i < len(b); i++ {
				if b[i] == '"' && !escapedQuote(b, start, i) {
					return i + 1
				}
			}
			return -1
		}
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		i += j &^ 15 // on from the block that holds it
	}
}

// escapedQuote reports whether the quote at b[p] is escaped: preceded by an
// odd run of backslashes after the string's opening quote at b[start].
func escapedQuote(b []byte, start, p int) bool {
	k := p - 1
	for k > start && b[k] == '\\' {
		k--
	}
	return (p-1-k)%2 == 1
}
