package sandbox

// This file is a strict JSON (RFC 8259) parser that builds Starlark values
// directly: tool results are parsed on every call, and going through
// encoding/json's token API cost about two thirds of a call's overhead.
// It accepts exactly what json.Valid accepts (FuzzJSONRoundTrip checks
// this), and like encoding/json it turns invalid UTF-8 and lone surrogates
// in strings into U+FFFD.

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"go.starlark.net/starlark"
)

type jparser struct {
	data []byte
	pos  int
	// stack holds the elements of the arrays being read; each array is
	// copied out in one slice of its exact size at its ']' (appending to
	// a slice per array left four times its elements as garbage)
	stack []starlark.Value
	// cost bounds the bytes the values built so far took (the sizes
	// below, measured); past limit (when not 0) the parse stops with
	// errDecodeBudget
	cost, limit int64
}

// What decoded values take, in bytes, measured (TestDecodeCostCovers
// checks these bound what the runtime counts): a starlark Dict holds its
// first bucket inline.
const (
	decValueCost  = 16  // an element's slot, or a boxed scalar
	decDictCost   = 640 // starlark.NewDict(0) and its first key
	decEntryCost  = 224 // each further key: its entry and the table's growth
	decFloatCost  = 160 // parsing and printing back a float
	decStringCost = 32  // a string's header, boxed
	decBigCost    = 384 // an integer past int64
)

// errDecodeBudget: the values decoded so far passed the parser's limit.
var errDecodeBudget = errors.New("decoded value over budget")

// spend adds n to the parse's cost.
func (p *jparser) spend(n int64) error {
	p.cost += n
	if p.limit > 0 && p.cost > p.limit {
		return errDecodeBudget
	}
	return nil
}

