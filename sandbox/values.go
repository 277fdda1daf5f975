package sandbox

// This file holds the walks over a script's values that the sandbox does
// itself instead of leaving them to starlark-go's built-ins: printing
// (str, repr, print, %, format, fail), equality and ordering (==, <, in,
// sorted, min, max, list.index), and sizing a dict key before it is
// hashed. Each walk bounds the nesting depth and looks at the run's
// cancellation every few hundred values, so the wall clock and a caller's
// cancellation hold inside one built-in (see "Why built-ins walk values
// themselves" in doc.go).

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
)

const (
	// MaxValueDepth is how deeply one value may nest to be printed,
	// compared, hashed or converted to JSON (the same bound as JSON
	// entering a script). A deeper value is refused with a `limit` error
	// naming valueDepth.
	MaxValueDepth = maxJSONDepth
	// MaxKeyParts bounds the parts of a tuple or struct used as a dict key,
	// each shared part counted every time it appears: hashing a key is one
	// uninterruptible step, so a key is sized before it reaches a dict.
	MaxKeyParts = 1 << 16

	// tickMask: a walk looks at the run's cancellation every 256 values.
	tickMask = 255
)

// Sentinels of the walks; the built-ins turn them into limit errors that
// name the operation (valueErr).
var (
	errValueDepth = errors.New("value too deep")
	errReprBudget = errors.New("text over budget")
	errKeyParts   = errors.New("key too large")
)

// walker is one walk over values on behalf of a run.
type walker struct {
	rs *runState
	n  int
	// presized: the dict being updated was made at the update's length,
	// so its growth is not charged again (dictGrowth)
	presized bool
}

// tick returns the run's limit or cancellation once one has tripped.
func (w *walker) tick() error {
	w.n++
	if w.n&tickMask == 0 && w.rs != nil {
		if t := w.rs.tripped.Load(); t != nil {
			return t
		}
	}
	return nil
}

// check is tick without the stride, for steps that can each be slow
// (inserting a key whose hash many keys share).
func (w *walker) check() error {
	if w.rs != nil {
		if t := w.rs.tripped.Load(); t != nil {
			return t
		}
	}
	return nil
}

// valueErr turns a walk's sentinel into the run's limit error for what
// (e.g. "str()"); other errors pass through.
func (rs *runState) valueErr(err error, what string) error {
	var e *scriptErr
	switch {
	case errors.Is(err, errValueDepth):
		e = limitErr(LimitValueDepth, "%s: the value is nested more than %d levels deep (or contains itself that deeply)", what, MaxValueDepth)
	case errors.Is(err, errKeyParts):
		e = limitErr(LimitKeySize, "%s: the dict key has more than %d parts (a part shared n times counts n times)", what, MaxKeyParts)
	default:
		return err
	}
	rs.trip(e)
	return e
}

// ---- printing ----

// render returns str(v) (quote=false) or repr(v) (quote=true), refusing a
// text longer than max bytes with errReprBudget.
func (w *walker) render(v starlark.Value, quote bool, max int64) (string, error) {
	if s, ok := v.(starlark.String); ok && !quote {
		if int64(len(s)) > max {
			return "", errReprBudget
		}
		return string(s), nil
	}
	var b strings.Builder
	// Sized to the estimate (what the caller charged) up front: grown
	// piece by piece, the buffer took five times the text's bytes.
	if est := reprSize(v, max+1); est <= max {
		b.Grow(int(est))
	}
	if err := w.repr(&b, v, 0, nil, max); err != nil {
		return "", err
	}
	return b.String(), nil
}

