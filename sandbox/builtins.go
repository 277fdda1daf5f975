package sandbox

// This file defines the script's predeclared names besides the server
// modules: call, parallel, json, struct, elapsed_ms, group_by, the
// memory-checked str/repr/list/tuple/print, and the hidden checking
// built-ins the syntax rewrite inserts.

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
)

func (rs *runState) predeclared() starlark.StringDict {
	d := starlark.StringDict{
		"call":       starlark.NewBuiltin("call", rs.callBuiltin),
		"parallel":   starlark.NewBuiltin("parallel", rs.parallelBuiltin),
		"struct":     starlark.NewBuiltin("struct", starlarkstruct.Make),
		"elapsed_ms": starlark.NewBuiltin("elapsed_ms", rs.elapsedMs),
		"group_by":   starlark.NewBuiltin("group_by", rs.groupBy),
		"json": &starlarkstruct.Module{Name: "json", Members: starlark.StringDict{
			"encode": starlark.NewBuiltin("json.encode", rs.jsonEncode),
			"decode": starlark.NewBuiltin("json.decode", rs.jsonDecode),
		}},
		"print":     starlark.NewBuiltin("print", rs.print),
		"str":       rs.strFn(false),
		"repr":      rs.strFn(true),
		"fail":      starlark.NewBuiltin("fail", rs.fail),
		"sorted":    starlark.NewBuiltin("sorted", rs.sorted),
		"min":       starlark.NewBuiltin("min", rs.minmax),
		"max":       starlark.NewBuiltin("max", rs.minmax),
		"all":       starlark.NewBuiltin("all", rs.allAny),
		"any":       starlark.NewBuiltin("any", rs.allAny),
		"dict":      starlark.NewBuiltin("dict", rs.dict),
		"int":       starlark.NewBuiltin("int", rs.intFn),
		"bytes":     rs.sized("bytes", bytesArg),
		"list":      rs.sized("list", seqArg),
		"tuple":     rs.sized("tuple", seqArg),
		"reversed":  rs.sized("reversed", seqArg),
		"enumerate": rs.sized("enumerate", func(args starlark.Tuple) int64 { return 2 * seqArg(args) }),
		"zip":       rs.sized("zip", zipArgs),
		opBinary:    starlark.NewBuiltin(opBinary, rs.binaryOp),
		opGrow:      starlark.NewBuiltin(opGrow, rs.growOp),
		opMethod:    starlark.NewBuiltin(opMethod, rs.methodOp),
		opBound:     starlark.NewBuiltin(opBound, rs.boundOp),
		"getattr":   starlark.NewBuiltin("getattr", rs.getattr),
		opCompare:   starlark.NewBuiltin(opCompare, rs.compareOp),
		opKey:       starlark.NewBuiltin(opKey, rs.keyOp),
		opSlice:     starlark.NewBuiltin(opSlice, rs.sliceOp),
		opCompList:  rs.compMaker(false),
		opCompDict:  rs.compMaker(true),
		opCompDone:  indexOp{opCompDone, compDone},
		opGrowDict:  rs.dictGrower(),
	}
	for name, m := range rs.modules {
		d[name] = m
	}
	return d
}

// sized wraps a universal built-in with a size estimate of its result;
// an argument with no length is gathered first (collectArgs).
func (rs *runState) sized(name string, est func(starlark.Tuple) int64) *starlark.Builtin {
	orig := starlark.Universe[name]
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if name != "bytes" {
			var done starlark.Value
			var err error
			if args, done, err = rs.collectArgs(name, args, len(kwargs) == 0); err != nil || done != nil {
				return done, err
			}
		}
		if err := rs.charge(est(args), name+"()"); err != nil {
			return nil, err
		}
		return starlark.Call(thread, orig, args, kwargs)
	})
}

func reprArg(args starlark.Tuple, budget int64) int64 {
	if len(args) != 1 {
		return 0
	}
	if _, ok := args[0].(starlark.String); ok {
		return 0
	}
	return reprSize(args[0], budget+1)
}

func seqArg(args starlark.Tuple) int64 {
	if len(args) < 1 {
		return 0
	}
	if s, ok := args[0].(starlark.Sequence); ok {
		return int64(s.Len()) * elemCost
	}
	return 0
}

// bytesArg: bytes(s) copies a string (bytes(iterable of ints) is sized
// by its length).
func bytesArg(args starlark.Tuple) int64 {
	if len(args) != 1 {
		return 0
	}
	if s, ok := args[0].(starlark.String); ok {
		return int64(len(s))
	}
	return seqArg(args)
}

// zipArgs: zip allocates one tuple per row of the shortest argument.
func zipArgs(args starlark.Tuple) int64 {
	rows := int64(-1)
	for _, a := range args {
		n := int64(starlark.Len(a))
		if n < 0 {
			continue
		}
		if rows < 0 || n < rows {
			rows = n
		}
	}
	if rows <= 0 {
		return 0
	}
	return rows * (elemCost + int64(len(args))*wordSize)
}