func (p *jparser) fail(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *jparser) ws() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jparser) value(depth int) (starlark.Value, error) {
	p.ws()
	if p.pos >= len(p.data) {
		return nil, p.fail("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		if depth >= maxJSONDepth {
			return nil, errTooDeep
		}
		p.pos++
		if err := p.spend(decDictCost); err != nil {
			return nil, err
		}
		d := starlark.NewDict(0)
		p.ws()
		if p.pos < len(p.data) && p.data[p.pos] == '}' {
			p.pos++
			return d, nil
		}
		for {
			p.ws()
			if p.pos >= len(p.data) || p.data[p.pos] != '"' {
				return nil, p.fail("expected a string key")
			}
			kstart := p.pos
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			if err := p.spend(decStringCost + 2*int64(p.pos-kstart)); err != nil {
				return nil, err
			}
			p.ws()
			if p.pos >= len(p.data) || p.data[p.pos] != ':' {
				return nil, p.fail("expected ':'")
			}
			p.pos++
			if d.Len() > 0 {
				if err := p.spend(decEntryCost); err != nil {
					return nil, err
				}
			}
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			_ = d.SetKey(starlark.String(k), v)
			p.ws()
			if p.pos >= len(p.data) {
				return nil, p.fail("unexpected end of input in an object")
			}
			if p.data[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.data[p.pos] == '}' {
				p.pos++
				return d, nil
			}
			return nil, p.fail("expected ',' or '}'")
		}
	case c == '[':
		if depth >= maxJSONDepth {
			return nil, errTooDeep
		}
		p.pos++
		if err := p.spend(2 * decStringCost); err != nil { // the List and its box
			return nil, err
		}
		p.ws()
		if p.pos < len(p.data) && p.data[p.pos] == ']' {
			p.pos++
			return starlark.NewList(nil), nil
		}
		mark := len(p.stack)
		for {
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			if err := p.spend(decValueCost); err != nil {
				return nil, err
			}
			if len(p.stack) == cap(p.stack) {
				// doubled: its garbage stays within its final size,
				// counted with it
				grown := make([]starlark.Value, len(p.stack), max(64, 2*cap(p.stack)))
				copy(grown, p.stack)
				p.stack = grown
				if err := p.spend(2 * int64(cap(p.stack)) * decValueCost); err != nil {
					return nil, err
				}
			}
			p.stack = append(p.stack, v)
			p.ws()
			if p.pos >= len(p.data) {
				return nil, p.fail("unexpected end of input in an array")
			}
			if p.data[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.data[p.pos] == ']' {
				p.pos++
				elems := make([]starlark.Value, len(p.stack)-mark)
				copy(elems, p.stack[mark:])
				clear(p.stack[mark:]) // no references kept past the parse
				p.stack = p.stack[:mark]
				return starlark.NewList(elems), nil
			}
			return nil, p.fail("expected ',' or ']'")
		}
	case c == '"':
		start := p.pos
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		// an escaped string grows its builder: twice its text
		if err := p.spend(decStringCost + 2*int64(p.pos-start)); err != nil {
			return nil, err
		}
		return starlark.String(s), nil
	case c == 't':
		return starlark.True, p.word("true")
	case c == 'f':
		return starlark.False, p.word("false")
	case c == 'n':
		return starlark.None, p.word("null")
	case c == '-' || (c >= '0' && c <= '9'):
		start := p.pos
		if !p.number() {
			return nil, p.fail("malformed number")
		}
		v := numberValue(string(p.data[start:p.pos]))
		if err := p.spend(numberCost(v, p.pos-start)); err != nil {
			return nil, err
		}
		return v, nil
	default:
		return nil, p.fail("unexpected character %q", c)
	}
}

// numberCost bounds what numberValue took for v, from text of n bytes:
// parsing and printing back a float, the digits of a big integer, a
// literal's dict and text.
func numberCost(v starlark.Value, n int) int64 {
	switch v := v.(type) {
	case starlark.Float:
		return decFloatCost + 2*int64(n)
	case *starlark.Dict:
		return decDictCost + decFloatCost + 4*int64(n)
	case starlark.Int:
		if _, ok := v.Int64(); ok {
			return decValueCost + 2*int64(n)
		}
	}
	return decBigCost + 4*int64(n) // a big.Int parsed, then copied
}

func (p *jparser) word(w string) error {
	if len(p.data)-p.pos < len(w) || string(p.data[p.pos:p.pos+len(w)]) != w {
		return p.fail("expected %s", w)
	}
	p.pos += len(w)
	return nil
}

// number advances over one number per the JSON grammar.
func (p *jparser) number() bool {
	d := p.data
	i := p.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(d) && d[i] == '.' {
		i++
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	p.pos = i
	return true
}

// str parses a string starting at the opening quote.
func (p *jparser) str() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	d := p.data
	// fast path: plain ASCII without escapes
	for i := start; i < len(d); i++ {
		c := d[i]
		if c == '"' {
			p.pos = i + 1
			return string(d[start:i]), nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
	}
	var b strings.Builder
	i := start
	for {
		if i >= len(d) {
			p.pos = i
			return "", p.fail("unterminated string")
		}
		c := d[i]
		switch {
		case c == '"':
			p.pos = i + 1
			return b.String(), nil
		case c < 0x20:
			p.pos = i
			return "", p.fail("control character in string")
		case c == '\\':
			if i+1 >= len(d) {
				p.pos = i
				return "", p.fail("unterminated escape")
			}
			i++
			switch d[i] {
			case '"', '\\', '/':
				b.WriteByte(d[i])
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, ok := hex4(d, i+1)
				if !ok {
					p.pos = i
					return "", p.fail("bad \\u escape")
				}
				i += 4
				if utf16.IsSurrogate(r) {
					if r2, ok := hex4(d, i+3); ok && i+2 < len(d) && d[i+1] == '\\' && d[i+2] == 'u' {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							b.WriteRune(dec)
							i += 6
							break
						}
					}
					r = utf8.RuneError
				}
				b.WriteRune(r)
			default:
				p.pos = i
				return "", p.fail("bad escape \\%c", d[i])
			}
			i++
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			i++
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				b.WriteRune(utf8.RuneError)
			} else {
				b.Write(d[i : i+size])
			}
			i += size
		}
	}
}

func hex4(d []byte, i int) (rune, bool) {
	if i+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
