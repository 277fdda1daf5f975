package wasm

import (
	"math/bits"
	"unicode/utf8"
	"unsafe"
)

// validateResult checks guest output in mode result-json: valid UTF-8, valid
// JSON (RFC 8259), a top-level object whose "content" (if present) is an
// array of objects each with a string "type", "isError" (if present) a boolean and
// "structuredContent" (if present) an object. It returns "" if valid, else
// the reason. It is a hand-written single pass (strings are skipped eight
// bytes at a time) because it runs on every filtered result.
//
// UTF-8 is checked inside strings, in the same pass (outside them only
// ASCII is valid JSON); on any failure the whole output is checked again
// so that invalid UTF-8 is the reason whenever it is present.
func validateResult(b []byte) string { return validateResultTrusting(b, nil) }

// validateResultTrusting is validateResult with trusted ranges of b:
// sorted, not overlapping, each a run of whole, valid JSON string
// characters (see callState.trustedSpans). A string being scanned that
// reaches the start of one goes on from its end; a range met anywhere else
// is validated like any other bytes.
func validateResultTrusting(b []byte, trust [][2]int) string {
	if reason := validateResultJSON(b, trust); reason != "" {
		if !utf8.Valid(b) {
			return "output is not valid UTF-8"
		}
		return reason
	}
	return ""
}

func validateResultJSON(b []byte, trust [][2]int) string {
	v := validator{b: b, utf8: true, trust: trust}
	i := v.ws(0)
	if i >= len(b) || b[i] != '{' {
		return "output is not a JSON object"
	}
	item := func(i int) (int, bool) {
		if b[i] != '{' {
			v.reason = "a content item is not an object"
			return 0, false
		}
		hasType := false
		end, ok := v.object(i, 2, func(key []byte, vs int) (int, bool) {
			if string(key) == `"type"` {
				if b[vs] != '"' {
					v.reason = `a content item's "type" is not a string`
					return 0, false
				}
				hasType = true
			}
			return v.value(vs, 3)
		})
		if ok && !hasType {
			v.reason = `a content item has no "type"`
			return 0, false
		}
		return end, ok
	}
	end, ok := v.object(i, 0, func(key []byte, vs int) (int, bool) {
		switch string(key) {
		case `"content"`:
			if b[vs] != '[' {
				v.reason = `"content" is not an array`
				return 0, false
			}
			return v.array(vs, 1, item)
		case `"isError"`:
			if b[vs] != 't' && b[vs] != 'f' {
				v.reason = `"isError" is not a boolean`
				return 0, false
			}
		case `"structuredContent"`:
			if b[vs] != '{' {
				v.reason = `"structuredContent" is not an object`
				return 0, false
			}
		}
		return v.value(vs, 1)
	})
	if !ok {
		if v.reason != "" {
			return v.reason
		}
		return "output is not valid JSON"
	}
	if v.ws(end) != len(b) {
		return "output has data after the JSON object"
	}
	return "" // content may be absent: a result may carry only structuredContent
}

// validJSON reports whether b is exactly one valid JSON value.
func validJSON(b []byte) bool {
	v := validator{b: b}
	end, ok := v.value(v.ws(0), 0)
	return ok && v.ws(end) == len(b)
}

type validator struct {
	b      []byte
	utf8   bool // strings must be valid UTF-8 (validateResult)
	reason string
	trust  [][2]int // see validateResultTrusting; trust[0] is the next one
}

const maxValidateDepth = 1000