func (rs *runState) binaryOp(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	op := syntax.Token(mustInt(args[0]))
	x, y := args[1], args[2]
	what := func() string { return fmt.Sprintf("%s %s %s", x.Type(), op, y.Type()) }
	est := binaryEstimate(op, x, y, rs.memBudget()+1)
	if est > 0 {
		if err := rs.chargeFn(est, what); err != nil {
			return nil, err
		}
	}
	if err := rs.checkIntMul(op, x, y); err != nil {
		return nil, err
	}
	if f, ok := x.(starlark.String); ok && op == syntax.PERCENT {
		budget := rs.memBudget()
		args, err := rs.walker().percentArgs(y, budget)
		if errors.Is(err, errReprBudget) {
			return nil, rs.overBudget(budget, "string % "+y.Type())
		}
		if err != nil {
			return nil, rs.valueErr(err, "string % "+y.Type())
		}
		pieces, size, ok := planPercent(string(f), args)
		if !ok {
			// an error, or a form left to starlark-go (a key with %%,
			// very many directives): its growing builder, charged three
			// times the result (builderPeak)
			if err := rs.chargeFn(builderPeak(est)-est, what); err != nil {
				return nil, err
			}
			return starlark.Binary(op, x, args)
		}
		if size > est { // a float's %f can print more than its estimate
			if err := rs.chargeFn(size-est, what); err != nil {
				return nil, err
			}
		}
		return starlark.String(buildPercent(pieces, size)), nil
	}
	return starlark.Binary(op, x, y)
}

// maxIntBits bounds integer products: multiplying two huge integers takes
// long enough inside one step to escape the timeout.
const maxIntBits = 1 << 19

// maxIntDigits is the decimal length of a maxIntBits integer, roughly:
// int() and json.decode do not parse longer digit strings (Go's decimal
// conversion is quadratic; three million digits took over a minute).
const maxIntDigits = maxIntBits * 3 / 10

// intFn is int() refusing digit strings longer than maxIntDigits.
func (rs *runState) intFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) > 0 {
		if s, ok := args[0].(starlark.String); ok && len(strings.TrimSpace(string(s))) > maxIntDigits {
			e := limitErr(LimitMemory, "int() of a string of %d characters would have more than %d bits (at most %d digits)", len(s), maxIntBits, maxIntDigits)
			rs.trip(e)
			return nil, e
		}
	}
	return starlark.Call(thread, starlark.Universe["int"], args, kwargs)
}

func (rs *runState) checkIntMul(op syntax.Token, x, y starlark.Value) error {
	xi, ok1 := x.(starlark.Int)
	yi, ok2 := y.(starlark.Int)
	if op != syntax.STAR || !ok1 || !ok2 {
		return nil
	}
	if _, small := xi.Int64(); small {
		if _, small := yi.Int64(); small {
			return nil
		}
	}
	if xi.BigInt().BitLen()+yi.BigInt().BitLen() > maxIntBits {
		e := limitErr(LimitMemory, "int * int would have more than %d bits", maxIntBits)
		rs.trip(e)
		return e
	}
	return nil
}

func (rs *runState) growOp(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	op := syntax.Token(mustInt(args[0]))
	x, y := args[1], args[2]
	if est := binaryEstimate(op, x, y, rs.memBudget()+1); est > 0 {
		if err := rs.chargeFn(est, func() string { return fmt.Sprintf("%s %s= %s", x.Type(), op, y.Type()) }); err != nil {
			return nil, err
		}
	}
	if err := rs.checkIntMul(op, x, y); err != nil {
		return nil, err
	}
	return y, nil
}

// boundOp is x.name taken as a value, not called: for a method of a
// string, bytes, list or dict, a built-in that calls it through methodOp,
// charged as x.name(...) is; anything else (a module's function, a
// struct's field) as it is.
func (rs *runState) boundOp(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	recv, name := args[0], string(args[1].(starlark.String))
	ha, ok := recv.(starlark.HasAttrs)
	if !ok {
		return nil, fmt.Errorf("%s has no .%s field or method", recv.Type(), name)
	}
	v, err := ha.Attr(name)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, fmt.Errorf("%s has no .%s field or method", recv.Type(), name)
	}
	return rs.checkedBound(recv, name, v), nil
}

// checkedBound returns v, recv's attribute name, or for a method of the
// core types a built-in method that calls it through methodOp.
func (rs *runState) checkedBound(recv starlark.Value, name string, v starlark.Value) starlark.Value {
	switch recv.(type) {
	case starlark.String, starlark.Bytes, *starlark.List, *starlark.Dict:
	default:
		return v
	}
	if _, ok := v.(*starlark.Builtin); !ok || !checkedMethods[name] {
		return v
	}
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		return rs.methodOp(thread, b, append(starlark.Tuple{b.Receiver(), starlark.String(name)}, args...), kwargs)
	}).BindReceiver(recv)
}

