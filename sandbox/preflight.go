package sandbox

// This file is the static pre-flight: before anything runs, parse and
// resolve the script, find every reference to an unknown tool, every
// unknown or missing keyword argument of a tool call and every literal
// argument that does not fit the input schema, and collect the
// capabilities the script names, so the host can check admission first.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Preflight is what Check found.
type Preflight struct {
	// Capabilities the script names literally (module functions, and
	// string capabilities given to call() or parallel()), sorted.
	Capabilities []string
	// Dynamic is true when some call()/parallel() target is computed at run
	// time, so Capabilities may be incomplete; the host's Call must check
	// admission too (it always should).
	Dynamic bool
}

// Check runs the pre-flight alone (Run does it first anyway). It returns an
// *Error of kind syntax listing every problem, or the capabilities.
func Check(filename, src string, servers []Server) (*Preflight, error) {
	rs := newRunState(nil, staticHost(servers), Limits{})
	pf, e := check(filename, src, rs.names, rs.tools, rs.predeclared().Has)
	if e != nil {
		return nil, e
	}
	return pf, nil
}

// staticHost lets Check reuse newRunState; it is never called.
type staticHost []Server

func (s staticHost) Servers() []Server { return s }
func (staticHost) Admit(string) error  { return nil }
func (staticHost) Call(context.Context, string, json.RawMessage) (CallResult, error) {
	return CallResult{}, nil
}
func (staticHost) MaxConcurrency(string) int { return 1 }

func check(filename, src string, names *Names, tools map[string]*toolInfo, isPredeclared func(string) bool) (*Preflight, *Error) {
	f, err := fileOptions.Parse(filename, src, 0)
	if err != nil {
		return nil, syntaxError(err)
	}
	var problems []Problem
	if err := resolve.File(f, isPredeclared, starlark.Universe.Has); err != nil {
		e := syntaxError(err)
		for _, p := range e.Problems {
			if strings.HasPrefix(p.Message, "undefined: ") {
				name := strings.TrimPrefix(p.Message, "undefined: ")
				mods := sortedKeys(invert(names.Modules))
				if best := closest(name, mods); best != "" {
					p.Message += fmt.Sprintf(" (did you mean server module %s?)", best)
				} else if len(mods) > 0 {
					p.Message += " (server modules: " + strings.Join(mods, ", ") + ")"
				}
			}
			problems = append(problems, p)
		}
		// Keep going: the resolver binds every name it could, so the
		// checks below still find the other problems (a bad keyword
		// argument elsewhere) and the script is fixed in one round.
	}
	mods := map[string]string{} // module name -> server id
	for id, m := range names.Modules {
		mods[m] = id
	}
	caps := map[string]bool{}
	pf := &Preflight{}
	at := func(pos syntax.Position, format string, args ...any) {
		problems = append(problems, Problem{Line: int(pos.Line), Column: int(pos.Col), Message: fmt.Sprintf(format, args...)})
	}
	// toolRef resolves `module.fn` where module is a predeclared server.
	toolRef := func(e syntax.Expr) (*toolInfo, bool) {
		d, ok := e.(*syntax.DotExpr)
		if !ok {
			return nil, false
		}
		id, ok := d.X.(*syntax.Ident)
		if !ok {
			return nil, false
		}
		b, _ := id.Binding.(*resolve.Binding)
		if b == nil || b.Scope != resolve.Predeclared {
			return nil, false
		}
		server, ok := mods[id.Name]
		if !ok {
			return nil, false
		}
		fn := id.Name + "." + d.Name.Name
		for _, ti := range tools {
			if ti.server == server && ti.fn == fn {
				return ti, true
			}
		}
		if c, ok := names.hidden[fn]; ok {
			at(d.Name.NamePos, "%s", hiddenError(fn, c))
			return nil, true
		}
		var known []string
		for _, ti := range tools {
			if ti.server == server {
				known = append(known, strings.TrimPrefix(ti.fn, id.Name+"."))
			}
		}
		sort.Strings(known)
		hint := ""
		if best := closest(d.Name.Name, known); best != "" {
			hint = fmt.Sprintf(" (did you mean %s.%s?)", id.Name, best)
		} else if len(known) > 0 {
			hint = " (tools: " + strings.Join(known, ", ") + ")"
		}
		at(d.Name.NamePos, "server %q has no tool %s%s", server, fn, hint)
		return nil, true
	}
	// capRef resolves a literal capability string or a module function.
	capRef := func(e syntax.Expr) (*toolInfo, bool) {
		if lit, ok := e.(*syntax.Literal); ok && lit.Token == syntax.STRING {
			c, _ := lit.Value.(string)
			if ti, ok := tools[c]; ok {
				return ti, true
			}
			at(lit.TokenPos, "%s", unknownCap(c, tools, names))
			return nil, true
		}
		return toolRef(e)
	}
	isBuiltin := func(e syntax.Expr, name string) bool {
		id, ok := e.(*syntax.Ident)
		if !ok || id.Name != name {
			return false
		}
		b, _ := id.Binding.(*resolve.Binding)
		return b != nil && b.Scope == resolve.Predeclared
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.LoadStmt:
			at(x.Load, "load() is not available: scripts cannot read files; put everything in one script")
		case *syntax.DotExpr:
			if ti, ok := toolRef(x); ok && ti != nil {
				caps[ti.capability] = true
			}
		case *syntax.CallExpr:
			if ti, ok := toolRef(x.Fn); ok && ti != nil {
				checkKwargs(x, x.Args, ti, at)
			}
			if isBuiltin(x.Fn, "call") && len(x.Args) > 0 {
				ti, ok := capRef(x.Args[0])
				if !ok {
					pf.Dynamic = true
				} else if ti != nil {
					caps[ti.capability] = true
					if len(x.Args) > 1 {
						if de, ok := x.Args[1].(*syntax.DictExpr); ok {
							checkDictKeys(de, ti, at)
						}
					}
				}
			}
			if isBuiltin(x.Fn, "parallel") && len(x.Args) > 0 {
				if !parallelTargets(x.Args[0], capRef, caps) {
					pf.Dynamic = true
				}
			}
		}
		return true
	})
	if len(problems) > 0 {
		return nil, preflightError(problems)
	}
	pf.Capabilities = sortedKeys(caps)
	return pf, nil
}

