package wasm

import "math/bits"

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
// quote is at b[i], or -1.
func skipJSONString(b []byte, i int) int {
	e, _ := scanJSONString(b, i)
	return e
}

// scanJSONString is skipJSONString that also reports whether the bytes
// between the quotes hold no control byte (below 0x20; none does in a
// string of valid JSON).
//
// Sixteen bytes an instruction (masks64): each 64-byte block gives the
// masks of its quotes, backslashes and control bytes at once, and the
// escaped characters are found from the backslash mask without a branch
// per escape (escapedBits), so text dense with escaped quotes (JSON inside
// a string) costs what prose costs. The first versions looked at every
// quote from a word-at-a-time mask and counted the backslashes before it:
// about a third slower on prose, three times slower on escaped JSON.
func scanJSONString(b []byte, i int) (end int, clean bool) {
	var esc, ctl uint64 // esc: the next block's first byte is escaped
	j := i + 1
	for ; j+64 <= len(b); j += 64 {
		q, bs, c := masks64(&b[j])
		if bs|esc != 0 {
			q &^= escapedBits(bs, &esc)
		}
		if q != 0 {
			k := bits.TrailingZeros64(q)
			ctl |= c & (1<<k - 1)
			return j + k + 1, ctl == 0
		}
		ctl |= c
	}
	if j >= len(b) {
		return -1, false
	}
	// Fewer than 64 bytes left: the same on a copy padded with zeros
	// (masked off).
	var tail [64]byte
	n := copy(tail[:], b[j:])
	q, bs, c := masks64(&tail[0])
	live := uint64(1)<<n - 1
	q, bs, c = q&live, bs&live, c&live
	if bs|esc != 0 {
		q &^= escapedBits(bs, &esc)
	}
	if q == 0 {
		return -1, false
	}
	k := bits.TrailingZeros64(q)
	ctl |= c & (1<<k - 1)
	return j + k + 1, ctl == 0
}

// escapedBits returns the mask of the escaped characters of a 64-byte
// block whose backslashes are bs: the character after each backslash that
// starts an escape (the first of a run, the third, ...). *carry is 1 when
// the block's first character is escaped by the previous block's last
// backslash, and is set for the next block. It is the odd-run trick of
// the simdjson parser: adding each run's start to the run carries past
// its end, which tells runs starting on even positions from odd ones.
func escapedBits(bs uint64, carry *uint64) uint64 {
	const even = 0x5555555555555555
	bs &^= *carry // an escaped backslash starts no escape
	follows := bs<<1 | *carry
	oddStarts := bs &^ even &^ follows
	evenSeqs, c := bits.Add64(oddStarts, bs, 0)
	*carry = c
	return (even ^ evenSeqs<<1) & follows
}
