package sandbox

// This file holds the tool-calling built-ins: module functions
// (`db.query(sql=...)`, raise on failure), call() (errors as values) and
// parallel() (bounded fan-out).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// prepared is one call ready to go to the host.
type prepared struct {
	ti   *toolInfo
	args []byte
	err  *scriptErr // set if the call must not be made
	cap  string     // as named by the script (for records of bad calls)
}

// rawOut is what a host call produced; written by the calling goroutine.
type rawOut struct {
	raw     []byte
	ms      int64
	err     error
	release func() // CallResult.Release: raw is not read after it
}

// outcome is a finished call as the script sees it.
type outcome struct {
	value, content starlark.Value
	err            *scriptErr
}

// toolBuiltin implements every module function; b.Name() is "module.fn".
func (rs *runState) toolBuiltin(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	ti := rs.byFn[b.Name()]
	d, err := argDict(b.Name(), args, kwargs, ti)
	if err != nil {
		return nil, err
	}
	if err := rs.count(1); err != nil {
		return nil, err
	}
	p := rs.prepare(ti, ti.capability, d)
	if p.err != nil {
		rs.record(p, rawOut{}, p.err)
		return nil, p.err
	}
	ro := rs.invoke(rs.ctx, p)
	o := rs.finish(p, ro)
	if o.err != nil {
		return nil, o.err
	}
	return o.value, nil
}

// argDict merges an optional single positional dict with keyword
// arguments. A keyword that is the mangled form of a declared property
// name (max_results for "max-results") is renamed back.
func argDict(fn string, args starlark.Tuple, kwargs []starlark.Tuple, ti *toolInfo) (*starlark.Dict, error) {
	d := starlark.NewDict(len(kwargs))
	switch len(args) {
	case 0:
	case 1:
		src, ok := args[0].(*starlark.Dict)
		if !ok {
			return nil, fmt.Errorf("%s takes keyword arguments (or one dict of arguments), got a positional %s", fn, args[0].Type())
		}
		for _, kv := range src.Items() {
			_ = d.SetKey(kv[0], kv[1])
		}
	default:
		return nil, fmt.Errorf("%s takes keyword arguments (or one dict of arguments), got %d positional arguments", fn, len(args))
	}
	for _, kv := range kwargs {
		name := string(kv[0].(starlark.String))
		if ti != nil && ti.schema.prop(name) == nil {
			for _, p := range ti.schema.props {
				if Ident(p.name) == name {
					name = p.name
					break
				}
			}
		}
		_ = d.SetKey(starlark.String(name), kv[1])
	}
	return d, nil
}

// count reserves n calls against MaxCalls.
func (rs *runState) count(n int) error {
	if rs.ncalls+n > rs.lim.MaxCalls {
		e := limitErr(LimitCalls, "the run would make more than maxCalls %d tool calls (%d made so far, %d more requested)", rs.lim.MaxCalls, rs.ncalls, n)
		rs.trip(e)
		return e
	}
	rs.ncalls += n
	return nil
}

// prepare validates and encodes one call (on the Starlark goroutine).
func (rs *runState) prepare(ti *toolInfo, capName string, args *starlark.Dict) prepared {
	p := prepared{ti: ti, cap: capName}
	if ti == nil {
		p.err = &scriptErr{kind: KindRuntime, capability: capName, msg: rs.unknownCapability(capName)}
		return p
	}
	if err := ti.schema.validateArgs(ti.fn, args); err != nil {
		p.err = &scriptErr{kind: KindRuntime, capability: ti.capability, msg: err.Error(), remedy: "signature: " + signatureAs(ti.fn, ti.tool)}
		return p
	}
	b, err := toJSON(args, rs.lim.MaxOutputBytes)
	if err != nil {
		p.err = &scriptErr{kind: KindRuntime, capability: ti.capability, msg: ti.fn + ": arguments cannot be sent as JSON: " + err.Error()}
		return p
	}
	p.args = b
	return p
}

func (rs *runState) unknownCapability(c string) string {
	for fn, hc := range rs.names.hidden {
		if hc == c {
			return hiddenError(fn, c)
		}
	}
	caps := make([]string, 0, len(rs.tools))
	for k := range rs.tools {
		caps = append(caps, k)
	}
	msg := fmt.Sprintf("unknown tool %q (capabilities are \"<server>__<tool>\")", c)
	if best := closest(c, caps); best != "" {
		msg += fmt.Sprintf("; did you mean %q?", best)
	}
	return msg
}