func invert(m map[string]string) map[string]string {
	o := make(map[string]string, len(m))
	for k, v := range m {
		o[v] = k
	}
	return o
}

func unknownCap(c string, tools map[string]*toolInfo, names *Names) string {
	for fn, hc := range names.hidden {
		if hc == c {
			return hiddenError(fn, c)
		}
	}
	caps := sortedKeys(tools)
	msg := fmt.Sprintf("unknown tool %q", c)
	if best := closest(c, caps); best != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", best)
	}
	return msg
}

// parallelTargets collects literal targets of parallel([...]); false if any
// target is computed.
func parallelTargets(e syntax.Expr, capRef func(syntax.Expr) (*toolInfo, bool), caps map[string]bool) bool {
	list, ok := e.(*syntax.ListExpr)
	if !ok {
		return false
	}
	static := true
	for _, item := range list.List {
		var t syntax.Expr
		switch it := item.(type) {
		case *syntax.DictExpr:
			for _, en := range it.List {
				de := en.(*syntax.DictEntry)
				if k, ok := de.Key.(*syntax.Literal); ok && (k.Value == "tool" || k.Value == "capability") {
					t = de.Value
				}
			}
		case *syntax.TupleExpr:
			if len(it.List) > 0 {
				t = it.List[0]
			}
		case *syntax.ParenExpr:
			if tu, ok := it.X.(*syntax.TupleExpr); ok && len(tu.List) > 0 {
				t = tu.List[0]
			}
		}
		if t == nil {
			static = false
			continue
		}
		ti, ok := capRef(t)
		if !ok {
			static = false
		} else if ti != nil {
			caps[ti.capability] = true
		}
	}
	return static
}

type problemFunc func(pos syntax.Position, format string, args ...any)

// checkKwargs checks keyword names of a module-function call.
func checkKwargs(call *syntax.CallExpr, args []syntax.Expr, ti *toolInfo, at problemFunc) {
	s := ti.schema
	given := map[string]bool{}
	complete := true // false if *args / **kwargs / a positional dict may add names
	for _, a := range args {
		switch x := a.(type) {
		case *syntax.BinaryExpr:
			if x.Op == syntax.EQ {
				id := x.X.(*syntax.Ident)
				name := id.Name
				if s.prop(name) == nil {
					for _, p := range s.props {
						if Ident(p.name) == name {
							name = p.name
						}
					}
				}
				given[name] = true
				if ps := s.prop(name); ps == nil && s.strictTop() {
					at(id.NamePos, "%s has no argument %q%s; signature: %s", ti.fn, id.Name, s.suggest(id.Name), signatureAs(ti.fn, ti.tool))
				} else if ps != nil {
					if v, ok := constValue(x.Y, 0); ok {
						if err := ps.validate(v, "argument '"+name+"'"); err != nil {
							at(id.NamePos, "%s: %v", ti.fn, err)
						}
					}
				}
				continue
			}
			complete = false
		case *syntax.DictExpr:
			// one positional dict of arguments: check its literal keys
			for _, en := range x.List {
				e := en.(*syntax.DictEntry)
				k, ok := e.Key.(*syntax.Literal)
				name, isStr := "", false
				if ok {
					name, isStr = k.Value.(string)
				}
				if !isStr {
					complete = false
					continue
				}
				given[name] = true
				if s.prop(name) == nil && s.strictTop() {
					at(k.TokenPos, "%s has no argument %q%s; signature: %s", ti.fn, name, s.suggest(name), signatureAs(ti.fn, ti.tool))
				}
			}
		default:
			complete = false
		}
	}
	if complete && !s.open {
		var missing []string
		for _, r := range s.required {
			if !given[r] {
				missing = append(missing, r)
			}
		}
		if len(missing) > 0 {
			at(call.Lparen, "%s is missing required argument %s; signature: %s", ti.fn, quoteList(missing), signatureAs(ti.fn, ti.tool))
		}
	}
}