// getattr is the universal getattr, a checked method it returns bound as
// x.name is (boundOp).
func (rs *runState) getattr(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	v, err := starlark.Call(thread, starlark.Universe["getattr"], args, kwargs)
	if err != nil || len(args) < 2 {
		return v, err
	}
	name, ok := starlark.AsString(args[1])
	if !ok {
		return v, nil
	}
	if bv, ok := v.(*starlark.Builtin); ok && bv.Receiver() == args[0] {
		return rs.checkedBound(args[0], name, v), nil
	}
	return v, nil
}

func (rs *runState) methodOp(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	recv := args[0]
	name := string(args[1].(starlark.String))
	rest := args[2:]
	if l, ok := recv.(*starlark.List); ok && name == "append" && len(rest) == 1 && len(kwargs) == 0 {
		return rs.appendTo(l, rest[0])
	}
	if l, ok := recv.(*starlark.List); ok && name == "insert" {
		if err := rs.chargeListGrowth(l, "list.insert()"); err != nil {
			return nil, err
		}
	}
	if d, ok := recv.(*starlark.Dict); ok && name == "setdefault" {
		if err := rs.chargeDictGrowth(d); err != nil {
			return nil, err
		}
	}
	ha, ok := recv.(starlark.HasAttrs)
	var m starlark.Value
	if ok {
		var err error
		m, err = ha.Attr(name)
		if err != nil {
			return nil, err
		}
	}
	if m == nil {
		return nil, fmt.Errorf("%s has no .%s field or method", recv.Type(), name)
	}
	est := methodEstimate(recv, name, rest, kwargs, rs.memBudget()+1)
	if est > 0 {
		if err := rs.chargeFn(est, func() string { return recv.Type() + "." + name + "()" }); err != nil {
			return nil, err
		}
	}
	what := recv.Type() + "." + name + "()"
	switch recv := recv.(type) {
	case *starlark.List:
		switch name {
		case "extend":
			if len(rest) == 1 && len(kwargs) == 0 && starlark.Len(rest[0]) < 0 {
				if it, ok := rest[0].(starlark.Iterable); ok {
					vals, err := rs.collectValues(it, what)
					if err != nil {
						return nil, err
					}
					if err := rs.charge(int64(recv.Len()+len(vals))*elemCost, what); err != nil {
						return nil, err
					}
					rest = starlark.Tuple{starlark.NewList(vals)}
				}
			}
			if t, ok := rest[0].(starlark.Tuple); ok && len(rest) == 1 && len(kwargs) == 0 {
				// read, never kept: starlark-go extends by a list in one
				// append, by anything else one element at a time (Go's
				// growth: five times the slots allocated in all)
				rest = starlark.Tuple{starlark.NewList(t)}
			}
		case "index", "remove":
			i, err := rs.listIndex(recv, rest, kwargs)
			if err != nil {
				return nil, err
			}
			if i < 0 && name == "index" {
				return nil, fmt.Errorf("index: value not in list")
			}
			if i < 0 {
				return nil, fmt.Errorf("remove: element not found")
			}
			if name == "index" {
				return starlark.MakeInt(i), nil
			}
			pop, _ := recv.Attr("pop")
			if _, err := starlark.Call(thread, pop, starlark.Tuple{starlark.MakeInt(i)}, nil); err != nil {
				return nil, err
			}
			return starlark.None, nil
		}
	case *starlark.Dict:
		w := rs.walker()
		switch name {
		case "get", "pop", "setdefault":
			if len(rest) > 0 {
				if err := w.checkKey(rest[0]); err != nil {
					return nil, rs.valueErr(err, what)
				}
			}
		case "update":
			if len(rest) > 1 {
				return nil, fmt.Errorf("update: got %d arguments, want at most 1", len(rest))
			}
			if err := w.updateDict(recv, rest, kwargs); err != nil {
				return nil, rs.walkErr(err, "update")
			}
			return starlark.None, nil
		}
	case starlark.String:
		if name == "join" && len(rest) == 1 && len(kwargs) == 0 {
			switch it := rest[0].(type) {
			case *starlark.List, starlark.Tuple, *starlark.Dict:
				return joinStrings(string(recv), it.(starlark.Iterable))
			case starlark.Iterable:
				return rs.joinGrowing(string(recv), it)
			}
		}
		switch name {
		case "upper", "lower", "title", "capitalize":
			if len(rest) == 0 && len(kwargs) == 0 {
				return starlark.String(caseCopy(name, string(recv))), nil
			}
		}
		if name == "format" {
			budget := rs.memBudget()
			w := rs.walker()
			var err error
			args := make(starlark.Tuple, len(rest))
			for i, a := range rest {
				if args[i], err = w.preRender(a, budget); err != nil {
					break
				}
			}
			kws := make([]starlark.Tuple, len(kwargs))
			for i, kv := range kwargs {
				if err != nil {
					break
				}
				var v starlark.Value
				v, err = w.preRender(kv[1], budget)
				kws[i] = starlark.Tuple{kv[0], v}
			}
			if errors.Is(err, errReprBudget) {
				return nil, rs.overBudget(budget, what)
			}
			if err != nil {
				return nil, rs.valueErr(err, what)
			}
			pieces, size, ok := planFormat(string(recv), args, kws)
			if !ok {
				// an error, or a form left to starlark-go (bytes or a
				// range printed, very many fields): its growing builder,
				// charged three times the result (builderPeak)
				if err := rs.charge(builderPeak(est)-est, what); err != nil {
					return nil, err
				}
				return starlark.Call(thread, m, args, kws)
			}
			if size > est {
				if err := rs.charge(size-est, what); err != nil {
					return nil, err
				}
			}
			return starlark.String(buildPercent(pieces, size)), nil
		}
	}
	return starlark.Call(thread, m, rest, kwargs)
}

