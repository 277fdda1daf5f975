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

func skipJSONString(b []byte, i int) int {
	start := i
	i++
	for {
		// Quotes in text are often close together: a SWAR scan (8 bytes a
		// step, first quote by trailing-zero count) beats a memchr call per
		// quote; far quotes fall back to memchr after 64 bytes.
		found := false
		for n := 0; n < 8 && i+8 <= len(b); n++ {
			x := *(*uint64)(unsafe.Pointer(&b[i]))
			q := x ^ (0x22 * lsb)
			if m := (q - lsb) &^ q & msb; m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				found = true
				break
			}
			i += 8
		}
		if !found {
			if i >= len(b) {
				return -1
			}
			j := bytes.IndexByte(b[i:], '"')
			if j < 0 {
				return -1
			}
			i += j
		}
		k := i - 1
		for k > start && b[k] == '\\' {
			k--
		}
		if (i-1-k)%2 == 0 {
			return i + 1
		}
		i++
	}
}