// invoke calls the host; safe on any goroutine.
func (rs *runState) invoke(ctx context.Context, p prepared) (out rawOut) {
	t0 := time.Now()
	defer func() {
		if r := recover(); r != nil {
			out = rawOut{ms: time.Since(t0).Milliseconds(), err: fmt.Errorf("the host panicked")}
		}
	}()
	r, err := rs.host.Call(ctx, p.ti.capability, p.args)
	return rawOut{raw: r.Raw, ms: time.Since(t0).Milliseconds(), err: err, release: r.Release}
}

// finish converts a host result on the Starlark goroutine and records it.
func (rs *runState) finish(p prepared, ro rawOut) outcome {
	var o outcome
	switch {
	case ro.err != nil:
		if rs.ctx.Err() != nil {
			rs.tripCtx()
		}
		if t := rs.tripped.Load(); t != nil {
			o.err = t
		} else {
			o.err = hostScriptErr(p.ti.capability, ro.err)
		}
	case len(ro.raw) > rs.lim.MaxResultBytes:
		o.err = limitErr(LimitResultBytes, "%s returned %s, over maxResultBytes %s", p.ti.capability, fmtBytes(int64(len(ro.raw))), fmtBytes(int64(rs.lim.MaxResultBytes)))
		o.err.capability = p.ti.capability
	default:
		if err := rs.charge(int64(len(ro.raw))*4, "the result of "+p.ti.capability); err != nil {
			o.err = err.(*scriptErr)
			break
		}
		// counted as built: a result of small objects takes up to 200
		// times its text (see decodeJSON)
		budget := rs.memBudget()
		v, _, err := decodeJSON(ro.raw, max(budget, 1))
		if errors.Is(err, errDecodeBudget) {
			o.err = rs.overBudget(budget, "the result of "+p.ti.capability)
			break
		}
		if err != nil {
			o.err = &scriptErr{kind: KindTool, capability: p.ti.capability, msg: p.ti.capability + ": the tool returned invalid JSON: " + err.Error()}
			break
		}
		o = interpret(p.ti.capability, v)
	}
	rs.record(p, ro, o.err)
	if ro.release != nil {
		ro.release() // converted: the Starlark value holds copies
	}
	return o
}

func (rs *runState) record(p prepared, ro rawOut, err *scriptErr) {
	c := p.cap
	if p.ti != nil {
		c = p.ti.capability
	}
	r := CallRecord{Capability: c, Ms: ro.ms, OK: err == nil, Bytes: len(ro.raw)}
	if err != nil {
		r.Error = clip(err.msg, 300)
	}
	rs.calls = append(rs.calls, r)
}

// interpret applies the return-value rule to a decoded MCP result:
// structuredContent when present; else the text (one text item -> str,
// several -> list of str); else the list of content dicts. isError: true
// becomes a tool error carrying the text.
func interpret(capability string, v starlark.Value) outcome {
	d, ok := v.(*starlark.Dict)
	if !ok {
		return outcome{err: &scriptErr{kind: KindTool, capability: capability, msg: capability + ": the tool result is not an object"}}
	}
	get := func(k string) starlark.Value {
		x, found, _ := d.Get(starlark.String(k))
		if !found {
			return nil
		}
		return x
	}
	content := get("content")
	if content == nil {
		content = starlark.NewList(nil)
	}
	var texts []starlark.Value
	allText := true
	if l, ok := content.(*starlark.List); ok {
		for i := 0; i < l.Len(); i++ {
			item, _ := l.Index(i).(*starlark.Dict)
			if item == nil {
				allText = false
				continue
			}
			t, _, _ := item.Get(starlark.String("type"))
			tx, _, _ := item.Get(starlark.String("text"))
			if t == starlark.String("text") && tx != nil {
				if _, isStr := tx.(starlark.String); isStr {
					texts = append(texts, tx)
					continue
				}
			}
			allText = false
		}
	}
	if isErr, _ := get("isError").(starlark.Bool); isErr {
		parts := make([]string, 0, len(texts))
		for _, t := range texts {
			parts = append(parts, string(t.(starlark.String)))
		}
		msg := strings.Join(parts, "\n")
		if msg == "" {
			msg = "the tool reported an error without a message"
		}
		return outcome{content: content, err: &scriptErr{kind: KindTool, capability: capability, msg: capability + ": " + clip(msg, 2000)}}
	}
	if sc := get("structuredContent"); sc != nil && sc != starlark.None {
		return outcome{value: sc, content: content}
	}
	switch {
	case allText && len(texts) == 1:
		return outcome{value: texts[0], content: content}
	case allText && len(texts) > 1:
		return outcome{value: starlark.NewList(texts), content: content}
	case allText:
		return outcome{value: starlark.None, content: content}
	}
	return outcome{value: content, content: content}
}