// caseRune maps one rune of s.name() for the case methods as starlark-go
// does: upper and lower rune by rune, title upper-casing (to title case)
// only after an uncased rune, capitalize the first rune only. prevCased
// tells whether the previous mapped rune is cased.
func caseRune(name string, r rune, first, prevCased bool) rune {
	switch name {
	case "upper":
		return unicode.ToUpper(r)
	case "lower":
		return unicode.ToLower(r)
	case "title":
		if prevCased {
			return unicode.ToLower(r)
		}
		return unicode.ToTitle(r)
	default: // capitalize
		if first {
			return unicode.ToTitle(r)
		}
		return unicode.ToLower(r)
	}
}

// isCasedRune is starlark-go's test of a cased rune (for title).
func isCasedRune(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || unicode.SimpleFold(r) != r
}

// caseSize is the length of s.name() for the case methods: a rune's case
// may be longer than the rune (ɐ, 2 bytes, upper-cases to Ɐ, 3) and an
// invalid byte becomes U+FFFD (3 bytes), so up to three times len(s).
func caseSize(name, s string) int64 {
	var n int64
	prev := false
	for i, r := range s {
		m := caseRune(name, r, i == 0, prev)
		prev = name == "title" && isCasedRune(m)
		n += int64(utf8.RuneLen(m))
	}
	return n
}

// caseCopy is s.name() for upper, lower, title and capitalize, built in
// one allocation of its exact size (caseSize, which the call is charged
// before it runs): starlark-go's grow their buffer rune by rune, and on
// text whose case is longer (ɐ) took about 3.6 times the string, past a
// charge of the result. Its results are starlark-go's.
func caseCopy(name, s string) string {
	var b strings.Builder
	b.Grow(int(caseSize(name, s)))
	prev := false
	for i, r := range s {
		m := caseRune(name, r, i == 0, prev)
		prev = name == "title" && isCasedRune(m)
		b.WriteRune(m)
	}
	return b.String()
}

// joinStrings is sep.join(it) building the result in one allocation of
// its exact size: starlark-go's join appends piece by piece, and the
// buffer's growth took about five times the result's bytes (2.5 times at
// its peak), so a join the charge let pass took the run past its memory
// limit. Its error is starlark-go's.
func joinStrings(sep string, it starlark.Iterable) (starlark.Value, error) {
	n, count := 0, 0
	iter := it.Iterate()
	var x starlark.Value
	for iter.Next(&x) {
		s, ok := starlark.AsString(x)
		if !ok {
			iter.Done()
			return nil, fmt.Errorf("join: in list, want string, got %s", x.Type())
		}
		if count > 0 {
			n += len(sep)
		}
		n += len(s)
		count++
	}
	iter.Done()
	var b strings.Builder
	b.Grow(n)
	iter = it.Iterate()
	defer iter.Done()
	for i := 0; iter.Next(&x) && b.Len() < n; i++ {
		if i > 0 {
			b.WriteString(sep)
		}
		s, _ := starlark.AsString(x)
		b.WriteString(s)
	}
	return starlark.String(b.String()), nil
}

// sliceOp is <slice>(x, parts, lo?, hi?, step?): x[lo:hi:step], with
// starlark-go's index rules and errors, charged before it allocates and
// built in one allocation of its exact size. starlark-go grows a slice
// with a step element by element: s[::-1] of a 30 MB string took 180 MB
// (the growth, then the string's copy), uncharged, under a 48 MiB cap.
func (rs *runState) sliceOp(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	x, parts, rest := args[0], mustInt(args[1]), args[2:]
	var bounds [3]starlark.Value // lo, hi, step; nil when not given
	for i := range bounds {
		if parts&(1<<i) != 0 {
			bounds[i], rest = rest[0], rest[1:]
		}
	}
	sl, ok := x.(starlark.Sliceable)
	if !ok {
		return nil, fmt.Errorf("invalid slice operand %s", x.Type())
	}
	start, end, step, err := sliceBounds(sl.Len(), bounds[0], bounds[1], bounds[2])
	if err != nil {
		return nil, err
	}
	n := sliceLen(start, end, step)
	switch v := x.(type) {
	case starlark.String:
		if step == 1 {
			return v[start:end], nil // shares the string
		}
		if err := rs.charge(int64(n), "a string slice"); err != nil {
			return nil, err
		}
		var b strings.Builder
		b.Grow(n)
		for i := start; b.Len() < n; i += step {
			b.WriteByte(v[i])
		}
		return starlark.String(b.String()), nil
	case starlark.Bytes:
		if step == 1 {
			return v[start:end], nil
		}
		if err := rs.charge(int64(n), "a bytes slice"); err != nil {
			return nil, err
		}
		var b strings.Builder
		b.Grow(n)
		for i := start; b.Len() < n; i += step {
			b.WriteByte(v[i])
		}
		return starlark.Bytes(b.String()), nil
	case starlark.Tuple:
		if step == 1 {
			return v[start:end], nil
		}
		if err := rs.charge(int64(n)*wordSize, "a tuple slice"); err != nil {
			return nil, err
		}
		t := make(starlark.Tuple, n)
		for i, j := 0, start; i < n; i, j = i+1, j+step {
			t[i] = v[j]
		}
		return t, nil
	case *starlark.List:
		// a copy even with step 1
		if err := rs.charge(int64(n)*wordSize, "a list slice"); err != nil {
			return nil, err
		}
		elems := make([]starlark.Value, n)
		for i, j := 0, start; i < n; i, j = i+1, j+step {
			elems[i] = v.Index(j)
		}
		return starlark.NewList(elems), nil
	}
	return sl.Slice(start, end, step), nil // range: no copy
}

