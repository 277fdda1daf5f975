package sandbox

// This file charges what the interpreter grows by its own opcodes, with
// no built-in to size: comprehensions, which starlark-go builds by
// appending element after element to a list or dict it makes itself,
// and d[k] = v, which adds an entry to a dict. Both grew uncharged and
// only the heap sampler, after the fact, stopped them:
// [i for i in range(3000000)] under a 48 MiB cap allocated 105 MiB and
// was stopped with the heap at 51.6 MiB; {i: i for i in range(1000000)}
// with the heap at 85.5 MiB (1.78 times the cap), and a loop of d[i] = i
// alike.
//
// A comprehension is rewritten so that the sandbox builds its value:
//
//	[B for V in X CLAUSES]
//
// becomes
//
//	<comp>[[<c> for <c> in <list>[X] if not [0 for V in <c> CLAUSES if <c> + B]]]
//
// <list>[X] makes a builder holding X (or fails as iterating X would);
// the outer comprehension binds it to <c>, a name no script can write,
// for the one iteration that evaluates the original comprehension, the
// inner one, as its condition; iterating <c> iterates X. Each element is
// handed to the builder by `<c> + B`, an operator, which stores it and
// yields False, so the inner list stays empty and the outer one is
// [<c>], of which <comp> makes the value built. The rewrite inserts
// operators and indexes, not calls: a call makes a tuple of its
// arguments, and the nested form first written with three calls cost
// two microseconds more a comprehension. The builder doubles a short
// list, then gathers chunks of growChunk elements, each growth charged
// before it is made, and copies the chunks once into a list of their
// number, as collectValues does. A dict comprehension {K: V for ...}
// gives `if <c> + K if <c> * V` (the key, yielding True, then the value,
// in starlark-go's order), the builder adding the entry to its dict and
// charging the dict's next table every growCheckEvery entries.
//
// # Why the comprehension is nested and not flattened
//
// X, the first iterable, is resolved in the scope around the
// comprehension and every later clause inside it ([x for x in x] reads
// the outer x): X stays the first clause of a comprehension (the outer
// one), and the original clauses stay together in the inner one, so
// every name resolves as before.
//
// d[k] = v becomes <grow>[d][k] = v: indexing <grow>, a value of the run,
// returns d after charging its next table when its length is a multiple
// of growCheckEvery (an index, like the operator, makes no argument
// tuple).