// resultStruct is the value call() and parallel() return.
func resultStruct(o outcome) *starlarkstruct.Struct {
	d := starlark.StringDict{
		"ok": starlark.Bool(o.err == nil), "value": starlark.None, "error": starlark.None,
		"kind": starlark.None, "content": starlark.None,
	}
	if o.value != nil {
		d["value"] = o.value
	}
	if o.content != nil {
		d["content"] = o.content
	}
	if o.err != nil {
		d["error"] = starlark.String(o.err.msg)
		kind := string(o.err.kind)
		if o.err.limit != "" {
			kind += ":" + o.err.limit
		}
		d["kind"] = starlark.String(kind)
	}
	return starlarkstruct.FromStringDict(starlarkstruct.Default, d)
}

// target resolves a capability string or a tool function value.
func (rs *runState) target(v starlark.Value) (*toolInfo, string) {
	switch x := v.(type) {
	case starlark.String:
		return rs.tools[string(x)], string(x)
	case *starlark.Builtin:
		if ti := rs.byFn[x.Name()]; ti != nil {
			return ti, ti.capability
		}
		return nil, x.Name()
	}
	if isFlat(v) {
		return nil, v.String()
	}
	return nil, "a " + v.Type() // never printed whole: it may be huge or deep
}

// call(tool, args=None, **kwargs) -> struct(ok, value, error, kind, content)
//
// tool is a capability "server__tool" or a tool function (db.query). It
// never raises for a tool failure, a refusal or bad arguments; it raises
// only when a run limit is hit.
func (rs *runState) callBuiltin(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) < 1 || len(args) > 2 {
		return nil, fmt.Errorf("call: want call(tool, args={}, **kwargs), got %d positional arguments", len(args))
	}
	ti, capName := rs.target(args[0])
	d, err := argDict("call", args[1:], kwargs, ti)
	if err != nil {
		return nil, err
	}
	if err := rs.count(1); err != nil {
		return nil, err
	}
	p := rs.prepare(ti, capName, d)
	if p.err != nil {
		rs.record(p, rawOut{}, p.err)
		return resultStruct(outcome{err: p.err}), nil
	}
	o := rs.finish(p, rs.invoke(rs.ctx, p))
	if o.err != nil && (o.err.kind == KindLimit && o.err.limit != LimitResultBytes || o.err.kind == KindCancelled) {
		return nil, o.err
	}
	return resultStruct(o), nil
}

