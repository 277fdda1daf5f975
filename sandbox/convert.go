package sandbox

// This file converts between JSON text and Starlark values without ever
// passing a number through float64 unless that is exact.

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// literalKey marks a number that Starlark cannot hold exactly.
const literalKey = "$literal"

// maxJSONDepth bounds nesting in both directions (and so cycles in Starlark
// values).
const maxJSONDepth = 200

var errTooDeep = errors.New("value nested more than 200 levels deep (or contains itself)")

// fromJSON decodes one JSON value into a Starlark value. Integers become
// exact Ints of any size; a number with a fraction or exponent becomes a
// Float only if the float64 prints back to the same decimal value,
// otherwise {"$literal": "<source text>"}.
func fromJSON(data []byte) (starlark.Value, error) {
	v, _, err := decodeJSON(data, 0)
	return v, err
}

// decodeJSON is fromJSON stopping with errDecodeBudget once the values
// built take more than limit bytes (0: no limit); cost bounds what they
// took.
func decodeJSON(data []byte, limit int64) (v starlark.Value, cost int64, err error) {
	p := &jparser{data: data, limit: limit}
	v, err = p.value(0)
	if err != nil {
		return nil, p.cost, err
	}
	p.ws()
	if p.pos != len(data) {
		return nil, p.cost, p.fail("data after the top-level value")
	}
	return v, p.cost, nil
}

// numberValue converts JSON number text (already validated) exactly. An
// integer of more than maxIntDigits digits stays a literal: parsing it
// would take minutes in one step (the conversion is quadratic), and
// arithmetic on it is capped at maxIntBits anyway.
func numberValue(text string) starlark.Value {
	if !strings.ContainsAny(text, ".eE") && len(text) > maxIntDigits {
		return literal(text)
	}
	if !strings.ContainsAny(text, ".eE") {
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return starlark.MakeInt64(n)
		}
		if b, ok := new(big.Int).SetString(text, 10); ok {
			return starlark.MakeBigInt(b)
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err == nil && !math.IsInf(f, 0) && sameDecimal(text, strconv.FormatFloat(f, 'e', -1, 64)) {
		return starlark.Float(f)
	}
	return literal(text)
}

func literal(text string) starlark.Value {
	d := starlark.NewDict(1)
	_ = d.SetKey(starlark.String(literalKey), starlark.String(text))
	return d
}

// sameDecimal reports whether two decimal number texts denote the same
// value, without big arithmetic (so "1e999999999" costs nothing).
func sameDecimal(a, b string) bool {
	na, oka := canonDecimal(a)
	nb, okb := canonDecimal(b)
	return oka && okb && na == nb
}

// canonDecimal returns sign, significant digits and exponent as one string:
// "-123e-2" for -1.23. Zero is "0" regardless of sign or exponent. The
// exponent may be any size ("1e99999999999999999999" is fine).
func canonDecimal(s string) (string, bool) {
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	mant, expText := s, "0"
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, expText = s[:i], s[i+1:]
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return "0", true
	}
	t := strings.TrimRight(digits, "0")
	exp, ok := new(big.Int).SetString(strings.TrimPrefix(expText, "+"), 10)
	if !ok {
		return "", false
	}
	exp.Add(exp, big.NewInt(int64(len(digits)-len(t)-len(frac))))
	sign := "+"
	if neg {
		sign = "-"
	}
	return sign + t + "e" + exp.String(), true
}

// isJSONNumber reports whether s is exactly JSON number syntax.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i >= len(s) {
		return false
	}
	if s[i] == '0' {
		i++
	} else if s[i] >= '1' && s[i] <= '9' {
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	} else {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	return i == len(s)
}

// literalText returns the number text if v is a {"$literal": "<number>"} dict.
func literalText(v starlark.Value) (string, bool) {
	d, ok := v.(*starlark.Dict)
	if !ok || d.Len() != 1 {
		return "", false
	}
	x, found, _ := d.Get(starlark.String(literalKey))
	if !found {
		return "", false
	}
	s, ok := x.(starlark.String)
	if !ok || !isJSONNumber(string(s)) {
		return "", false
	}
	return string(s), true
}

// errTooBig is returned by the encoder when the output would pass its cap.
type errTooBig struct{ max int }

func (e *errTooBig) Error() string { return fmt.Sprintf("JSON larger than %d bytes", e.max) }

// encoder writes Starlark values as JSON with a byte cap.
type encoder struct {
	buf  bytes.Buffer
	max  int     // 0 = no cap
	walk *walker // nil, or the run whose cancellation ends the encoding
}

// toJSON encodes v. Dicts need string keys; structs (such as call()
// results) become objects; a $literal dict becomes its number text.
func toJSON(v starlark.Value, max int) ([]byte, error) {
	return toJSONWalk(v, max, nil)
}

// toJSONWalk is toJSON that stops when the run of w trips a limit or is
// cancelled.
func toJSONWalk(v starlark.Value, max int, w *walker) ([]byte, error) {
	return toJSONSized(v, max, w, 0)
}

