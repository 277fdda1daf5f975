package sandbox

// This file is a strict JSON (RFC 8259) parser that builds Starlark values
// directly: tool results are parsed on every call, and going through
// encoding/json's token API cost about two thirds of a call's overhead.
// It accepts exactly what json.Valid accepts (FuzzJSONRoundTrip checks
// this), and like encoding/json it turns invalid UTF-8 and lone surrogates
// in strings into U+FFFD.

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"go.starlark.net/starlark"
)

type jparser struct {
	data []byte
	pos  int
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
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			p.ws()
			if p.pos >= len(p.data) || p.data[p.pos] != ':' {
				return nil, p.fail("expected ':'")
			}
			p.pos++
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
		var elems []starlark.Value
		p.ws()
		if p.pos < len(p.data) && p.data[p.pos] == ']' {
			p.pos++
			return starlark.NewList(nil), nil
		}
		for {
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			elems = append(elems, v)
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
				return starlark.NewList(elems), nil
			}
			return nil, p.fail("expected ',' or ']'")
		}
	case c == '"':
		s, err := p.str()
		if err != nil {
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
		return numberValue(string(p.data[start:p.pos])), nil
	default:
		return nil, p.fail("unexpected character %q", c)
	}
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