// parallel(calls, limit=8) -> list of struct(ok, value, error, kind, content)
//
// calls is a list of {"tool": t, "args": {...}} dicts (also spelled
// {"capability": t, "arguments": {...}}, as the call tool's arguments are)
// or (t, {...}) tuples, t as for call(). At most `limit` (capped by Limits.MaxConcurrency)
// calls run at once, and never more than the host allows per server.
// Results come back in input order. Like call(), it raises only for limits.
func (rs *runState) parallelBuiltin(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var items starlark.Iterable
	limit := rs.lim.MaxConcurrency
	if err := starlark.UnpackArgs("parallel", args, kwargs, "calls", &items, "limit?", &limit); err != nil {
		return nil, err
	}
	if limit < 1 {
		return nil, fmt.Errorf("parallel: limit must be at least 1, got %d", limit)
	}
	if limit > rs.lim.MaxConcurrency {
		limit = rs.lim.MaxConcurrency
	}
	var ps []prepared
	iter := items.Iterate()
	defer iter.Done()
	var it starlark.Value
	for i := 0; iter.Next(&it); i++ {
		tv, av, err := splitItem(it)
		if err != nil {
			return nil, fmt.Errorf("parallel: item %d: %v", i, err)
		}
		ti, capName := rs.target(tv)
		var a starlark.Tuple
		if av != nil && av != starlark.None {
			a = starlark.Tuple{av}
		}
		d, err := argDict("parallel", a, nil, ti)
		if err != nil {
			return nil, fmt.Errorf("parallel: item %d: %v", i, err)
		}
		ps = append(ps, rs.prepare(ti, capName, d))
	}
	if err := rs.count(len(ps)); err != nil {
		return nil, err
	}
	outs := make([]rawOut, len(ps))
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	ctx := rs.ctx
loop:
	for i := range ps {
		if ps[i].err != nil {
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break loop
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			ss := rs.serverSem(ps[i].ti.server)
			select {
			case ss <- struct{}{}:
			case <-ctx.Done():
				outs[i] = rawOut{err: ctx.Err()}
				return
			}
			outs[i] = rs.invoke(ctx, ps[i])
			<-ss
		}(i)
	}
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
		// The host must honour ctx; do not wait for one that does not.
		rs.tripCtx()
		if t := rs.tripped.Load(); t != nil {
			return nil, t
		}
		return nil, ctx.Err()
	}
	if t := rs.tripped.Load(); t != nil {
		return nil, t
	}
	res := make([]starlark.Value, len(ps))
	for i, p := range ps {
		var o outcome
		if p.err != nil {
			rs.record(p, rawOut{}, p.err)
			o.err = p.err
		} else {
			o = rs.finish(p, outs[i])
			if o.err != nil && o.err.kind == KindLimit && o.err.limit == LimitMemory {
				return nil, o.err
			}
		}
		res[i] = resultStruct(o)
	}
	return starlark.NewList(res), nil
}

func splitItem(it starlark.Value) (tool, args starlark.Value, err error) {
	switch x := it.(type) {
	case *starlark.Dict:
		// {"tool", "args"}, or the call tool's own spelling
		// {"capability", "arguments"}: a model moving between the two
		// should not trip on the key names.
		t, err := dictAlias(x, "tool", "capability")
		if err != nil {
			return nil, nil, err
		}
		if t == nil {
			return nil, nil, fmt.Errorf(`want {"tool": ..., "args": {...}} (or {"capability": ..., "arguments": {...}}), the dict has neither "tool" nor "capability"`)
		}
		a, err := dictAlias(x, "args", "arguments")
		if err != nil {
			return nil, nil, err
		}
		for _, k := range x.Keys() {
			if ks, ok := k.(starlark.String); !ok || !parallelKeys[string(ks)] {
				return nil, nil, fmt.Errorf(`unknown key %s in a parallel() call dict; use "tool" and "args" (or "capability" and "arguments")`, k.String())
			}
		}
		return t, a, nil
	case starlark.Tuple:
		if len(x) == 1 || len(x) == 2 {
			if len(x) == 1 {
				return x[0], nil, nil
			}
			return x[0], x[1], nil
		}
	case *starlark.List:
		if x.Len() == 1 || x.Len() == 2 {
			if x.Len() == 1 {
				return x.Index(0), nil, nil
			}
			return x.Index(0), x.Index(1), nil
		}
	case starlark.String, *starlark.Builtin:
		return x, nil, nil
	}
	return nil, nil, fmt.Errorf(`want {"tool": ..., "args": {...}} or (tool, args), got %s`, it.Type())
}

var parallelKeys = map[string]bool{"tool": true, "capability": true, "args": true, "arguments": true}

// dictAlias returns d[name] or d[alias] (nil when neither is set); both
// set is an error.
func dictAlias(d *starlark.Dict, name, alias string) (starlark.Value, error) {
	v, ok, _ := d.Get(starlark.String(name))
	w, okAlias, _ := d.Get(starlark.String(alias))
	switch {
	case ok && okAlias:
		return nil, fmt.Errorf("a parallel() call dict has both %q and %q; they mean the same, keep one", name, alias)
	case okAlias:
		return w, nil
	case ok:
		return v, nil
	}
	return nil, nil
}

// serverSem returns the run's semaphore for a server, sized by the host.
func (rs *runState) serverSem(server string) chan struct{} {
	rs.semMu.Lock()
	defer rs.semMu.Unlock()
	s, ok := rs.serverSe[server]
	if !ok {
		n := rs.host.MaxConcurrency(server)
		if n < 1 {
			n = 1
		}
		s = make(chan struct{}, n)
		rs.serverSe[server] = s
	}
	return s
}