// toJSONSized is toJSONWalk with the buffer sized to hint bytes first
// (an estimate of the encoding), so a large encoding is one allocation
// rather than a growing buffer's several.
func toJSONSized(v starlark.Value, max int, w *walker, hint int) ([]byte, error) {
	e := &encoder{max: max, walk: w}
	if hint > 0 {
		// (not Grow: bytes.Buffer grows through a second, temporary
		// slice of the size when the compiler does not elide it, as
		// under -race)
		e.buf = *bytes.NewBuffer(make([]byte, 0, hint))
	}
	if err := e.value(v, 0); err != nil {
		return nil, err
	}
	return e.buf.Bytes(), nil
}

func (e *encoder) check() error {
	if e.max > 0 && e.buf.Len() > e.max {
		return &errTooBig{e.max}
	}
	return nil
}

func (e *encoder) value(v starlark.Value, depth int) error {
	if depth > maxJSONDepth {
		return errTooDeep
	}
	if e.walk != nil {
		if err := e.walk.tick(); err != nil {
			return err
		}
	}
	switch x := v.(type) {
	case starlark.NoneType:
		e.buf.WriteString("null")
	case starlark.Bool:
		if x {
			e.buf.WriteString("true")
		} else {
			e.buf.WriteString("false")
		}
	case starlark.Int:
		if n, ok := x.Int64(); ok {
			e.buf.WriteString(strconv.FormatInt(n, 10))
		} else {
			e.buf.WriteString(x.BigInt().String())
		}
	case starlark.Float:
		f := float64(x)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("cannot encode %v as JSON (not a finite number)", x)
		}
		s := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEn") {
			s += ".0" // stay a float on the way back
		}
		e.buf.WriteString(s)
	case starlark.String:
		return e.str(string(x))
	case starlark.Bytes:
		return e.str(string(x))
	case *starlark.List:
		return e.seq(x, x.Len(), depth)
	case starlark.Tuple:
		return e.seq(x, x.Len(), depth)
	case *starlark.Set:
		return e.seq(x, x.Len(), depth)
	case *starlark.Dict:
		if t, ok := literalText(x); ok {
			if err := e.fits(len(t)); err != nil {
				return err
			}
			e.buf.WriteString(t)
			return e.check()
		}
		e.buf.WriteByte('{')
		for i, kv := range x.Items() {
			k, ok := kv[0].(starlark.String)
			if !ok {
				return fmt.Errorf("cannot encode dict with %s key %s as JSON (keys must be strings)", kv[0].Type(), kv[0].String())
			}
			if i > 0 {
				e.buf.WriteByte(',')
			}
			if err := e.str(string(k)); err != nil {
				return err
			}
			e.buf.WriteByte(':')
			if err := e.value(kv[1], depth+1); err != nil {
				return err
			}
		}
		e.buf.WriteByte('}')
	case *starlarkstruct.Struct:
		names := x.AttrNames()
		sort.Strings(names)
		e.buf.WriteByte('{')
		for i, n := range names {
			fv, err := x.Attr(n)
			if err != nil {
				return err
			}
			if i > 0 {
				e.buf.WriteByte(',')
			}
			if err := e.str(n); err != nil {
				return err
			}
			e.buf.WriteByte(':')
			if err := e.value(fv, depth+1); err != nil {
				return err
			}
		}
		e.buf.WriteByte('}')
	default:
		return fmt.Errorf("cannot encode %s as JSON", v.Type())
	}
	return e.check()
}

// fits refuses n more bytes that would take the output past the cap
// before they are copied: a string far over the cap is not encoded first
// and measured after, which would take its size again in host memory
// beyond what the memory limit counted.
func (e *encoder) fits(n int) error {
	if e.max > 0 && e.buf.Len()+n > e.max {
		return &errTooBig{e.max}
	}
	return nil
}

// str writes s as a JSON string within the cap (its encoding is at least
// len(s)+2 bytes: escaping never shortens it).
func (e *encoder) str(s string) error {
	if err := e.fits(len(s) + 2); err != nil {
		return err
	}
	writeJSONString(&e.buf, s)
	return e.check()
}

func (e *encoder) seq(it starlark.Iterable, n int, depth int) error {
	e.buf.WriteByte('[')
	iter := it.Iterate()
	defer iter.Done()
	var x starlark.Value
	for i := 0; iter.Next(&x); i++ {
		if i > 0 {
			e.buf.WriteByte(',')
		}
		if err := e.value(x, depth+1); err != nil {
			return err
		}
	}
	e.buf.WriteByte(']')
	return e.check()
}

const hexDigits = "0123456789abcdef"

// writeJSONString writes s as a JSON string; invalid UTF-8 becomes U+FFFD.
func writeJSONString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\r':
				b.WriteString(`\r`)
			case c == '\t':
				b.WriteString(`\t`)
			case c < 0x20 || c == 0x7f:
				b.WriteString(`\u00`)
				b.WriteByte(hexDigits[c>>4])
				b.WriteByte(hexDigits[c&0xf])
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString(`\ufffd`)
		} else if r == '\u2028' || r == '\u2029' {
			fmt.Fprintf(b, `\u%04x`, r)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}