// checkDictKeys checks literal keys of call("cap", {...}).
func checkDictKeys(de *syntax.DictExpr, ti *toolInfo, at problemFunc) {
	s := ti.schema
	if !s.strictTop() {
		return
	}
	for _, en := range de.List {
		e := en.(*syntax.DictEntry)
		if k, ok := e.Key.(*syntax.Literal); ok {
			if name, ok := k.Value.(string); ok && s.prop(name) == nil {
				at(k.TokenPos, "%s has no argument %q%s", ti.capability, name, s.suggest(name))
			}
		}
	}
}

func preflightError(problems []Problem) *Error {
	seen := map[Problem]bool{}
	uniq := problems[:0]
	for _, p := range problems {
		if !seen[p] {
			seen[p] = true
			uniq = append(uniq, p)
		}
	}
	problems = uniq
	sort.SliceStable(problems, func(i, j int) bool {
		if problems[i].Line != problems[j].Line {
			return problems[i].Line < problems[j].Line
		}
		return problems[i].Column < problems[j].Column
	})
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = p.String()
	}
	msg := fmt.Sprintf("%d problem(s) found before running: ", len(problems)) + strings.Join(msgs, "; ")
	if len(problems) == 1 {
		msg = problems[0].Message
	}
	return &Error{Kind: KindSyntax, Message: msg, Line: problems[0].Line, Column: problems[0].Column, Problems: problems}
}

// constValue evaluates a literal expression (numbers, strings, True,
// False, None, negation, and lists/tuples/dicts of those) so pre-flight can
// type-check literal arguments. ok is false for anything computed.
func constValue(e syntax.Expr, depth int) (starlark.Value, bool) {
	if depth > 16 {
		return nil, false
	}
	switch x := e.(type) {
	case *syntax.Literal:
		switch v := x.Value.(type) {
		case string:
			if x.Token == syntax.STRING {
				return starlark.String(v), true
			}
		case int64:
			return starlark.MakeInt64(v), true
		case *big.Int:
			return starlark.MakeBigInt(v), true
		case float64:
			return starlark.Float(v), true
		}
	case *syntax.Ident:
		b, _ := x.Binding.(*resolve.Binding)
		if b == nil || b.Scope != resolve.Universal {
			return nil, false
		}
		switch x.Name {
		case "True":
			return starlark.True, true
		case "False":
			return starlark.False, true
		case "None":
			return starlark.None, true
		}
	case *syntax.UnaryExpr:
		if x.Op == syntax.MINUS {
			if v, ok := constValue(x.X, depth+1); ok {
				if n, isNum := v.(starlark.HasUnary); isNum {
					if r, err := n.Unary(syntax.MINUS); err == nil && r != nil {
						return r, true
					}
				}
			}
		}
	case *syntax.ParenExpr:
		return constValue(x.X, depth+1)
	case *syntax.ListExpr:
		elems := make([]starlark.Value, 0, len(x.List))
		for _, el := range x.List {
			v, ok := constValue(el, depth+1)
			if !ok {
				return nil, false
			}
			elems = append(elems, v)
		}
		return starlark.NewList(elems), true
	case *syntax.TupleExpr:
		elems := make(starlark.Tuple, 0, len(x.List))
		for _, el := range x.List {
			v, ok := constValue(el, depth+1)
			if !ok {
				return nil, false
			}
			elems = append(elems, v)
		}
		return elems, true
	case *syntax.DictExpr:
		d := starlark.NewDict(len(x.List))
		for _, en := range x.List {
			de := en.(*syntax.DictEntry)
			k, ok1 := constValue(de.Key, depth+1)
			v, ok2 := constValue(de.Value, depth+1)
			if !ok1 || !ok2 {
				return nil, false
			}
			if err := d.SetKey(k, v); err != nil {
				return nil, false
			}
		}
		return d, true
	}
	return nil, false
}
