package wasm

import (
	"bytes"
	"errors"
	"math/bits"
)

// Limits of an input_find keyword list.
const (
	maxFindKeys     = 64
	maxFindKeyBytes = 32
	minFindKeyBytes = 2
	findRecordBytes = 16
)

var errFindKeys = errors.New("wasm: input_find: keys must be 1..64 newline-separated keywords of 2..32 bytes")

// keyFinder finds ASCII-case-insensitive occurrences of up to 64 keywords.
// pair maps the first two bytes of a position (as a little-endian 16-bit
// load, every case variant entered) to a group, groups[g] to the keywords
// (bit i: keys[i]) that start with that pair: one table load per byte.
type keyFinder struct {
	src    []byte   // the list it was built from (instances cache one finder)
	keys   [][]byte // folded
	pair   [65536]uint8
	groups []uint64
}

// foldASCII maps A-Z to a-z and every other byte to itself.
var foldASCII = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if i >= 'A' && i <= 'Z' {
			t[i] = byte(i) + 0x20
		}
	}
	return t
}()

func newKeyFinder(list []byte) (*keyFinder, error) {
	f := &keyFinder{src: bytes.Clone(list), groups: []uint64{0}}
	for _, k := range bytes.Split(list, []byte{'\n'}) {
		if len(k) < minFindKeyBytes || len(k) > maxFindKeyBytes || len(f.keys) == maxFindKeys {
			return nil, errFindKeys
		}
		fk := make([]byte, len(k))
		for i, c := range k {
			fk[i] = foldASCII[c]
		}
		g := f.pair[uint16(fk[0])|uint16(fk[1])<<8]
		if g == 0 {
			g = uint8(len(f.groups))
			f.groups = append(f.groups, 0)
			for _, c0 := range caseVariants(fk[0]) {
				for _, c1 := range caseVariants(fk[1]) {
					f.pair[uint16(c0)|uint16(c1)<<8] = g
				}
			}
		}
		f.groups[g] |= 1 << len(f.keys)
		f.keys = append(f.keys, fk)
	}
	return f, nil
}

// caseVariants lists c and, for a letter, its other case.
func caseVariants(c byte) []byte {
	if c >= 'a' && c <= 'z' {
		return []byte{c, c - 0x20}
	}
	return []byte{c}
}

// hasFold reports whether s starts with the folded keyword k.
func hasFold(s, k []byte) bool {
	if len(s) < len(k) {
		return false
	}
	for i, c := range k {
		if foldASCII[s[i]] != c {
			return false
		}
	}
	return true
}

// findInStrings appends to out, as records of four little-endian int32
// (string start, string end, position, keyword index), the occurrences of
// f's keywords inside the JSON strings of in, tokenizing from offset
// (outside a string) and reporting positions at or after from. It stops
// after max records. It returns -1 when a string is unterminated.
func (f *keyFinder) findInStrings(in []byte, offset, from, max int, out []byte) ([]byte, int) {
	n := 0
	for i := offset; i < len(in) && n < max; {
		q := bytes.IndexByte(in[i:], '"')
		if q < 0 {
			break
		}
		s := i + q
		e := skipJSONString(in, s)
		if e < 0 {
			return out, -1
		}
		i = e
		body := in[s+1 : e-1]
		if e-1 <= from || len(body) < minFindKeyBytes {
			continue
		}
		j := 0
		if from > s+1 {
			j = from - (s + 1)
		}
		for ; j+1 < len(body); j++ {
			g := f.pair[uint16(body[j])|uint16(body[j+1])<<8]
			if g == 0 {
				continue
			}
			var at [maxFindKeys]uint8
			na := 0
			for m := f.groups[g]; m != 0; m &= m - 1 {
				if k := bits.TrailingZeros64(m); hasFold(body[j:], f.keys[k]) {
					at[na] = uint8(k)
					na++
				}
			}
			if na == 0 {
				continue
			}
			if n+na > max {
				// A position's records are never split between calls.
				return out, n
			}
			for _, k := range at[:na] {
				out = appendI32(out, s)
				out = appendI32(out, e)
				out = appendI32(out, s+1+j)
				out = appendI32(out, int(k))
				n++
			}
		}
	}
	return out, n
}

func appendI32(b []byte, v int) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}