// repr writes v as starlark-go's repr does, except that a struct's fields
// share the cycle check of their container (starlark-go starts afresh
// there, so a list holding a struct holding the list never ends).
func (w *walker) repr(b *strings.Builder, v starlark.Value, depth int, path []starlark.Value, max int64) error {
	if err := w.tick(); err != nil {
		return err
	}
	if depth > MaxValueDepth {
		return errValueDepth
	}
	if int64(b.Len()) > max {
		return errReprBudget
	}
	switch x := v.(type) {
	case starlark.String:
		quoteTo(b, string(x))
	case *starlark.List:
		b.WriteByte('[')
		if slices.Contains(path, v) {
			b.WriteString("...")
		} else {
			path = append(path, v)
			for i := 0; i < x.Len(); i++ {
				if i > 0 {
					b.WriteString(", ")
				}
				if err := w.repr(b, x.Index(i), depth+1, path, max); err != nil {
					return err
				}
			}
		}
		b.WriteByte(']')
	case starlark.Tuple:
		b.WriteByte('(')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := w.repr(b, e, depth+1, path, max); err != nil {
				return err
			}
		}
		if len(x) == 1 {
			b.WriteByte(',')
		}
		b.WriteByte(')')
	case *starlark.Dict:
		b.WriteByte('{')
		if slices.Contains(path, v) {
			b.WriteString("...")
		} else {
			inner := append(path, v)
			sep := ""
			for k, e := range x.Entries() {
				b.WriteString(sep)
				if err := w.repr(b, k, depth+1, path, max); err != nil {
					return err
				}
				b.WriteString(": ")
				if err := w.repr(b, e, depth+1, inner, max); err != nil {
					return err
				}
				sep = ", "
			}
		}
		b.WriteByte('}')
	case *starlarkstruct.Struct:
		if c, ok := x.Constructor().(starlark.String); ok {
			b.WriteString(string(c))
		} else {
			b.WriteString(x.Constructor().String())
		}
		b.WriteByte('(')
		for i, name := range x.AttrNames() {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(name)
			b.WriteString(" = ")
			fv, err := x.Attr(name)
			if err != nil {
				return err
			}
			if err := w.repr(b, fv, depth+1, path, max); err != nil {
				return err
			}
		}
		b.WriteByte(')')
	default:
		// scalars, functions, modules: short and flat
		b.WriteString(v.String())
	}
	if int64(b.Len()) > max {
		return errReprBudget
	}
	return nil
}

// quoteTo writes s quoted as syntax.Quote(s, false) does, straight into
// b: syntax.Quote returns a copy of its own, grown piece by piece (up to
// five times the quoted bytes allocated for a string of escapes), for
// every string a container holds. Printable runes are written as they are
// (but '"' and '\\' escaped), the usual control characters as their
// escapes (\n, \t, ...), other ASCII controls and invalid bytes as \xNN,
// other runes that are not printable as \uNNNN or \UNNNNNNNN.
func quoteTo(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	if plainASCII(s) {
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	for i := 0; i < len(s); {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteByte(hex[s[i]>>4])
			b.WriteByte(hex[s[i]&0xf])
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteByte(byte(r))
		case strconv.IsPrint(r):
			b.WriteString(s[i : i+size])
		case r < utf8.RuneSelf && strings.IndexByte("\a\b\f\n\r\t\v", byte(r)) >= 0:
			b.WriteByte('\\')
			b.WriteByte("abfnrtv"[strings.IndexByte("\a\b\f\n\r\t\v", byte(r))])
		case r < ' ' || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&0xf])
		case r < 0x10000:
			b.WriteString(`\u`)
			for sh := 12; sh >= 0; sh -= 4 {
				b.WriteByte(hex[r>>sh&0xf])
			}
		default:
			b.WriteString(`\U`)
			for sh := 28; sh >= 0; sh -= 4 {
				b.WriteByte(hex[r>>sh&0xf])
			}
		}
		i += size
	}
	b.WriteByte('"')
}

// plainASCII: s is printable ASCII with no quote or backslash, which
// syntax.Quote leaves as it is.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// rendered stands in for a container argument of % and str.format: it
// prints as the text the sandbox rendered (bounded), so starlark-go's
// formatter never walks the container itself. Type() is the container's,
// so "%d" % [1] fails with the same message.
type rendered struct {
	text, typ string
}

func (r rendered) String() string        { return r.text }
func (r rendered) Type() string          { return r.typ }
func (r rendered) Freeze()               {}
func (r rendered) Truth() starlark.Bool  { return true }
func (r rendered) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: %s", r.typ) }

func isContainer(v starlark.Value) bool {
	switch v.(type) {
	case *starlark.List, starlark.Tuple, *starlark.Dict, *starlarkstruct.Struct:
		return true
	}
	return false
}

// preRender replaces a container argument by its rendered text.
func (w *walker) preRender(v starlark.Value, max int64) (starlark.Value, error) {
	if !isContainer(v) {
		return v, nil
	}
	s, err := w.render(v, true, max)
	if err != nil {
		return nil, err
	}
	return rendered{text: s, typ: v.Type()}, nil
}