// sliceBounds is starlark-go's reading of x[lo:hi:step] for a sequence
// of n elements (nil for a part not given): the start, the end (exclusive,
// -1 for a backward slice to the first element) and the step.
func sliceBounds(n int, lo, hi, stepv starlark.Value) (start, end, step int, err error) {
	step = 1
	if stepv != nil && stepv != starlark.None {
		if step, err = starlark.AsInt32(stepv); err != nil {
			return 0, 0, 0, fmt.Errorf("invalid slice step: %s", err)
		}
		if step == 0 {
			return 0, 0, 0, fmt.Errorf("zero is not a valid slice step")
		}
	}
	index := func(v starlark.Value, dflt int, what string) (int, error) {
		if v == nil || v == starlark.None {
			return dflt, nil
		}
		i, err := starlark.AsInt32(v)
		if err != nil {
			return 0, fmt.Errorf("invalid %s index: %s", what, err)
		}
		if i < 0 {
			i += n
		}
		return i, nil
	}
	if step > 0 {
		if start, err = index(lo, 0, "start"); err != nil {
			return 0, 0, 0, err
		}
		start = max(0, min(start, n))
		if end, err = index(hi, n, "end"); err != nil {
			return 0, 0, 0, err
		}
		end = max(start, max(0, min(end, n)))
		return start, end, step, nil
	}
	if start, err = index(lo, n-1, "start"); err != nil {
		return 0, 0, 0, err
	}
	start = min(start, n-1)
	if end, err = index(hi, -1, "end"); err != nil {
		return 0, 0, 0, err
	}
	end = max(end, -1)
	start = max(start, end)
	return start, end, step, nil
}

// sliceLen is the number of elements of a slice from start to end (not
// included) by step, as sliceBounds gives them.
func sliceLen(start, end, step int) int {
	if step > 0 {
		return (end - start + step - 1) / step
	}
	return (start - end - step - 1) / -step
}

func mustInt(v starlark.Value) int {
	n, _ := starlark.AsInt32(v)
	return n
}

// print(*args, sep=" ") appends one line to the run's bounded log. A value
// too large to fit in what is left of the log is not formatted at all.
func (rs *runState) print(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	sep := " "
	for _, kv := range kwargs {
		if k := string(kv[0].(starlark.String)); k == "sep" {
			s, ok := kv[1].(starlark.String)
			if !ok {
				return nil, fmt.Errorf("print: sep must be a string, got %s", kv[1].Type())
			}
			sep = string(s)
		} else {
			return nil, fmt.Errorf("print: unexpected keyword argument %s", k)
		}
	}
	room := int64(rs.lim.MaxLogBytes - rs.logBytes)
	var buf strings.Builder
	for i, a := range args {
		if i > 0 {
			buf.WriteString(sep)
		}
		if s, ok := a.(starlark.String); ok {
			if int64(len(s)) > room+1 {
				buf.WriteString(string(s[:room+1]))
			} else {
				buf.WriteString(string(s))
			}
		} else if reprSize(a, room+1) > room {
			fmt.Fprintf(&buf, "<%s too large to print>", a.Type())
		} else {
			text, err := rs.walker().render(a, false, room)
			switch {
			case errors.Is(err, errReprBudget):
				fmt.Fprintf(&buf, "<%s too large to print>", a.Type())
			case err != nil:
				return nil, rs.valueErr(err, "print()")
			default:
				buf.WriteString(text)
			}
		}
		if int64(buf.Len()) > room {
			break
		}
	}
	rs.log(buf.String())
	return starlark.None, nil
}

func (rs *runState) elapsedMs(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackPositionalArgs("elapsed_ms", args, kwargs, 0); err != nil {
		return nil, err
	}
	return starlark.MakeInt64(time.Since(rs.start).Milliseconds()), nil
}