func (v *validator) ws(i int) int {
	for i < len(v.b) {
		switch v.b[i] {
		case ' ', '\n', '\r', '\t':
			i++
		default:
			return i
		}
	}
	return i
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// stopMask has the high bit set in the lowest byte of x that is '"', '\\'
// or a control byte (< 0x20); bits above the lowest may be spurious.
func stopMask(x uint64) uint64 {
	q := x ^ (0x22 * lsb)
	s := x ^ (0x5c * lsb)
	return ((q-lsb)&^q | (s-lsb)&^s | (x-0x20*lsb)&^x) & msb
}

func (v *validator) str(i int) (int, bool) {
	b := v.b
	high := uint64(0) // with v.utf8, non-ASCII bytes stop the scan too
	if v.utf8 {
		high = msb
	}
	i++ // opening quote
	for {
		lim := len(b) // where the next trusted range starts
		if len(v.trust) > 0 {
			for len(v.trust) > 0 && v.trust[0][0] < i {
				v.trust = v.trust[1:] // passed by (an escape or a sequence ran over its start)
			}
			if len(v.trust) > 0 && v.trust[0][0] < lim {
				lim = v.trust[0][0]
			}
			if i == lim && lim < len(b) {
				i = v.trust[0][1]
				v.trust = v.trust[1:]
				continue
			}
		}
		for i+8 <= lim {
			x := *(*uint64)(unsafe.Pointer(&b[i]))
			if m := stopMask(x) | x&high; m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i == lim && lim < len(b) {
			continue // at a trusted range
		}
		if i >= len(b) {
			return 0, false
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= len(b) {
				return 0, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return 0, false
				}
				for _, h := range b[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return 0, false
					}
				}
				i += 6
			default:
				return 0, false
			}
		case c < 0x20:
			return 0, false
		case c >= utf8.RuneSelf && v.utf8:
			// Two- and three-byte sequences inline; the rest decoded.
			if c >= 0xC2 && c <= 0xDF && i+1 < len(b) && b[i+1]&0xC0 == 0x80 {
				i += 2
				continue
			}
			if c >= 0xE0 && c <= 0xEF && i+2 < len(b) && b[i+1]&0xC0 == 0x80 && b[i+2]&0xC0 == 0x80 &&
				(c != 0xE0 || b[i+1] >= 0xA0) && (c != 0xED || b[i+1] <= 0x9F) {
				i += 3
				continue
			}
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return 0, false
			}
			i += size
		default:
			i++
		}
	}
}

func (v *validator) num(i int) (int, bool) {
	b := v.b
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return 0, false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return 0, false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	return i, true
}

func (v *validator) lit(i int, s string) (int, bool) {
	if len(v.b)-i >= len(s) && string(v.b[i:i+len(s)]) == s {
		return i + len(s), true
	}
	return 0, false
}

func (v *validator) value(i, depth int) (int, bool) {
	if i >= len(v.b) || depth > maxValidateDepth {
		return 0, false
	}
	switch c := v.b[i]; {
	case c == '"':
		return v.str(i)
	case c == '{':
		return v.object(i, depth, nil)
	case c == '[':
		return v.array(i, depth, nil)
	case c == 't':
		return v.lit(i, "true")
	case c == 'f':
		return v.lit(i, "false")
	case c == 'n':
		return v.lit(i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return v.num(i)
	}
	return 0, false
}

// object validates the object at b[i]; member (optional) validates each
// member's value starting at vs (default: any JSON value).
func (v *validator) object(i, depth int, member func(key []byte, vs int) (int, bool)) (int, bool) {
	b := v.b
	i = v.ws(i + 1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		ke, ok := v.str(i)
		if !ok {
			return 0, false
		}
		key := b[i:ke]
		i = v.ws(ke)
		if i >= len(b) || b[i] != ':' {
			return 0, false
		}
		vs := v.ws(i + 1)
		if vs >= len(b) {
			return 0, false
		}
		var ve int
		if member != nil {
			ve, ok = member(key, vs)
		} else {
			ve, ok = v.value(vs, depth+1)
		}
		if !ok {
			return 0, false
		}
		i = v.ws(ve)
		if i >= len(b) {
			return 0, false
		}
		if b[i] == '}' {
			return i + 1, true
		}
		if b[i] != ',' {
			return 0, false
		}
		i = v.ws(i + 1)
	}
}

// array validates the array at b[i]; elem (optional) validates each element.
func (v *validator) array(i, depth int, elem func(i int) (int, bool)) (int, bool) {
	b := v.b
	i = v.ws(i + 1)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		if i >= len(b) {
			return 0, false
		}
		var ve int
		var ok bool
		if elem != nil {
			ve, ok = elem(i)
		} else {
			ve, ok = v.value(i, depth+1)
		}
		if !ok {
			return 0, false
		}
		i = v.ws(ve)
		if i >= len(b) {
			return 0, false
		}
		if b[i] == ']' {
			return i + 1, true
		}
		if b[i] != ',' {
			return 0, false
		}
		i = v.ws(i + 1)
	}
}