import (
	"fmt"
	"math"
	"sync/atomic"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Names the comprehension and assignment rewrites insert (not
// identifiers, see the names in memory.go).
const (
	opCompList = "<list>" // <list>[X]: a list builder iterating X
	opCompDict = "<dict>" // <dict>[X]: a dict builder iterating X
	opCompDone = "<comp>" // <comp>[[c]]: the value c built
	opGrowDict = "<grow>" // <grow>[d]: d, its next growth charged
	compVar    = "<c>"
)

// noGrowRewrite leaves comprehensions and item assignments to
// starlark-go's own opcodes: FuzzGrowRewrite runs a script both ways.
var noGrowRewrite atomic.Bool

// rwComprehension rewrites the comprehension x, whose parts are already
// rewritten, as the file comment shows.
func rwComprehension(x *syntax.Comprehension) syntax.Expr {
	if noGrowRewrite.Load() {
		return x
	}
	first, ok := x.Clauses[0].(*syntax.ForClause)
	if !ok {
		return x // the parser makes a for clause first
	}
	pos := first.For
	c := func() *syntax.Ident { return &syntax.Ident{NamePos: pos, Name: compVar} }
	feed := func(tok syntax.Token, at syntax.Position, y syntax.Expr) syntax.Node {
		return &syntax.IfClause{If: at, Cond: &syntax.BinaryExpr{OpPos: at, Op: tok, X: c(), Y: y}}
	}
	maker := opCompList
	clauses := append([]syntax.Node{&syntax.ForClause{For: first.For, Vars: first.Vars, In: first.In, X: c()}}, x.Clauses[1:]...)
	if de, ok := x.Body.(*syntax.DictEntry); ok {
		maker = opCompDict
		// an entry's error at its colon, as starlark-go reports it
		clauses = append(clauses, feed(syntax.PLUS, de.Colon, de.Key), feed(syntax.STAR, de.Colon, de.Value))
	} else {
		clauses = append(clauses, feed(syntax.PLUS, pos, x.Body))
	}
	inner := &syntax.Comprehension{Lbrack: x.Lbrack, Body: &syntax.Literal{Token: syntax.INT, TokenPos: pos, Raw: "0", Value: int64(0)}, Clauses: clauses, Rbrack: x.Rbrack}
	outer := &syntax.Comprehension{
		Lbrack: x.Lbrack,
		Body:   c(),
		Clauses: []syntax.Node{
			&syntax.ForClause{For: pos, Vars: c(), In: first.In, X: mkIndex(maker, pos, first.X)},
			&syntax.IfClause{If: pos, Cond: &syntax.UnaryExpr{OpPos: pos, Op: syntax.NOT, X: inner}},
		},
		Rbrack: x.Rbrack,
	}
	return mkIndex(opCompDone, pos, outer)
}

// mkIndex is name[y], name one of the values the rewrites insert.
func mkIndex(name string, pos syntax.Position, y syntax.Expr) *syntax.IndexExpr {
	return &syntax.IndexExpr{X: &syntax.Ident{NamePos: pos, Name: name}, Lbrack: pos, Y: y, Rbrack: pos}
}

// growTargets makes every d[k] of an assignment target (a name, an
// index, or a tuple or list of them) <grow>[d][k].
func growTargets(e syntax.Expr) {
	if noGrowRewrite.Load() {
		return
	}
	switch x := e.(type) {
	case *syntax.IndexExpr:
		x.X = mkIndex(opGrowDict, x.Lbrack, x.X)
	case *syntax.TupleExpr:
		for _, y := range x.List {
			growTargets(y)
		}
	case *syntax.ListExpr:
		for _, y := range x.List {
			growTargets(y)
		}
	case *syntax.ParenExpr:
		growTargets(x.X)
	}
}

// rewriteSteps are the steps starlark-go counts for what the rewrites
// add (measured with TestRewriteStepsAsStarlark): left out of maxSteps
// and Stats.Steps (runState.freeSteps), so a comprehension or an item
// assignment costs the steps it cost before (a list comprehension's
// element was 9 steps and would be 13, a million of them past the
// default maxSteps).
const (
	stepsPerComprehension = 22 // the outer comprehension, once
	stepsPerElement       = 4  // `if <c> + B` instead of an append
	stepsPerEntry         = 7  // `if <c> + K if <c> * V` instead of a dict entry
	stepsPerAssignment    = 2  // <grow>[d]
)

// compBuilder builds the value of one evaluation of a comprehension.
type compBuilder struct {
	rs  *runState
	src starlark.Iterable

	// a list comprehension's elements: full chunks, then cur
	chunks [][]starlark.Value
	cur    []starlark.Value
	total  int // elements in chunks

	// a dict comprehension's value and the key `<c> + K` gave
	dict *starlark.Dict
	key  starlark.Value

	// the builder itself, the tuple <list>[X] returns (not one more
	// allocation)
	self [1]starlark.Value
}

var (
	_ starlark.Iterable  = (*compBuilder)(nil)
	_ starlark.HasBinary = (*compBuilder)(nil)
)

func (b *compBuilder) String() string        { return "<comprehension>" }
func (b *compBuilder) Type() string          { return "comprehension" }
func (b *compBuilder) Freeze()               {}
func (b *compBuilder) Truth() starlark.Bool  { return true }
func (b *compBuilder) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: comprehension") }

// Iterate iterates the comprehension's first iterable.
func (b *compBuilder) Iterate() starlark.Iterator { return b.src.Iterate() }

// Binary takes an element (+) or, for a dict, a key (+) then its value (*).
func (b *compBuilder) Binary(op syntax.Token, y starlark.Value, side starlark.Side) (starlark.Value, error) {
	if b.dict != nil {
		if op == syntax.PLUS {
			b.key = y
			return starlark.True, nil // on to `if <c> * V`
		}
		b.rs.freeSteps += stepsPerEntry
		k := b.key
		b.key = nil
		if err := b.rs.chargeDictGrowth(b.dict); err != nil {
			return nil, err
		}
		if err := b.dict.SetKey(k, y); err != nil {
			return nil, err
		}
		return starlark.False, nil
	}
	b.rs.freeSteps += stepsPerElement
	if len(b.cur) == cap(b.cur) {
		if err := b.grow(); err != nil {
			return nil, err
		}
	}
	b.cur = append(b.cur, y)
	if n := len(b.cur); n%growCheckEvery == 0 && n < cap(b.cur) {
		// the elements are values made by the body, not charged (a
		// dict or tuple literal): between growths, every growCheckEvery
		// elements, what is still to come must fit beside them
		if err := b.rs.charge(int64(cap(b.cur)-n)*wordSize+b.finalSize(), "a list comprehension"); err != nil {
			return nil, err
		}
	}
	return starlark.False, nil
}

// finalSize is the list all the chunks become, once there are chunks
// (before, the slice being filled is the list).
func (b *compBuilder) finalSize() int64 {
	if b.chunks == nil {
		return 0
	}
	return int64(b.total+cap(b.cur)) * wordSize
}

// grow makes room for the next element: up to growChunk elements, a
// slice of twice the size, the old one copied (few allocations for the
// short lists most comprehensions make); past it, chunks of growChunk
// kept as they are and copied once, at the end, into the list. Each
// growth is charged before it is made: the new slice, and past growChunk
// the list all the chunks become.
func (b *compBuilder) grow() error {
	n := len(b.cur)
	switch {
	case n == 0:
		b.cur = make([]starlark.Value, 0, 8)
		return nil
	case n < growChunk:
		size := min(2*n, growChunk)
		if err := b.rs.charge(int64(size)*wordSize, "a list comprehension"); err != nil {
			return err
		}
		b.cur = append(make([]starlark.Value, 0, size), b.cur...)
		return nil
	}
	b.chunks = append(b.chunks, b.cur)
	b.total += n
	if err := b.rs.charge(int64(growChunk)*wordSize+int64(b.total+growChunk)*wordSize, "a list comprehension"); err != nil {
		return err
	}
	b.cur = make([]starlark.Value, 0, growChunk)
	return nil
}

// value is the list or dict built.
func (b *compBuilder) value() starlark.Value {
	if b.dict != nil {
		return b.dict
	}
	if b.chunks == nil {
		return starlark.NewList(b.cur)
	}
	out := make([]starlark.Value, 0, b.total+len(b.cur))
	for _, c := range b.chunks {
		out = append(out, c...)
	}
	b.chunks = nil
	return starlark.NewList(append(out, b.cur...))
}

// indexOp is a value the rewrites insert, indexed as a function of its
// index (an index, unlike a call, makes no argument tuple): <list>[X],
// <dict>[X], <comp>[l] and <grow>[d].
type indexOp struct {
	name string
	fn   func(starlark.Value) (starlark.Value, error)
}

var _ starlark.Mapping = indexOp{}

func (o indexOp) String() string        { return o.name }
func (o indexOp) Type() string          { return "builtin" }
func (o indexOp) Freeze()               {}
func (o indexOp) Truth() starlark.Bool  { return true }
func (o indexOp) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: builtin") }

func (o indexOp) Get(k starlark.Value) (starlark.Value, bool, error) {
	v, err := o.fn(k)
	return v, true, err
}

// compMaker is <list>[X] or <dict>[X]: a one-element tuple of a builder
// iterating X, or iterating X's error.
func (rs *runState) compMaker(dict bool) indexOp {
	name := opCompList
	if dict {
		name = opCompDict
	}
	return indexOp{name, func(x starlark.Value) (starlark.Value, error) {
		it, ok := x.(starlark.Iterable)
		if !ok {
			// starlark-go's own words for a for clause over it
			return nil, fmt.Errorf("%s value is not iterable", x.Type())
		}
		rs.freeSteps += stepsPerComprehension
		b := &compBuilder{rs: rs, src: it}
		if dict {
			b.dict = new(starlark.Dict)
		}
		b.self[0] = b
		return starlark.Tuple(b.self[:]), nil
	}}
}

// compDone is <comp>[l]: the value built by the builder l holds.
func compDone(l starlark.Value) (starlark.Value, error) {
	return l.(*starlark.List).Index(0).(*compBuilder).value(), nil
}

// dictGrower is <grow>: <grow>[d] is d, its next table charged first
// (chargeDictGrowth); any other value is itself.
func (rs *runState) dictGrower() indexOp {
	return indexOp{opGrowDict, func(x starlark.Value) (starlark.Value, error) {
		rs.freeSteps += stepsPerAssignment
		if d, ok := x.(*starlark.Dict); ok {
			if err := rs.chargeDictGrowth(d); err != nil {
				return nil, err
			}
		}
		return x, nil
	}}
}

// chargeDictGrowth is called before d takes one more entry: when its
// length is a multiple of growCheckEvery, the table starlark-go will
// make within the next growCheckEvery entries, if any, must fit in what
// is left of the cap, and at least a fresh reading of the heap must (the
// keys and values the script made meanwhile are not charged themselves).
// The table doubles when a new key finds len >= 6.5 buckets of 8
// entries (hashtable.go); a dict grown from empty has the fewest buckets
// its length allows, a presized one or one with deletions more, so its
// growth comes no sooner than this reckons. A constant 140 bytes an entry
// refused a dict of 217,088 entries that would not grow until 425,984.
func (rs *runState) chargeDictGrowth(d *starlark.Dict) error {
	n := d.Len()
	if n < growCheckEvery || n%growCheckEvery != 0 {
		return nil
	}
	nb := 1
	for float64(n-1) >= dictLoad*float64(nb) {
		nb <<= 1
	}
	est := int64(freshSampleAbove)
	if grows := int(math.Ceil(dictLoad * float64(nb))); grows < n+growCheckEvery {
		est = max(est, int64(2*nb)*dictBucketBytes)
	}
	return rs.chargeFn(est, func() string { return fmt.Sprintf("a dict growing past %d entries", n) })
}

const (
	dictLoad        = 6.5 // entries a bucket before starlark-go's table doubles
	dictBucketBytes = 456 // a bucket of 8 entries (56 bytes each) and a link
)