// percentArgs prepares the right side of `format % y`: a tuple's elements,
// a dict's values, or y itself.
func (w *walker) percentArgs(y starlark.Value, max int64) (starlark.Value, error) {
	switch x := y.(type) {
	case starlark.Tuple:
		out := make(starlark.Tuple, len(x))
		for i, e := range x {
			r, err := w.preRender(e, max)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case *starlark.Dict:
		out := starlark.NewDict(x.Len())
		for k, e := range x.Entries() {
			r, err := w.preRender(e, max)
			if err != nil {
				return nil, err
			}
			if err := out.SetKey(k, r); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return w.preRender(y, max)
}

// ---- comparison ----

// isFlat: comparing or hashing the value never walks other values.
func isFlat(v starlark.Value) bool {
	switch v.(type) {
	case starlark.String, starlark.Int, starlark.Float, starlark.Bool, starlark.NoneType, starlark.Bytes:
		return true
	}
	return false
}

// compare is starlark.Compare for the containers a script builds (lists,
// tuples, dicts, structs), with the same results and errors, bounded by
// MaxValueDepth instead of starlark-go's depth of 10 and interruptible.
// Starlark itself compares everything else.
func (w *walker) compare(op syntax.Token, x, y starlark.Value, depth int) (bool, error) {
	if err := w.tick(); err != nil {
		return false, err
	}
	if depth > MaxValueDepth {
		return false, errValueDepth
	}
	switch x := x.(type) {
	case *starlark.List:
		if y, ok := y.(*starlark.List); ok {
			return w.seqCompare(op, x, y, x.Len(), y.Len(), depth)
		}
	case starlark.Tuple:
		if y, ok := y.(starlark.Tuple); ok {
			return w.seqCompare(op, x, y, len(x), len(y), depth)
		}
	case *starlark.Dict:
		if y, ok := y.(*starlark.Dict); ok {
			if op != syntax.EQL && op != syntax.NEQ {
				return false, fmt.Errorf("%s %s %s not implemented", x.Type(), op, y.Type())
			}
			eq, err := w.dictsEqual(x, y, depth)
			return eq == (op == syntax.EQL), err
		}
	case *starlarkstruct.Struct:
		if y, ok := y.(*starlarkstruct.Struct); ok {
			if op != syntax.EQL && op != syntax.NEQ {
				return false, fmt.Errorf("%s %s %s not implemented", x.Type(), op, y.Type())
			}
			eq, err := w.structsEqual(x, y, depth)
			return eq == (op == syntax.EQL), err
		}
	}
	return starlark.Compare(op, x, y)
}

func (w *walker) seqCompare(op syntax.Token, x, y starlark.Indexable, nx, ny int, depth int) (bool, error) {
	if nx != ny && (op == syntax.EQL || op == syntax.NEQ) {
		return op == syntax.NEQ, nil
	}
	for i := 0; i < nx && i < ny; i++ {
		a, b := x.Index(i), y.Index(i)
		eq, err := w.compare(syntax.EQL, a, b, depth+1)
		if err != nil {
			return false, err
		}
		if !eq {
			switch op {
			case syntax.EQL:
				return false, nil
			case syntax.NEQ:
				return true, nil
			}
			return w.compare(op, a, b, depth+1)
		}
	}
	return threeway(op, nx-ny), nil
}

func (w *walker) dictsEqual(x, y *starlark.Dict, depth int) (bool, error) {
	if x.Len() != y.Len() {
		return false, nil
	}
	for k, xv := range x.Entries() {
		yv, found, _ := y.Get(k)
		if !found {
			return false, nil
		}
		eq, err := w.compare(syntax.EQL, xv, yv, depth+1)
		if err != nil || !eq {
			return false, err
		}
	}
	return true, nil
}

func (w *walker) structsEqual(x, y *starlarkstruct.Struct, depth int) (bool, error) {
	xn, yn := x.AttrNames(), y.AttrNames()
	if len(xn) != len(yn) {
		return false, nil
	}
	if eq, err := starlark.Equal(x.Constructor(), y.Constructor()); err != nil || !eq {
		return false, err
	}
	for i, n := range xn {
		if yn[i] != n {
			return false, nil
		}
		xv, _ := x.Attr(n)
		yv, _ := y.Attr(n)
		eq, err := w.compare(syntax.EQL, xv, yv, depth+1)
		if err != nil || !eq {
			return false, err
		}
	}
	return true, nil
}

func threeway(op syntax.Token, cmp int) bool {
	switch op {
	case syntax.EQL:
		return cmp == 0
	case syntax.NEQ:
		return cmp != 0
	case syntax.LE:
		return cmp <= 0
	case syntax.LT:
		return cmp < 0
	case syntax.GE:
		return cmp >= 0
	case syntax.GT:
		return cmp > 0
	}
	return false
}

// contains is `x in y` for the containers whose membership test compares
// values; starlark answers the others (strings, ranges).
func (w *walker) contains(x, y starlark.Value) (bool, error) {
	switch c := y.(type) {
	case *starlark.List, starlark.Tuple:
		seq := c.(starlark.Indexable)
		for i := 0; i < seq.Len(); i++ {
			eq, err := w.compare(syntax.EQL, seq.Index(i), x, 0)
			if err != nil || eq {
				return eq, err
			}
		}
		return false, nil
	case *starlark.Dict:
		if err := w.checkKey(x); err != nil {
			return false, err
		}
	}
	v, err := starlark.Binary(syntax.IN, x, y)
	if err != nil {
		return false, err
	}
	return bool(v.Truth()), nil
}

// ---- dict keys ----

// checkKey sizes a value about to be hashed: nested tuples and structs are
// hashed whole, in one step, so they must be shallow and small.
func (w *walker) checkKey(k starlark.Value) error {
	if isFlat(k) {
		return nil
	}
	parts := 0
	return w.keyParts(k, 0, &parts)
}

func (w *walker) keyParts(v starlark.Value, depth int, parts *int) error {
	if err := w.tick(); err != nil {
		return err
	}
	if depth > MaxValueDepth {
		return errValueDepth
	}
	*parts++
	if *parts > MaxKeyParts {
		return errKeyParts
	}
	switch x := v.(type) {
	case starlark.Tuple:
		for _, e := range x {
			if err := w.keyParts(e, depth+1, parts); err != nil {
				return err
			}
		}
	case *starlarkstruct.Struct:
		for _, n := range x.AttrNames() {
			fv, _ := x.Attr(n)
			if err := w.keyParts(fv, depth+1, parts); err != nil {
				return err
			}
		}
	}
	// anything else hashes flat or refuses at once (lists, dicts)
	return nil
}

// updateDict is starlark-go's dict update (dict() and dict.update), with
// the same errors, sizing each key and interruptible: one call inserting
// many keys that share a hash (ints equal in their low 32 bits) is
// quadratic.
func (w *walker) updateDict(d *starlark.Dict, updates starlark.Tuple, kwargs []starlark.Tuple) error {
	if len(updates) == 1 {
		switch u := updates[0].(type) {
		case starlark.IterableMapping:
			for i, item := range u.Items() {
				if err := w.check(); err != nil {
					return err
				}
				if err := w.dictGrowth(d, i); err != nil {
					return err
				}
				if err := d.SetKey(item[0], item[1]); err != nil {
					return err
				}
			}
		default:
			iter := starlark.Iterate(u)
			if iter == nil {
				return fmt.Errorf("got %s, want iterable", u.Type())
			}
			defer iter.Done()
			var pair starlark.Value
			for i := 0; iter.Next(&pair); i++ {
				if err := w.check(); err != nil {
					return err
				}
				if err := w.dictGrowth(d, i); err != nil {
					return err
				}
				iter2 := starlark.Iterate(pair)
				if iter2 == nil {
					return fmt.Errorf("dictionary update sequence element #%d is not iterable (%s)", i, pair.Type())
				}
				n := starlark.Len(pair)
				if n < 0 {
					iter2.Done()
					return fmt.Errorf("dictionary update sequence element #%d has unknown length (%s)", i, pair.Type())
				} else if n != 2 {
					iter2.Done()
					return fmt.Errorf("dictionary update sequence element #%d has length %d, want 2", i, n)
				}
				var k, v starlark.Value
				iter2.Next(&k)
				iter2.Next(&v)
				iter2.Done()
				if err := w.checkKey(k); err != nil {
					return err
				}
				if err := d.SetKey(k, v); err != nil {
					return err
				}
			}
		}
	}
	before := d.Len()
	for _, kv := range kwargs {
		if err := d.SetKey(kv[0], kv[1]); err != nil {
			return err
		}
	}
	if d.Len() < before+len(kwargs) {
		seen := make(map[starlark.String]bool, len(kwargs))
		for _, kv := range kwargs {
			k := kv[0].(starlark.String)
			if seen[k] {
				return fmt.Errorf("duplicate keyword arg: %v", k)
			}
			seen[k] = true
		}
	}
	return nil
}
