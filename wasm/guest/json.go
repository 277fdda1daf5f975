package guest

import (
	"bytes"
	"errors"
	"math/bits"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// ErrSyntax reports JSON the scanner cannot walk.
var ErrSyntax = errors.New("guest: malformed JSON")

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// SkipSpace returns the index of the first non-space byte at or after i.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// load64 reads 8 bytes at b[i:] (caller guarantees i+8 <= len(b)); one
// i64.load in wasm.
func load64(b []byte, i int) uint64 {
	return *(*uint64)(unsafe.Pointer(&b[i]))
}

// quoteMask has the high bit set in the lowest byte of x that is '"' (bits
// above the lowest may be spurious; the lowest is exact).
func quoteMask(x uint64) uint64 {
	q := x ^ (0x22 * lsb)
	return (q - lsb) &^ q & msb
}

// SkipString returns the index just past the string whose opening quote is
// at b[i]. It looks only for quote bytes, eight at a time (SWAR): every
// quote of a word is taken from the one mask, in order, and a quote is
// escaped when an odd run of backslashes precedes it. Long strings thus cost
// few loop iterations, and text dense with escaped quotes (JSON inside a
// string) no more than one load per word: that matters in a guest, where
// every loop back-edge pays a termination check.
func SkipString(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return 0, ErrSyntax
	}
	start := i
	i++
	for ; i+8 <= len(b); i += 8 {
		for m := quoteMask(load64(b, i)); m != 0; m &= m - 1 {
			p := i + bits.TrailingZeros64(m)>>3
			if b[p] == '"' && !escaped(b, start, p) { // (bits above the lowest may be false hits)
				return p + 1, nil
			}
		}
	}
	for ; i < len(b); i++ {
		if b[i] == '"' && !escaped(b, start, i) {
			return i + 1, nil
		}
	}
	return 0, ErrSyntax
}

// escaped reports whether the quote at b[p] is preceded by an odd run of
// backslashes (after the opening quote at b[start]).
func escaped(b []byte, start, p int) bool {
	k := p - 1
	for k > start && b[k] == '\\' {
		k--
	}
	return (p-1-k)%2 == 1
}

// SkipValue returns the index just past the JSON value starting at or after
// i (leading space skipped). depth limits nesting.
func SkipValue(b []byte, i int) (int, error) { return skipValue(b, i, 0) }

const maxDepth = 512

func skipValue(b []byte, i, depth int) (int, error) {
	i = SkipSpace(b, i)
	if i >= len(b) {
		return 0, ErrSyntax
	}
	if depth > maxDepth {
		return 0, ErrSyntax
	}
	switch c := b[i]; {
	case c == '"':
		return SkipString(b, i)
	case c == '{':
		i = SkipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		for {
			var err error
			if i, err = SkipString(b, SkipSpace(b, i)); err != nil {
				return 0, err
			}
			i = SkipSpace(b, i)
			if i >= len(b) || b[i] != ':' {
				return 0, ErrSyntax
			}
			if i, err = skipValue(b, i+1, depth+1); err != nil {
				return 0, err
			}
			i = SkipSpace(b, i)
			if i >= len(b) {
				return 0, ErrSyntax
			}
			if b[i] == '}' {
				return i + 1, nil
			}
			if b[i] != ',' {
				return 0, ErrSyntax
			}
			i++
		}
	case c == '[':
		i = SkipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		for {
			var err error
			if i, err = skipValue(b, i, depth+1); err != nil {
				return 0, err
			}
			i = SkipSpace(b, i)
			if i >= len(b) {
				return 0, ErrSyntax
			}
			if b[i] == ']' {
				return i + 1, nil
			}
			if b[i] != ',' {
				return 0, ErrSyntax
			}
			i++
		}
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		j := i + 1
		for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
			j++
		}
		return j, nil
	}
	return 0, ErrSyntax
}

func literal(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, ErrSyntax
	}
	return i + len(lit), nil
}

// Members calls fn for each member of the object at or after i, with the raw
// key (quotes included) and the value's span [vs, ve). fn returns false to
// stop early. Members returns the index just past the object.
func Members(b []byte, i int, fn func(key []byte, vs, ve int) bool) (int, error) {
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return 0, ErrSyntax
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		ks := SkipSpace(b, i)
		ke, err := SkipString(b, ks)
		if err != nil {
			return 0, err
		}
		i = SkipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return 0, ErrSyntax
		}
		vs := SkipSpace(b, i+1)
		ve, err := skipValue(b, vs, 1)
		if err != nil {
			return 0, err
		}
		if !fn(b[ks:ke], vs, ve) {
			return ve, nil
		}
		i = SkipSpace(b, ve)
		if i >= len(b) {
			return 0, ErrSyntax
		}
		if b[i] == '}' {
			return i + 1, nil
		}
		if b[i] != ',' {
			return 0, ErrSyntax
		}
		i++
	}
}