// json.encode(x) -> str. Numbers are exact; a {"$literal": "<number>"}
// dict is written as the number text.
func (rs *runState) jsonEncode(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x starlark.Value
	if err := starlark.UnpackPositionalArgs("json.encode", args, kwargs, 1, &x); err != nil {
		return nil, err
	}
	// The encoding is sized up front (one buffer, not a growing one),
	// then copied into the string: twice its size, charged. JSON escapes
	// a control byte or an invalid one in six bytes where repr takes four,
	// so the size is half again the repr estimate.
	est := reprSize(x, rs.memBudget()+1)
	est = sumCapped(est, est/2)
	if err := rs.charge(sumCapped(est, est), "json.encode()"); err != nil {
		return nil, err
	}
	budget := rs.memBudget() // after the charge, which may have collected garbage
	out, err := toJSONSized(x, int(min(budget, 1<<40)), rs.walker(), int(min(est, 1<<40)))
	if err != nil {
		var tb *errTooBig
		switch {
		case errors.As(err, &tb):
			return nil, rs.overBudget(budget, "json.encode()")
		case errors.Is(err, errTooDeep):
			return nil, rs.valueErr(errValueDepth, "json.encode()")
		case errors.As(err, new(*scriptErr)):
			return nil, err
		}
		return nil, fmt.Errorf("json.encode: %v", err)
	}
	return starlark.String(out), nil
}

// json.decode(s) -> value. Integers are exact; a number a float cannot
// hold exactly becomes {"$literal": "<source text>"}.
func (rs *runState) jsonDecode(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var s string
	if err := starlark.UnpackPositionalArgs("json.decode", args, kwargs, 1, &s); err != nil {
		return nil, err
	}
	if err := rs.charge(int64(len(s))*4, "json.decode"); err != nil {
		return nil, err
	}
	// What the values take is counted as they are built (a 9 MB
	// "[{},{},...]" made 1.7 GiB of dicts): stop once past the budget.
	budget := rs.memBudget()
	v, _, err := decodeJSON([]byte(s), max(budget, 1))
	if errors.Is(err, errDecodeBudget) {
		return nil, rs.overBudget(budget, "json.decode()")
	}
	if err != nil {
		return nil, fmt.Errorf("json.decode: %v", err)
	}
	return v, nil
}

// group_by(iterable, key) -> dict mapping key(x) to the list of x, in
// first-seen order.
func (rs *runState) groupBy(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var it starlark.Iterable
	var key starlark.Callable
	if err := starlark.UnpackArgs("group_by", args, kwargs, "iterable", &it, "key", &key); err != nil {
		return nil, err
	}
	out := starlark.NewDict(0)
	iter := it.Iterate()
	defer iter.Done()
	w := rs.walker()
	var x starlark.Value
	for iter.Next(&x) {
		if err := w.check(); err != nil {
			return nil, err
		}
		k, err := starlark.Call(thread, key, starlark.Tuple{x}, nil)
		if err != nil {
			return nil, err
		}
		if err := w.checkKey(k); err != nil {
			return nil, rs.valueErr(err, "group_by()")
		}
		cur, found, err := out.Get(k)
		if err != nil {
			return nil, fmt.Errorf("group_by: key %s: %v", k.Type(), err)
		}
		// the dict and its lists grow as the loop of the same in a
		// script would, charged alike (chargeDictGrowth, chargeListGrowth)
		if !found {
			if err := rs.chargeDictGrowth(out); err != nil {
				return nil, err
			}
			cur = starlark.NewList(nil)
			if err := out.SetKey(k, cur); err != nil {
				return nil, err
			}
		}
		l := cur.(*starlark.List)
		if err := rs.chargeListGrowth(l, "group_by()"); err != nil {
			return nil, err
		}
		if err := l.Append(x); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ---- built-ins that walk values (see values.go) ----

// walker starts a walk for the run.
func (rs *runState) walker() *walker { return &walker{rs: rs} }

// text renders v for what, within the run's memory budget.
func (rs *runState) text(v starlark.Value, quote bool, what string) (string, error) {
	budget := rs.memBudget()
	s, err := rs.walker().render(v, quote, budget)
	if errors.Is(err, errReprBudget) {
		return "", rs.overBudget(budget, what)
	}
	if err != nil {
		return "", rs.valueErr(err, what)
	}
	return s, nil
}

// strFn is str() and repr(): charged by their estimated size, rendered by
// the sandbox's bounded walk.
func (rs *runState) strFn(quote bool) *starlark.Builtin {
	name := "str"
	if quote {
		name = "repr"
	}
	orig := starlark.Universe[name]
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if err := rs.charge(reprArg(args, rs.memBudget()), name+"()"); err != nil {
			return nil, err
		}
		if len(args) != 1 || len(kwargs) != 0 || !isContainer(args[0]) {
			return starlark.Call(thread, orig, args, kwargs)
		}
		s, err := rs.text(args[0], quote, name+"()")
		if err != nil {
			return nil, err
		}
		return starlark.String(s), nil
	})
}

