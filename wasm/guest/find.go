package guest

import (
	"bytes"
	"errors"
	"math/bits"
)

// ErrFindKeys reports a keyword list input_find does not accept.
var ErrFindKeys = errors.New("guest: find: keys must be 1..64 newline-separated keywords of 2..32 bytes")

// FindRecord is one keyword occurrence reported by Find: the JSON string
// it lies in (Start: the opening quote; End: just past the closing quote),
// its position and the keyword's index in the list.
type FindRecord struct{ Start, End, Pos, Key int32 }

// FindFunc reports, into buf, the occurrences of the newline-separated
// keywords (matched ASCII-case-insensitively against the raw bytes) inside
// the JSON strings of input, tokenizing from offset (which must lie outside
// a string) and reporting positions at or after from, in order of
// position. It returns the number of records written; when that is
// len(buf), more may follow: call again with offset = the last record's
// Start and from = its Pos+1. A position's records are never split between
// calls.
type FindFunc func(input []byte, offset, from int, keys []byte, buf []FindRecord) (int, error)

// keyFinder is the native implementation (the host's input_find is the
// same algorithm).
type keyFinder struct {
	src    []byte
	keys   [][]byte
	pair   *[65536]uint8 // first two bytes (every case) -> group
	groups []uint64
}

func fold(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 0x20
	}
	return c
}

func newKeyFinder(list []byte) (*keyFinder, error) {
	f := &keyFinder{src: bytes.Clone(list), pair: new([65536]uint8), groups: []uint64{0}}
	for _, k := range bytes.Split(list, []byte{'\n'}) {
		if len(k) < 2 || len(k) > 32 || len(f.keys) == 64 {
			return nil, ErrFindKeys
		}
		fk := make([]byte, len(k))
		for i, c := range k {
			fk[i] = fold(c)
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

func hasFold(s, k []byte) bool {
	if len(s) < len(k) {
		return false
	}
	for i, c := range k {
		if fold(s[i]) != c {
			return false
		}
	}
	return true
}

// find is FindFunc natively.
func (f *keyFinder) find(in []byte, offset, from int, buf []FindRecord) (int, error) {
	n := 0
	for i := offset; i < len(in) && n < len(buf); {
		q := bytes.IndexByte(in[i:], '"')
		if q < 0 {
			break
		}
		s := i + q
		e, err := SkipString(in, s)
		if err != nil {
			return 0, err
		}
		i = e
		body := in[s+1 : e-1]
		if e-1 <= from || len(body) < 2 {
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
			var at [64]uint8
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
			if n+na > len(buf) {
				return n, nil
			}
			for _, k := range at[:na] {
				buf[n] = FindRecord{int32(s), int32(e), int32(s + 1 + j), int32(k)}
				n++
			}
		}
	}
	return n, nil
}

// nativeFind is FindFunc implemented in Go, caching the finder of the last
// keyword list.
func nativeFind() FindFunc {
	var f *keyFinder
	return func(input []byte, offset, from int, keys []byte, buf []FindRecord) (int, error) {
		if f == nil || !bytes.Equal(f.src, keys) {
			nf, err := newKeyFinder(keys)
			if err != nil {
				return 0, err
			}
			f = nf
		}
		return f.find(input, offset, from, buf)
	}
}