// Elements calls fn for the span of each element of the array at or after i.
func Elements(b []byte, i int, fn func(s, e int) bool) (int, error) {
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != '[' {
		return 0, ErrSyntax
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		s := SkipSpace(b, i)
		e, err := skipValue(b, s, 1)
		if err != nil {
			return 0, err
		}
		if !fn(s, e) {
			return e, nil
		}
		i = SkipSpace(b, e)
		if i >= len(b) {
			return 0, ErrSyntax
		}
		if b[i] == ']' {
			return i + 1, nil
		}
		if b[i] != ',' {
			return 0, ErrSyntax
		}
		i++
	}
}

// Lookup returns the raw value of member key (unquoted name) of the object obj.
func Lookup(obj []byte, key string) ([]byte, bool) {
	var out []byte
	found := false
	_, err := Members(obj, 0, func(k []byte, vs, ve int) bool {
		if KeyIs(k, key) {
			out, found = obj[vs:ve], true
			return false
		}
		return true
	})
	if err != nil {
		return nil, false
	}
	return out, found
}

// KeyIs reports whether the raw JSON string raw (quotes included: a member
// name or a string value) decodes to name. Escapes are decoded first, so
// "t\u0065xt" is "text", as any JSON parser downstream will read it.
func KeyIs(raw []byte, name string) bool {
	if len(raw) == len(name)+2 && string(raw[1:len(raw)-1]) == name {
		return true
	}
	if len(raw) < len(name)+2 || len(raw) > 6*len(name)+2 || bytes.IndexByte(raw, '\\') < 0 {
		return false
	}
	var buf [64]byte
	d, err := AppendUnquote(buf[:0], raw)
	return err == nil && string(d) == name
}

// ParseInt parses a raw JSON integer.
func ParseInt(raw []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
}

// AppendUnquote decodes the raw JSON string (with quotes) onto dst.
func AppendUnquote(dst, raw []byte) ([]byte, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return dst, ErrSyntax
	}
	return appendUnquoteBody(dst, raw[1:len(raw)-1])
}

// appendUnquoteBody decodes the raw contents of a JSON string (the bytes
// between its quotes) onto dst.
func appendUnquoteBody(dst, s []byte) ([]byte, error) {
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			// The next backslash, eight bytes a step (a call into
			// IndexByte per escape costs more in a guest).
			j := i + 1
			for ; j+8 <= len(s); j += 8 {
				q := load64(s, j) ^ ('\\' * lsb)
				if m := (q - lsb) &^ q & msb; m != 0 {
					j += bits.TrailingZeros64(m) >> 3
					goto found
				}
			}
			for j < len(s) && s[j] != '\\' {
				j++
			}
		found:
			dst = append(dst, s[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(s) {
			return dst, ErrSyntax
		}
		switch s[i+1] {
		case '"', '\\', '/':
			dst = append(dst, s[i+1])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, n := unicodeEscape(s[i:])
			if n == 0 {
				return dst, ErrSyntax
			}
			dst = utf8.AppendRune(dst, r)
			i += n
			continue
		default:
			return dst, ErrSyntax
		}
		i += 2
	}
	return dst, nil
}

func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// unicodeEscape decodes \uXXXX (and a following low surrogate) at s.
func unicodeEscape(s []byte) (rune, int) {
	r, ok := hex4(s[2:])
	if !ok {
		return 0, 0
	}
	if r >= 0xD800 && r < 0xDC00 && len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
		if lo, ok := hex4(s[8:]); ok && lo >= 0xDC00 && lo < 0xE000 {
			return (r-0xD800)<<10 | (lo - 0xDC00) + 0x10000, 12
		}
	}
	if r >= 0xD800 && r < 0xE000 {
		return utf8.RuneError, 6
	}
	return r, 6
}

const hexDigits = "0123456789abcdef"

// quoteAttention has the high bit set in the lowest byte of x that
// AppendQuote cannot copy as it is (non-ASCII, below 0x20, '"' or '\\');
// bits above it may be spurious. Zero: all eight are plain.
func quoteAttention(x uint64) uint64 {
	ctl := (x - 0x20*lsb) &^ x // below 0x20 (borrows start only there)
	q := x ^ ('"' * lsb)
	bs := x ^ ('\\' * lsb)
	return (x | ctl | (q-lsb)&^q | (bs-lsb)&^bs) & msb
}