// fail(*args, sep=" ") with its arguments rendered by the bounded walk.
func (rs *runState) fail(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	out := make(starlark.Tuple, len(args))
	for i, a := range args {
		if s, ok := a.(starlark.String); ok {
			out[i] = s
			continue
		}
		s, err := rs.walker().render(a, true, maxMessageBytes)
		switch {
		case errors.Is(err, errReprBudget):
			s = "<" + a.Type() + " too large to print>"
		case err != nil:
			return nil, rs.valueErr(err, "fail()")
		}
		out[i] = starlark.String(s)
	}
	return starlark.Call(thread, starlark.Universe["fail"], out, kwargs)
}

// compareOp is <cmp>(tok, x, y): x tok y for ==, !=, <, <=, >, >=, in and
// not in. Flat operands go straight to starlark.
func (rs *runState) compareOp(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	op := syntax.Token(mustInt(args[0]))
	x, y := args[1], args[2]
	switch op {
	case syntax.IN, syntax.NOT_IN:
		if isFlat(y) {
			return starlark.Binary(op, x, y)
		}
		in, err := rs.walker().contains(x, y)
		if err != nil {
			return nil, rs.valueErr(err, "`in`")
		}
		return starlark.Bool(in == (op == syntax.IN)), nil
	}
	if isFlat(x) || isFlat(y) {
		ok, err := starlark.Compare(op, x, y)
		return starlark.Bool(ok), err
	}
	ok, err := rs.walker().compare(op, x, y, 0)
	if err != nil {
		return nil, rs.valueErr(err, "`"+op.String()+"`")
	}
	return starlark.Bool(ok), nil
}

// keyOp is <key>(k): k, after sizing it as a dict key (an index
// expression's key or a dict literal's).
func (rs *runState) keyOp(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	k := args[0]
	if isFlat(k) {
		return k, nil
	}
	if err := rs.walker().checkKey(k); err != nil {
		return nil, rs.valueErr(err, "a "+k.Type()+" used as a key")
	}
	return k, nil
}

// dict(...) as starlark-go's, with keys sized and interruptible.
func (rs *runState) dict(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) > 1 {
		return nil, fmt.Errorf("dict: got %d arguments, want at most 1", len(args))
	}
	d := new(starlark.Dict)
	w := rs.walker()
	if len(args) == 1 {
		// made at its length at once: grown one by one, a dict of a
		// million took 281 MiB in all, 125 presized
		// only when it fits: dict(range(10**9)) is an error of its first
		// element, and a long update grown instead is charged as it grows
		if n := starlark.Len(args[0]); n > 0 && rs.fits(int64(n)*dictTableCost) {
			d = starlark.NewDict(n)
			w.presized = true
		}
	}
	if err := w.updateDict(d, args, kwargs); err != nil {
		return nil, rs.walkErr(err, "dict")
	}
	return d, nil
}

// walkErr reports an error of a walk inside the built-in name: a walk's
// limit, the run's own limit or cancellation, or name's own error.
func (rs *runState) walkErr(err error, name string) error {
	if errors.Is(err, errValueDepth) || errors.Is(err, errKeyParts) {
		return rs.valueErr(err, name+"()")
	}
	if errors.As(err, new(*scriptErr)) {
		return err
	}
	return fmt.Errorf("%s: %v", name, err)
}

// sorted(iterable, key=None, reverse=False), as starlark-go's, comparing
// with the bounded walk.
func (rs *runState) sorted(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var iterable starlark.Iterable
	var key starlark.Callable
	var reverse bool
	if err := starlark.UnpackArgs("sorted", args, kwargs, "iterable", &iterable, "key?", &key, "reverse?", &reverse); err != nil {
		return nil, err
	}
	n := starlark.Len(iterable)
	if n < 0 {
		// gathered, charged as it grows, then sorted at its length
		vals, err := rs.collectValues(iterable, "sorted()")
		if err != nil {
			return nil, err
		}
		iterable, n = starlark.Tuple(vals), len(vals)
	}
	if n > 0 {
		est := int64(n) * elemCost
		if key != nil {
			est *= 3 // the keys, and each call's garbage (measured 80 bytes an element)
		}
		if err := rs.charge(est, "sorted()"); err != nil {
			return nil, err
		}
	}
	w := rs.walker()
	// presized when the length is known: appending one by one took 2.6
	// times the charge (84 MB for a list of a million)
	values := make([]starlark.Value, 0, max(n, 0))
	iter := iterable.Iterate()
	var x starlark.Value
	for iter.Next(&x) {
		if err := w.tick(); err != nil {
			iter.Done()
			return nil, err
		}
		values = append(values, x)
	}
	iter.Done()
	keys := values
	if key != nil {
		keys = make([]starlark.Value, len(values))
		for i, v := range values {
			if err := w.tick(); err != nil {
				return nil, err
			}
			k, err := starlark.Call(thread, key, starlark.Tuple{v}, nil)
			if err != nil {
				return nil, err
			}
			keys[i] = k
		}
	}
	s := &sortSlice{w: w, keys: keys, values: values}
	if reverse {
		sort.Stable(sort.Reverse(s))
	} else {
		sort.Stable(s)
	}
	if s.err != nil {
		return nil, rs.valueErr(s.err, "sorted()")
	}
	return starlark.NewList(values), nil
}

