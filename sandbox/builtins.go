package sandbox

// This file defines the script's predeclared names besides the server
// modules: call, parallel, json, struct, elapsed_ms, group_by, the
// memory-checked str/repr/list/tuple/print, and the hidden checking
// built-ins the syntax rewrite inserts.

import (
	"errors"
	"fmt"
	"strings"
	"time"

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
		"group_by":   starlark.NewBuiltin("group_by", groupBy),
		"json": &starlarkstruct.Module{Name: "json", Members: starlark.StringDict{
			"encode": starlark.NewBuiltin("json.encode", rs.jsonEncode),
			"decode": starlark.NewBuiltin("json.decode", rs.jsonDecode),
		}},
		"print":  starlark.NewBuiltin("print", rs.print),
		"str":    rs.sized("str", func(args starlark.Tuple) int64 { return reprArg(args, rs.memBudget()) }),
		"repr":   rs.sized("repr", func(args starlark.Tuple) int64 { return reprArg(args, rs.memBudget()) }),
		"list":   rs.sized("list", seqArg),
		"tuple":  rs.sized("tuple", seqArg),
		opBinary: starlark.NewBuiltin(opBinary, rs.binaryOp),
		opGrow:   starlark.NewBuiltin(opGrow, rs.growOp),
		opMethod: starlark.NewBuiltin(opMethod, rs.methodOp),
	}
	for name, m := range rs.modules {
		d[name] = m
	}
	return d
}

// sized wraps a universal built-in with a size estimate of its result.
func (rs *runState) sized(name string, est func(starlark.Tuple) int64) *starlark.Builtin {
	orig := starlark.Universe[name]
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
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

func (rs *runState) binaryOp(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	op := syntax.Token(mustInt(args[0]))
	x, y := args[1], args[2]
	if est := binaryEstimate(op, x, y, rs.memBudget()+1); est > 0 {
		if err := rs.chargeFn(est, func() string { return fmt.Sprintf("%s %s %s", x.Type(), op, y.Type()) }); err != nil {
			return nil, err
		}
	}
	if err := rs.checkIntMul(op, x, y); err != nil {
		return nil, err
	}
	return starlark.Binary(op, x, y)
}

// maxIntBits bounds integer products: multiplying two huge integers takes
// long enough inside one step to escape the timeout.
const maxIntBits = 1 << 19

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

func (rs *runState) methodOp(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	recv := args[0]
	name := string(args[1].(starlark.String))
	rest := args[2:]
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
	if est := methodEstimate(recv, name, rest, kwargs, rs.memBudget()+1); est > 0 {
		if err := rs.chargeFn(est, func() string { return recv.Type() + "." + name + "()" }); err != nil {
			return nil, err
		}
	}
	return starlark.Call(thread, m, rest, kwargs)
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
			buf.WriteString(a.String())
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
	budget := rs.memBudget()
	if err := rs.charge(reprSize(x, budget+1), "json.encode()"); err != nil {
		return nil, err
	}
	out, err := toJSON(x, int(min(budget, 1<<40)))
	if err != nil {
		var tb *errTooBig
		if errors.As(err, &tb) {
			return nil, rs.charge(budget+1, "json.encode")
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
	v, err := fromJSON([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("json.decode: %v", err)
	}
	return v, nil
}

// group_by(iterable, key) -> dict mapping key(x) to the list of x, in
// first-seen order.
func groupBy(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var it starlark.Iterable
	var key starlark.Callable
	if err := starlark.UnpackArgs("group_by", args, kwargs, "iterable", &it, "key", &key); err != nil {
		return nil, err
	}
	out := starlark.NewDict(0)
	iter := it.Iterate()
	defer iter.Done()
	var x starlark.Value
	for iter.Next(&x) {
		k, err := starlark.Call(thread, key, starlark.Tuple{x}, nil)
		if err != nil {
			return nil, err
		}
		cur, found, err := out.Get(k)
		if err != nil {
			return nil, fmt.Errorf("group_by: key %s: %v", k.Type(), err)
		}
		if !found {
			cur = starlark.NewList(nil)
			if err := out.SetKey(k, cur); err != nil {
				return nil, err
			}
		}
		if err := cur.(*starlark.List).Append(x); err != nil {
			return nil, err
		}
	}
	return out, nil
}
