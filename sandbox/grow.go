package sandbox

// This file holds the built-ins that build a value of a size not known
// before they run (list() and tuple() of an iterable with no length,
// list.extend of one, list.append in a loop, dict() and dict.update of
// many pairs, str.join of an iterable that is not a list or tuple): they
// are charged as they build, each step checked against what is left of
// the memory cap before it allocates, so an iterable of any length is
// stopped at the budget rather than by the heap sampler after the fact.

import (
	"fmt"
	"strings"

	"go.starlark.net/starlark"
)

const (
	// growChunk bounds the elements collectValues gathers in one chunk;
	// every chunk is charged before it is made.
	growChunk = 1 << 16

	// growCheckEvery: list.append and the dict update charge the next
	// growth of their value every this many elements (a fresh reading of
	// the heap each time, see freshSampleAbove).
	growCheckEvery = 1 << 12

	// dictTableCost bounds the bytes a dict's next table takes per entry
	// it holds: the table doubles when it holds 6.5 entries a bucket of
	// 8 (456 bytes a bucket), so the new table is about 140 bytes an
	// entry while the old one is still live (measured: a dict of a
	// million grown one by one allocated 281 MiB in all, 295 bytes an
	// entry; presized for its length, 125).
	dictTableCost = 140
)

// collectValues gathers the elements of an iterable with no length into
// one slice of their number, charging each chunk before it is made: the
// chunk, the values the iteration makes for its elements (a string of
// s.codepoints() is a new value, 16 bytes), and the final slice of all
// gathered so far. starlark-go's list() appended one by one: 304 MiB
// allocated for list(s.codepoints()) of three million characters, not
// charged.
func (rs *runState) collectValues(it starlark.Iterable, what string) ([]starlark.Value, error) {
	w := rs.walker()
	iter := it.Iterate()
	defer iter.Done()
	var chunks [][]starlark.Value
	total := 0
	cur := make([]starlark.Value, 0, 256)
	var x starlark.Value
	for iter.Next(&x) {
		if err := w.tick(); err != nil {
			return nil, err
		}
		if len(cur) == cap(cur) {
			chunks = append(chunks, cur)
			total += len(cur)
			size := min(2*cap(cur), growChunk)
			if err := rs.charge(int64(size)*2*wordSize+int64(total+size)*wordSize, what); err != nil {
				return nil, err
			}
			cur = make([]starlark.Value, 0, size)
		}
		cur = append(cur, x)
	}
	if chunks == nil {
		return cur[:len(cur):len(cur)], nil
	}
	out := make([]starlark.Value, 0, total+len(cur))
	for _, c := range chunks {
		out = append(out, c...)
	}
	return append(out, cur...), nil
}

// collectArgs replaces each positional argument that is an iterable
// with no length (s.codepoints()) by a tuple of its elements, gathered by
// collectValues, so the built-in name sees a length and is charged for
// it (list, tuple, reversed, enumerate and zip grew their result one by
// one for such an iterable, uncharged). list() and tuple() of one such
// argument take the gathered slice as it is.
func (rs *runState) collectArgs(name string, args starlark.Tuple, noKwargs bool) (starlark.Tuple, starlark.Value, error) {
	var out starlark.Tuple
	for i, a := range args {
		it, ok := a.(starlark.Iterable)
		if !ok || starlark.Len(a) >= 0 {
			continue
		}
		vals, err := rs.collectValues(it, name+"()")
		if err != nil {
			return nil, nil, err
		}
		switch {
		case len(args) == 1 && noKwargs && name == "list":
			return nil, starlark.NewList(vals), nil
		case len(args) == 1 && noKwargs && name == "tuple":
			return nil, starlark.Tuple(vals), nil
		}
		if out == nil {
			out = append(starlark.Tuple(nil), args...)
		}
		out[i] = starlark.Tuple(vals)
	}
	if out == nil {
		return args, nil, nil
	}
	return out, nil, nil
}

// appendTo is l.append(x), its growth charged: every growCheckEvery
// elements, the next growth of the list (a quarter more than its length,
// all of it new beside the old) must fit in what is left of the cap.
// Checked at every append of a long list, the reading of the heap would
// cost more than the append; between checks a list of n elements grows at
// most once when n is past 16K.
func (rs *runState) appendTo(l *starlark.List, x starlark.Value) (starlark.Value, error) {
	if err := rs.chargeListGrowth(l, "list.append()"); err != nil {
		return nil, err
	}
	if err := l.Append(x); err != nil {
		return nil, fmt.Errorf("append: %v", err)
	}
	return starlark.None, nil
}

// chargeListGrowth is appendTo's charge of l's next growth, for any
// method that adds one element (append, insert).
func (rs *runState) chargeListGrowth(l *starlark.List, what string) error {
	if n := l.Len(); n >= growCheckEvery && n%growCheckEvery == 0 {
		return rs.charge(int64(n+n/4)*wordSize, what)
	}
	return nil
}

// fits tells whether est more bytes fit in what is left of the cap, as
// charge would find, without refusing anything.
func (rs *runState) fits(est int64) bool {
	g := rs.heap.growth.Load()
	if est >= freshSampleAbove {
		g = rs.heap.sample()
	}
	return est <= rs.lim.MaxMemoryBytes-g
}

// dictGrowth charges the next table of d every growCheckEvery entries
// added (dict() and dict.update of many pairs).
func (w *walker) dictGrowth(d *starlark.Dict, added int) error {
	if w.rs == nil || w.presized || added == 0 || added%growCheckEvery != 0 {
		return nil
	}
	return w.rs.chargeFn(int64(d.Len())*dictTableCost, func() string { return fmt.Sprintf("a dict growing past %d entries", d.Len()) })
}

// joinGrowing is sep.join(it) for an iterable that is not a list or
// tuple (its elements may be made as it is iterated: iterating it twice,
// to size the result and then to build it, made them twice): one pass,
// the buffer doubling, each growth charged.
func (rs *runState) joinGrowing(sep string, it starlark.Iterable) (starlark.Value, error) {
	w := rs.walker()
	iter := it.Iterate()
	defer iter.Done()
	var b strings.Builder
	var x starlark.Value
	for i := 0; iter.Next(&x); i++ {
		if err := w.tick(); err != nil {
			return nil, err
		}
		s, ok := starlark.AsString(x)
		if !ok {
			return nil, fmt.Errorf("join: in list, want string, got %s", x.Type())
		}
		add := len(s)
		if i > 0 {
			add += len(sep)
		}
		if add > b.Cap()-b.Len() {
			// Grow(n) makes a buffer of twice the old capacity plus n
			n := max(add, 64)
			if err := rs.charge(int64(2*b.Cap()+n), "string.join()"); err != nil {
				return nil, err
			}
			b.Grow(n)
		}
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(s)
	}
	return starlark.String(b.String()), nil
}