type sortSlice struct {
	w            *walker
	keys, values []starlark.Value // keys may be values
	err          error
}

func (s *sortSlice) Len() int { return len(s.values) }
func (s *sortSlice) Less(i, j int) bool {
	if s.err == nil {
		s.err = s.w.tick()
	}
	if s.err != nil {
		return false
	}
	var ok bool
	if isFlat(s.keys[i]) || isFlat(s.keys[j]) {
		ok, s.err = starlark.Compare(syntax.LT, s.keys[i], s.keys[j])
	} else {
		ok, s.err = s.w.compare(syntax.LT, s.keys[i], s.keys[j], 0)
	}
	return ok
}
func (s *sortSlice) Swap(i, j int) {
	if &s.keys[0] != &s.values[0] {
		s.keys[i], s.keys[j] = s.keys[j], s.keys[i]
	}
	s.values[i], s.values[j] = s.values[j], s.values[i]
}

// minmax is min() and max() as starlark-go's, comparing with the bounded
// walk and interruptible over a long iterable.
func (rs *runState) minmax(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	name := b.Name()
	if len(args) == 0 {
		return nil, fmt.Errorf("%s requires at least one positional argument", name)
	}
	var keyFunc starlark.Callable
	if err := starlark.UnpackArgs(name, nil, kwargs, "key?", &keyFunc); err != nil {
		return nil, err
	}
	op := syntax.LT
	if name == "max" {
		op = syntax.GT
	}
	var iterable starlark.Value = args
	if len(args) == 1 {
		iterable = args[0]
	}
	iter := starlark.Iterate(iterable)
	if iter == nil {
		return nil, fmt.Errorf("%s: %s value is not iterable", name, iterable.Type())
	}
	defer iter.Done()
	keyOf := func(v starlark.Value) (starlark.Value, error) {
		if keyFunc == nil {
			return v, nil
		}
		return starlark.Call(thread, keyFunc, starlark.Tuple{v}, nil)
	}
	var best starlark.Value
	if !iter.Next(&best) {
		return nil, fmt.Errorf("%s: argument is an empty sequence", name)
	}
	bestKey, err := keyOf(best)
	if err != nil {
		return nil, err
	}
	w := rs.walker()
	var x starlark.Value
	for iter.Next(&x) {
		if err := w.tick(); err != nil {
			return nil, err
		}
		k, err := keyOf(x)
		if err != nil {
			return nil, err
		}
		var better bool
		if isFlat(k) || isFlat(bestKey) {
			better, err = starlark.Compare(op, k, bestKey)
		} else {
			better, err = w.compare(op, k, bestKey, 0)
		}
		if err != nil {
			if errors.Is(err, errValueDepth) {
				return nil, rs.valueErr(err, name+"()")
			}
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		if better {
			best, bestKey = x, k
		}
	}
	return best, nil
}

// allAny is all() and any(), interruptible over a long iterable.
func (rs *runState) allAny(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var iterable starlark.Iterable
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &iterable); err != nil {
		return nil, err
	}
	want := b.Name() == "any" // the truth value that decides
	w := rs.walker()
	iter := iterable.Iterate()
	defer iter.Done()
	var x starlark.Value
	for iter.Next(&x) {
		if err := w.tick(); err != nil {
			return nil, err
		}
		if bool(x.Truth()) == want {
			return starlark.Bool(want), nil
		}
	}
	return starlark.Bool(!want), nil
}

// listIndex is list.index(x[, start[, end]]) with the bounded comparison.
func (rs *runState) listIndex(l *starlark.List, args starlark.Tuple, kwargs []starlark.Tuple) (int, error) {
	var value, start, end starlark.Value
	if err := starlark.UnpackPositionalArgs("index", args, kwargs, 1, &value, &start, &end); err != nil {
		return 0, err
	}
	n := l.Len()
	lo, err := clampIndex(start, n, 0)
	if err != nil {
		return 0, fmt.Errorf("index: invalid start index: %v", err)
	}
	hi, err := clampIndex(end, n, n)
	if err != nil {
		return 0, fmt.Errorf("index: invalid end index: %v", err)
	}
	w := rs.walker()
	for i := lo; i < hi && i < l.Len(); i++ {
		eq, err := w.compare(syntax.EQL, l.Index(i), value, 0)
		if err != nil {
			return 0, rs.valueErr(err, "list.index()")
		}
		if eq {
			return i, nil
		}
	}
	return -1, nil
}

// clampIndex reads an optional start/end argument of list.index.
func clampIndex(v starlark.Value, n, dflt int) (int, error) {
	if v == nil || v == starlark.None {
		return dflt, nil
	}
	i, err := starlark.AsInt32(v)
	if err != nil {
		return 0, err
	}
	if i < 0 {
		i += n
	}
	return max(0, min(i, n)), nil
}
