package front

import (
	"bytes"
	"unicode/utf8"
)

// A single-pass JSON scanner for the HTTP fast path (httpfast.go). It
// validates exactly what encoding/json validates (the grammar; invalid
// UTF-8 inside strings is accepted, as encoding/json accepts it) and
// reports members and values as spans of the input, so a request or a
// result that only passes through is never decoded into maps. Anything it
// cannot report exactly (escaped member names, duplicated members) is
// left to the decoding paths, which read it the way the SDK reads it.

// jsonWS reports JSON whitespace.
func jsonWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipWS(b []byte, i int) int {
	for i < len(b) && jsonWS(b[i]) {
		i++
	}
	return i
}

// skipString returns the index past the string starting at b[i] (a '"')
// and whether it holds an escape; -1 when malformed.
func skipString(b []byte, i int) (int, bool) {
	esc := false
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, esc
		case c == '\\':
			esc = true
			i++
			if i >= len(b) {
				return -1, esc
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return -1, esc
				}
				for _, h := range b[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return -1, esc
					}
				}
				i += 4
			default:
				return -1, esc
			}
		case c < 0x20:
			return -1, esc
		}
	}
	return -1, esc
}

// skipNumber returns the index past the number starting at b[i], -1 when
// malformed.
func skipNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() bool {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > start
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return -1
		}
	}
	return i
}

// skipValue returns the index past the value starting at b[i] (no
// leading whitespace), -1 when malformed or nested deeper than depth.
func skipValue(b []byte, i, depth int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		end, _ := skipString(b, i)
		return end
	case c == '{' || c == '[':
		if depth <= 0 {
			return -1
		}
		close := byte('}')
		if c == '[' {
			close = ']'
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == close {
			return i + 1
		}
		for {
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return -1
				}
				if i, _ = skipString(b, i); i < 0 {
					return -1
				}
				if i = skipWS(b, i); i >= len(b) || b[i] != ':' {
					return -1
				}
				i = skipWS(b, i+1)
			}
			if i = skipValue(b, i, depth-1); i < 0 {
				return -1
			}
			if i = skipWS(b, i); i >= len(b) {
				return -1
			}
			switch b[i] {
			case ',':
				i = skipWS(b, i+1)
			case close:
				return i + 1
			default:
				return -1
			}
		}
	case c == '-' || c >= '0' && c <= '9':
		return skipNumber(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return -1
}

func literal(b []byte, i int, lit string) int {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit)
	}
	return -1
}

// skipValid returns the index past the value starting at b[i] in input
// already validated by skipValue: it only matches quotes and brackets.
func skipValid(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipValidString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipValidString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && !jsonWS(b[i]) {
		i++
	}
	return i
}

// skipValidString returns the index past the (valid) string at b[i].
func skipValidString(b []byte, i int) int {
	for i++; ; {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		i += j
		bs := 0
		for k := i - 1; b[k] == '\\'; k-- {
			bs++
		}
		if bs%2 == 0 {
			return i + 1
		}
		i++
	}
}

// member is one object member: its name (without quotes; escaped when the
// name holds an escape) and its value, both spans of the input.
type member struct {
	name    []byte
	escaped bool
	value   []byte
}

// members appends the members of the object v (one whole, valid value
// without surrounding whitespace, as returned by the scanner: it is not
// validated again) to dst. ok
// is false when v is not an object.
func members(dst []member, v []byte) ([]member, bool) {
	if len(v) < 2 || v[0] != '{' {
		return dst, false
	}
	i := skipWS(v, 1)
	if v[i] == '}' {
		return dst, true
	}
	for {
		end := skipValidString(v, i)
		name := v[i+1 : end-1]
		esc := bytes.IndexByte(name, '\\') >= 0
		i = skipWS(v, skipWS(v, end)+1)
		vend := skipValid(v, i)
		dst = append(dst, member{name: name, escaped: esc, value: v[i:vend]})
		i = skipWS(v, vend)
		if v[i] == '}' {
			return dst, true
		}
		i = skipWS(v, i+1)
	}
}

// elements appends the elements of the array v (whole and valid, as
// returned by the scanner) to dst. ok is false when v is not an array.
func elements(dst [][]byte, v []byte) ([][]byte, bool) {
	if len(v) < 2 || v[0] != '[' {
		return dst, false
	}
	i := skipWS(v, 1)
	if v[i] == ']' {
		return dst, true
	}
	for {
		end := skipValid(v, i)
		dst = append(dst, v[i:end])
		i = skipWS(v, end)
		if v[i] == ']' {
			return dst, true
		}
		i = skipWS(v, i+1)
	}
}

// wholeValue trims b and reports it as one valid JSON value nested at
// most depth deep.
func wholeValue(b []byte, depth int) ([]byte, bool) {
	start := skipWS(b, 0)
	end := skipValue(b, start, depth)
	if end < 0 || skipWS(b, end) != len(b) {
		return nil, false
	}
	return b[start:end], true
}

// wholeObject is wholeValue that, when b holds an object, appends the
// object's members (as members reports them) to dst in the same pass:
// the frame filter looks for a plain call in every line it validates.
// For any other value it is wholeValue, dst as it was.
func wholeObject(dst []member, b []byte, depth int) (v []byte, ms []member, ok bool) {
	start := skipWS(b, 0)
	if start >= len(b) || b[start] != '{' || depth <= 0 {
		v, ok = wholeValue(b, depth)
		return v, dst, ok
	}
	n := len(dst)
	// skipValue's object, one level, keeping each member's spans.
	i := skipWS(b, start+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return nil, dst[:n], false
			}
			end, esc := skipString(b, i)
			if end < 0 {
				return nil, dst[:n], false
			}
			name := b[i+1 : end-1]
			if i = skipWS(b, end); i >= len(b) || b[i] != ':' {
				return nil, dst[:n], false
			}
			i = skipWS(b, i+1)
			vend := skipValue(b, i, depth-1)
			if vend < 0 {
				return nil, dst[:n], false
			}
			dst = append(dst, member{name: name, escaped: esc, value: b[i:vend]})
			if i = skipWS(b, vend); i >= len(b) {
				return nil, dst[:n], false
			}
			if b[i] == ',' {
				i = skipWS(b, i+1)
				continue
			}
			if b[i] != '}' {
				return nil, dst[:n], false
			}
			i++
			break
		}
	}
	if skipWS(b, i) != len(b) {
		return nil, dst[:n], false
	}
	return b[start:i], dst, true
}

// plainMembers reports members of an object whose names are all unescaped
// valid UTF-8 (decoders rewrite invalid bytes) and distinct; ok false otherwise (or when v is not an object).
func plainMembers(dst []member, v []byte) ([]member, bool) {
	n := len(dst)
	dst, ok := members(dst, v)
	return dst, ok && plainNames(dst[n:])
}

// plainNames reports whether the names of ms are all unescaped valid UTF-8
// and distinct (what plainMembers asks of an object's members).
func plainNames(ms []member) bool {
	for i := range ms {
		if ms[i].escaped || !utf8.Valid(ms[i].name) {
			return false
		}
		for j := range i {
			if string(ms[j].name) == string(ms[i].name) {
				return false
			}
		}
	}
	return true
}