// AppendQuote encodes s as a JSON string onto dst (invalid UTF-8 becomes
// U+FFFD).
func AppendQuote(dst []byte, s []byte) []byte {
	dst = append(dst, '"')
	return append(appendQuoteBody(dst, s), '"')
}

// appendQuoteBody is AppendQuote without the quotes.
func appendQuoteBody(dst []byte, s []byte) []byte {
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time up to the first one that needs a look
		// (to escape, or UTF-8 to check): a guest pays for every loop
		// iteration and branch, so plain runs cost one per eight bytes.
		for i+8 <= len(s) {
			if m := quoteAttention(load64(s, i)); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		// Valid two- and three-byte sequences inline (a call costs in a
		// guest); anything else through utf8.DecodeRune.
		if c >= 0xC2 && c <= 0xDF && i+1 < len(s) && s[i+1]&0xC0 == 0x80 {
			i += 2
			continue
		}
		if c >= 0xE0 && c <= 0xEF && i+2 < len(s) && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 &&
			(c != 0xE0 || s[i+1] >= 0xA0) && (c != 0xED || s[i+1] <= 0x9F) {
			i += 3
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// CutRaw returns the largest n <= limit such that the raw string content
// s[:n] (the bytes between the quotes of a JSON string) ends neither inside
// an escape sequence, nor between the halves of an escaped surrogate pair,
// nor inside a UTF-8 sequence.
func CutRaw(s []byte, limit int) int {
	if limit >= len(s) {
		return len(s)
	}
	if limit <= 0 {
		return 0
	}
	p := limit
	// UTF-8: never keep a lead byte without its continuation bytes.
	for p > 0 && s[p]&0xC0 == 0x80 {
		p--
	}
	// Escapes are ASCII; look at most 12 bytes back for an unfinished one.
	lo := p - 12
	if lo < 0 {
		lo = 0
	}
	for q := p - 1; q >= lo; q-- {
		if s[q] != '\\' {
			continue
		}
		run := 0
		for k := q; k >= 0 && s[k] == '\\'; k-- {
			run++
		}
		if run%2 == 0 {
			break // q closes a "\\" pair; everything up to p is complete
		}
		n := 2
		if q+1 < len(s) && s[q+1] == 'u' {
			n = 6
			if r, ok := hex4(s[q+2:]); ok && r >= 0xD800 && r < 0xDC00 {
				n = 12
			}
		}
		if q+n > p {
			p = q
			// A low surrogate escape whose high half precedes it.
			if p >= 6 && s[p-6] == '\\' && s[p-5] == 'u' {
				if r, ok := hex4(s[p-4:]); ok && r >= 0xD800 && r < 0xDC00 {
					run := 0
					for k := p - 6; k >= 0 && s[k] == '\\'; k-- {
						run++
					}
					if run%2 == 1 {
						p -= 6
					}
				}
			}
		}
		break
	}
	return p
}

// Object walks the object at or after i, calling member with each raw key
// (quotes included) and the index where its value starts; member must return
// the index just past the value (SkipValue when it has no interest), so each
// byte is walked once. Object returns the index just past the object.
func Object(b []byte, i int, member func(key []byte, vs int) (int, error)) (int, error) {
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return 0, ErrSyntax
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		ks := i
		ke, err := SkipString(b, ks)
		if err != nil {
			return 0, err
		}
		i = SkipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return 0, ErrSyntax
		}
		vs := SkipSpace(b, i+1)
		if vs >= len(b) {
			return 0, ErrSyntax
		}
		ve, err := member(b[ks:ke], vs)
		if err != nil {
			return 0, err
		}
		i = SkipSpace(b, ve)
		if i >= len(b) {
			return 0, ErrSyntax
		}
		if b[i] == '}' {
			return i + 1, nil
		}
		if b[i] != ',' {
			return 0, ErrSyntax
		}
		i = SkipSpace(b, i+1)
	}
}

// Array walks the array at or after i, calling elem with the index where
// each element starts; elem returns the index just past it.
func Array(b []byte, i int, elem func(s int) (int, error)) (int, error) {
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != '[' {
		return 0, ErrSyntax
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		if i >= len(b) {
			return 0, ErrSyntax
		}
		e, err := elem(i)
		if err != nil {
			return 0, err
		}
		i = SkipSpace(b, e)
		if i >= len(b) {
			return 0, ErrSyntax
		}
		if b[i] == ']' {
			return i + 1, nil
		}
		if b[i] != ',' {
			return 0, ErrSyntax
		}
		i = SkipSpace(b, i+1)
	}
}
