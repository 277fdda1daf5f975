package sandbox

// This file bounds the memory a script can take: a rewrite of the syntax
// tree routes every allocation-heavy operator and method through checking
// built-ins that estimate the size of the result from the operands BEFORE
// the allocation happens, and a sampler watches the process heap as a
// backstop for slow growth (see "Why memory is bounded twice" in doc.go).

import (
	"math"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
)

// Names of the checking built-ins the rewrite inserts. They are not
// identifiers, so a script can neither call nor shadow them.
const (
	opBinary  = "<op>"     // <op>(tok, x, y): x tok y
	opGrow    = "<op=>"    // <op=>(tok, x, y): returns y after checking x tok y
	opMethod  = "<method>" // <method>(x, name, args...): x.name(args...)
	opBound   = "<bound>"  // <bound>(x, name): x.name taken as a value
	opCompare = "<cmp>"    // <cmp>(tok, x, y): x tok y for comparisons and in
	opKey     = "<key>"    // <key>(k): k, sized as a dict key
	opSlice   = "<slice>"  // <slice>(x, parts, lo?, hi?, step?): x[lo:hi:step]
)

// hiddenBuiltins are the names above; backtraces leave them out.
var hiddenBuiltins = map[string]bool{opBinary: true, opGrow: true, opMethod: true, opBound: true, opCompare: true, opKey: true, opSlice: true}

// checkedMethods are the methods whose result can be much larger than the
// receiver or arguments.
var checkedMethods = map[string]bool{
	"join": true, "replace": true, "format": true, "extend": true, "append": true, "insert": true,
	"upper": true, "lower": true, "title": true, "capitalize": true,
	"split": true, "rsplit": true, "splitlines": true, "update": true,
	// lazy views whose materialization (list(s.codepoints())) happens in
	// one built-in call that cannot be sized: charged when created
	"elems": true, "codepoints": true, "elem_ords": true, "codepoint_ords": true,
	// a dict's views, made whole
	"items": true, "keys": true, "values": true,
	// methods that compare or hash values (see values.go)
	"index": true, "remove": true, "get": true, "pop": true, "setdefault": true,
}

const (
	wordSize  = 16 // a Value interface
	elemCost  = 32 // a Value in a list plus its boxed header, roughly
	entryCost = 64 // one dict entry (hash table slot, key, value), roughly
)

// rewriteFile rewrites f in place (see the file comment).
func rewriteFile(f *syntax.File) {
	f.Stmts = rwStmts(f.Stmts)
}

// rwStmts rewrites ss; an augmented assignment whose target is not pure
// becomes several statements (see hoistTarget).
func rwStmts(ss []syntax.Stmt) []syntax.Stmt {
	var out []syntax.Stmt
	for i, s := range ss {
		pre, post := rwStmt(s)
		if pre == nil && post == nil && out == nil {
			continue
		}
		if out == nil {
			out = append(out, ss[:i]...)
		}
		out = append(out, pre...)
		out = append(out, s)
		out = append(out, post...)
	}
	if out == nil {
		return ss
	}
	return out
}

// rwStmt rewrites s in place, returning the statements to run before it
// and after it (only for an augmented assignment to a target that is not
// pure).
func rwStmt(s syntax.Stmt) (pre, post []syntax.Stmt) {
	switch s := s.(type) {
	case *syntax.AssignStmt:
		s.LHS = rwTarget(s.LHS)
		s.RHS = rwExpr(s.RHS)
		if s.Op == syntax.EQ {
			growTargets(s.LHS)
		}
		switch s.Op {
		case syntax.PLUS_EQ, syntax.STAR_EQ, syntax.PERCENT_EQ, syntax.PIPE_EQ:
		default:
			return nil, nil
		}
		if !pureTarget(s.LHS) {
			var temps []*syntax.Ident
			s.LHS = hoistTarget(s.LHS, s.OpPos, &pre, &temps)
			for _, t := range temps {
				// drop the references once the statement is done
				post = append(post, &syntax.AssignStmt{OpPos: s.OpPos, Op: syntax.EQ, LHS: &syntax.Ident{NamePos: t.NamePos, Name: t.Name},
					RHS: &syntax.Literal{Token: syntax.INT, TokenPos: s.OpPos, Raw: "0", Value: int64(0)}})
			}
		}
		switch s.Op {
		case syntax.PLUS_EQ, syntax.STAR_EQ:
			// lists grow in place: check, then let starlark do it
			tok := syntax.PLUS
			if s.Op == syntax.STAR_EQ {
				tok = syntax.STAR
			}
			s.RHS = mkCall(opGrow, s.OpPos, tokLit(tok, s.OpPos), cloneTarget(s.LHS), s.RHS)
		case syntax.PERCENT_EQ:
			// always a new value: t %= y is t = t % y, checked
			s.Op = syntax.EQ
			s.RHS = mkCall(opBinary, s.OpPos, tokLit(syntax.PERCENT, s.OpPos), cloneTarget(s.LHS), s.RHS)
		case syntax.PIPE_EQ:
			s.RHS = mkCall(opGrow, s.OpPos, tokLit(syntax.PIPE, s.OpPos), cloneTarget(s.LHS), s.RHS)
		}
	case *syntax.DefStmt:
		rwParams(s.Params)
		s.Body = rwStmts(s.Body)
	case *syntax.ExprStmt:
		s.X = rwExpr(s.X)
	case *syntax.IfStmt:
		s.Cond = rwExpr(s.Cond)
		s.True = rwStmts(s.True)
		s.False = rwStmts(s.False)
	case *syntax.ForStmt:
		s.Vars = rwTarget(s.Vars)
		growTargets(s.Vars)
		s.X = rwExpr(s.X)
		s.Body = rwStmts(s.Body)
	case *syntax.WhileStmt:
		s.Cond = rwExpr(s.Cond)
		s.Body = rwStmts(s.Body)
	case *syntax.ReturnStmt:
		if s.Result != nil {
			s.Result = rwExpr(s.Result)
		}
	}
	return pre, post
}

// hoistTarget makes an augmented assignment's target pure, so the check
// can read its current value again: the operands of the target's last
// index or field are evaluated first, in starlark's order (the operand,
// then the index), into hidden variables, a name or literal staying as
// it is (no call can rebind it). d[k()] *= 200 was left to starlark
// unchecked and made a 200 MB string under a 48 MiB cap.
func hoistTarget(e syntax.Expr, pos syntax.Position, pre *[]syntax.Stmt, temps *[]*syntax.Ident) syntax.Expr {
	hoist := func(x syntax.Expr) syntax.Expr {
		switch x.(type) {
		case *syntax.Ident, *syntax.Literal:
			return x
		}
		name := "<t" + strconv.Itoa(len(*temps)) + ">"
		t := &syntax.Ident{NamePos: syntax.Start(x), Name: name}
		*temps = append(*temps, t)
		*pre = append(*pre, &syntax.AssignStmt{OpPos: pos, Op: syntax.EQ, LHS: &syntax.Ident{NamePos: t.NamePos, Name: name}, RHS: x})
		return &syntax.Ident{NamePos: t.NamePos, Name: name}
	}
	switch x := e.(type) {
	case *syntax.ParenExpr:
		return hoistTarget(x.X, pos, pre, temps)
	case *syntax.IndexExpr:
		x.X = hoist(x.X)
		x.Y = hoist(x.Y)
	case *syntax.DotExpr:
		x.X = hoist(x.X)
	}
	return e
}

func rwParams(ps []syntax.Expr) {
	for _, p := range ps {
		if b, ok := p.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
			b.Y = rwExpr(b.Y)
		}
	}
}

// rwTarget rewrites only the expressions evaluated inside an assignment
// target (indexes), never the target shape itself.
func rwTarget(e syntax.Expr) syntax.Expr {
	switch x := e.(type) {
	case *syntax.IndexExpr:
		x.X = rwExpr(x.X)
		x.Y = keyed(rwExpr(x.Y))
	case *syntax.DotExpr:
		x.X = rwExpr(x.X)
	case *syntax.TupleExpr:
		for i := range x.List {
			x.List[i] = rwTarget(x.List[i])
		}
	case *syntax.ListExpr:
		for i := range x.List {
			x.List[i] = rwTarget(x.List[i])
		}
	case *syntax.ParenExpr:
		x.X = rwTarget(x.X)
	}
	return e
}

// pureTarget: evaluating the target twice has no side effects and no cost
// worth counting (names, and index/attribute chains of names and literals).
func pureTarget(e syntax.Expr) bool {
	switch x := e.(type) {
	case *syntax.Ident, *syntax.Literal:
		return true
	case *syntax.IndexExpr:
		return pureTarget(x.X) && pureTarget(x.Y)
	case *syntax.DotExpr:
		return pureTarget(x.X)
	case *syntax.ParenExpr:
		return pureTarget(x.X)
	case *syntax.CallExpr:
		// <key>(pure): sizing a key has no side effects
		fn, ok := x.Fn.(*syntax.Ident)
		return ok && fn.Name == opKey && len(x.Args) == 1 && pureTarget(x.Args[0])
	}
	return false
}

// cloneTarget copies a pure target so the tree never shares a node (the
// resolver records bindings on nodes).
func cloneTarget(e syntax.Expr) syntax.Expr {
	switch x := e.(type) {
	case *syntax.Ident:
		return &syntax.Ident{NamePos: x.NamePos, Name: x.Name}
	case *syntax.Literal:
		c := *x
		return &c
	case *syntax.IndexExpr:
		return &syntax.IndexExpr{X: cloneTarget(x.X), Lbrack: x.Lbrack, Y: cloneTarget(x.Y), Rbrack: x.Rbrack}
	case *syntax.DotExpr:
		return &syntax.DotExpr{X: cloneTarget(x.X), Dot: x.Dot, NamePos: x.NamePos, Name: &syntax.Ident{NamePos: x.Name.NamePos, Name: x.Name.Name}}
	case *syntax.ParenExpr:
		return &syntax.ParenExpr{Lparen: x.Lparen, X: cloneTarget(x.X), Rparen: x.Rparen}
	case *syntax.CallExpr:
		fn := x.Fn.(*syntax.Ident)
		return mkCall(fn.Name, fn.NamePos, cloneTarget(x.Args[0]))
	}
	return e
}

func rwExpr(e syntax.Expr) syntax.Expr {
	switch x := e.(type) {
	case nil:
		return nil
	case *syntax.BinaryExpr:
		x.X = rwExpr(x.X)
		x.Y = rwExpr(x.Y)
		switch x.Op {
		case syntax.PLUS:
			// n + 1: a number literal means arithmetic (or a type error),
			// which cannot grow memory; skip the check on the hot path
			if !isNumLit(x.X) && !isNumLit(x.Y) {
				return mkCall(opBinary, x.OpPos, tokLit(x.Op, x.OpPos), x.X, x.Y)
			}
		case syntax.STAR, syntax.PERCENT, syntax.PIPE:
			return mkCall(opBinary, x.OpPos, tokLit(x.Op, x.OpPos), x.X, x.Y)
		case syntax.EQL, syntax.NEQ, syntax.LT, syntax.LE, syntax.GT, syntax.GE, syntax.IN, syntax.NOT_IN:
			// a scalar literal on either side compares flat (or fails
			// at once): `n < 10`, `k == "x"`, `"a" in d`
			if !isScalarLit(x.X) && !isScalarLit(x.Y) {
				return mkCall(opCompare, x.OpPos, tokLit(x.Op, x.OpPos), x.X, x.Y)
			}
		}
	case *syntax.CallExpr:
		for i, a := range x.Args {
			if b, ok := a.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
				b.Y = rwExpr(b.Y)
			} else {
				x.Args[i] = rwExpr(a)
			}
		}
		if d, ok := x.Fn.(*syntax.DotExpr); ok && checkedMethods[d.Name.Name] {
			recv := rwExpr(d.X)
			args := append([]syntax.Expr{recv, strLit(d.Name.Name, d.NamePos)}, x.Args...)
			return &syntax.CallExpr{Fn: &syntax.Ident{NamePos: d.NamePos, Name: opMethod}, Lparen: x.Lparen, Args: args, Rparen: x.Rparen}
		}
		x.Fn = rwExpr(x.Fn)
	case *syntax.UnaryExpr:
		x.X = rwExpr(x.X)
	case *syntax.ParenExpr:
		x.X = rwExpr(x.X)
	case *syntax.DotExpr:
		x.X = rwExpr(x.X)
		if checkedMethods[x.Name.Name] {
			// l.append taken as a value (f = l.append; f(i)): a method
			// that calls the checked one, or it would grow uncharged
			return mkCall(opBound, x.NamePos, x.X, strLit(x.Name.Name, x.NamePos))
		}
	case *syntax.IndexExpr:
		x.X = rwExpr(x.X)
		x.Y = keyed(rwExpr(x.Y))
	case *syntax.SliceExpr:
		// <slice>(x, parts, lo?, hi?, step?), parts telling which of
		// lo, hi and step are given (bits 1, 2, 4)
		args := []syntax.Expr{rwExpr(x.X), nil}
		parts := 0
		for i, p := range []syntax.Expr{x.Lo, x.Hi, x.Step} {
			if p != nil {
				parts |= 1 << i
				args = append(args, rwExpr(p))
			}
		}
		args[1] = &syntax.Literal{Token: syntax.INT, TokenPos: x.Lbrack, Raw: strconv.Itoa(parts), Value: int64(parts)}
		return mkCall(opSlice, x.Lbrack, args...)
	case *syntax.CondExpr:
		x.Cond, x.True, x.False = rwExpr(x.Cond), rwExpr(x.True), rwExpr(x.False)
	case *syntax.ListExpr:
		for i := range x.List {
			x.List[i] = rwExpr(x.List[i])
		}
	case *syntax.TupleExpr:
		for i := range x.List {
			x.List[i] = rwExpr(x.List[i])
		}
	case *syntax.DictExpr:
		for _, it := range x.List {
			if de, ok := it.(*syntax.DictEntry); ok {
				de.Key, de.Value = keyed(rwExpr(de.Key)), rwExpr(de.Value)
			}
		}
	case *syntax.LambdaExpr:
		rwParams(x.Params)
		x.Body = rwExpr(x.Body)
	case *syntax.Comprehension:
		x.Body = rwExpr(x.Body)
		if de, ok := x.Body.(*syntax.DictEntry); ok {
			de.Key, de.Value = keyed(rwExpr(de.Key)), rwExpr(de.Value)
		}
		for _, c := range x.Clauses {
			switch c := c.(type) {
			case *syntax.ForClause:
				c.Vars = rwTarget(c.Vars)
				growTargets(c.Vars)
				c.X = rwExpr(c.X)
			case *syntax.IfClause:
				c.Cond = rwExpr(c.Cond)
			}
		}
		return rwComprehension(x)
	}
	return e
}

// isScalarLit: a number, string or bytes literal.
func isScalarLit(e syntax.Expr) bool {
	if u, ok := e.(*syntax.UnaryExpr); ok && (u.Op == syntax.MINUS || u.Op == syntax.PLUS) {
		e = u.X
	}
	l, ok := e.(*syntax.Literal)
	return ok && (l.Token == syntax.INT || l.Token == syntax.FLOAT || l.Token == syntax.STRING || l.Token == syntax.BYTES)
}

// keyed wraps an index or dict key in <key>() unless it is a literal.
func keyed(e syntax.Expr) syntax.Expr {
	if e == nil || isScalarLit(e) {
		return e
	}
	return mkCall(opKey, syntax.Start(e), e)
}

func isNumLit(e syntax.Expr) bool {
	l, ok := e.(*syntax.Literal)
	return ok && (l.Token == syntax.INT || l.Token == syntax.FLOAT)
}

func mkCall(fn string, pos syntax.Position, args ...syntax.Expr) *syntax.CallExpr {
	return &syntax.CallExpr{Fn: &syntax.Ident{NamePos: pos, Name: fn}, Lparen: pos, Args: args, Rparen: pos}
}

func tokLit(t syntax.Token, pos syntax.Position) *syntax.Literal {
	return &syntax.Literal{Token: syntax.INT, TokenPos: pos, Raw: "0", Value: int64(t)}
}

func strLit(s string, pos syntax.Position) *syntax.Literal {
	return &syntax.Literal{Token: syntax.STRING, TokenPos: pos, Raw: "\"" + s + "\"", Value: s}
}

// ---- size estimates ----

// shallowSize estimates the bytes a value's own storage takes (not what it
// shares with others).
func shallowSize(v starlark.Value) int64 {
	switch x := v.(type) {
	case starlark.String:
		return int64(len(x))
	case starlark.Bytes:
		return int64(len(x))
	case starlark.Int:
		if _, ok := x.Int64(); ok {
			return 8
		}
		return int64(x.BigInt().BitLen()/8 + 8)
	case *starlark.List:
		return int64(x.Len()) * elemCost
	case starlark.Tuple:
		return int64(len(x)) * elemCost
	case *starlark.Dict:
		return int64(x.Len()) * entryCost
	case *starlark.Set:
		return int64(x.Len()) * entryCost
	}
	return wordSize
}

// reprSize estimates len(str(v)), stopping once it passes budget (so a
// value that shares itself exponentially costs at most budget work).
func reprSize(v starlark.Value, budget int64) int64 {
	var n int64
	var walk func(v starlark.Value, depth int)
	walk = func(v starlark.Value, depth int) {
		if n > budget {
			return
		}
		if depth > maxJSONDepth {
			n += 16
			return
		}
		switch x := v.(type) {
		case starlark.String:
			n += quotedLen(string(x))
		case starlark.Bytes:
			n += int64(len(x))*4 + 3
		case starlark.Int:
			if _, ok := x.Int64(); ok {
				n += 20
			} else {
				n += int64(x.BigInt().BitLen()/3 + 1)
			}
		case starlark.Bool, starlark.NoneType:
			n += 5
		case starlark.Float:
			n += 24
		case *starlark.List, starlark.Tuple, *starlark.Dict, *starlark.Set:
			n += 2
			it := x.(starlark.Iterable).Iterate()
			defer it.Done()
			m, _ := x.(*starlark.Dict)
			var e starlark.Value
			for it.Next(&e) && n <= budget {
				walk(e, depth+1)
				n += 2
				if m != nil {
					if val, found, _ := m.Get(e); found {
						walk(val, depth+1)
					}
				}
			}
		case *starlarkstruct.Struct:
			n += 8
			for _, name := range x.AttrNames() {
				n += int64(len(name)) + 3
				fv, _ := x.Attr(name)
				if fv != nil {
					walk(fv, depth+1)
				}
			}
		default:
			n += 64
		}
	}
	walk(v, 0)
	return n
}

// quotedLen bounds the length of s quoted as repr quotes it: escapes make
// a byte up to four ("\x00"), a rune up to ten ("\U0001f600" for one not
// printable), so len(s)+2 alone let repr("\x00" * n) allocate four times
// its charge. ASCII text costs one pass over its bytes.
func quotedLen(s string) int64 {
	n := int64(len(s)) + 2
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return n + nonASCIIQuoted(s[i:]) - int64(len(s)-i)
		}
		n += asciiQuoted(c) - 1
	}
	return n
}

// asciiQuoted is the quoted length of an ASCII byte.
func asciiQuoted(c byte) int64 {
	switch {
	case c == '"' || c == '\\' || c == '\n' || c == '\t' || c == '\r' || c == '\a' || c == '\b' || c == '\f' || c == '\v':
		return 2
	case c < 0x20 || c == 0x7f:
		return 4 // \xNN
	}
	return 1
}

// nonASCIIQuoted bounds the quoted length of s, rune by rune.
func nonASCIIQuoted(s string) int64 {
	var n int64
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 4 // \xNN
		case r < utf8.RuneSelf:
			n += asciiQuoted(byte(r))
		case strconv.IsPrint(r):
			n += int64(size)
		default:
			n += 10 // \UXXXXXXXX at the most
		}
		i += size
	}
	return n
}

// builderPeak is the memory a result of est bytes built by many writes
// to a strings.Builder takes at its peak: the last growth holds the old
// buffer and a new one 1.25 times as large (Go's append growth), 2.25
// times the result, beside the earlier buffers not yet collected (five
// times the result allocated in all); measured, three times the result.
// Formatting left to starlark-go (% or str.format of a form the planners
// do not build themselves, or that fails) is charged that.
func builderPeak(est int64) int64 {
	if est > math.MaxInt64/3 {
		return math.MaxInt64
	}
	return 3 * est
}

// binaryEstimate estimates the bytes `x op y` allocates.
func binaryEstimate(op syntax.Token, x, y starlark.Value, budget int64) int64 {
	switch op {
	case syntax.PLUS:
		switch x.(type) {
		case starlark.String, starlark.Bytes, *starlark.List, starlark.Tuple:
			return shallowSize(x) + shallowSize(y)
		}
	case syntax.STAR:
		seq, n := x, y
		if _, ok := x.(starlark.Int); ok {
			seq, n = y, x
		}
		if k, ok := n.(starlark.Int); ok {
			if _, isInt := seq.(starlark.Int); isInt {
				return shallowSize(seq) + shallowSize(n)
			}
			switch seq.(type) {
			case starlark.String, starlark.Bytes, *starlark.List, starlark.Tuple:
			default:
				return 0 // float * int and friends: arithmetic
			}
			c, ok := k.Int64()
			if !ok {
				return math.MaxInt64
			}
			if c <= 0 {
				return 0
			}
			s := shallowSize(seq)
			if s > 0 && c > math.MaxInt64/s {
				return math.MaxInt64
			}
			return s * c
		}
	case syntax.PIPE:
		// dict | dict: a new dict of both; dict |= dict adds to it
		if a, ok := x.(*starlark.Dict); ok {
			if b, ok := y.(*starlark.Dict); ok {
				return int64(a.Len()+b.Len()) * entryCost
			}
		}
	case syntax.PERCENT:
		if f, ok := x.(starlark.String); ok {
			// "%(a)s" * 300 % {"a": s} prints s 300 times: every
			// directive may print the largest argument
			// A container argument is rendered first (percentArgs): a
			// copy of its text lives beside the result.
			var total, largest, named, rendered int64
			arg := func(e starlark.Value) {
				n := reprSize(e, budget)
				total, largest = total+n, max(largest, n)
				if isContainer(e) {
					rendered += n
				}
			}
			switch a := y.(type) {
			case starlark.Tuple:
				for _, e := range a {
					arg(e)
				}
			case *starlark.Dict:
				for _, e := range a.Entries() {
					arg(e)
				}
				named = int64(strings.Count(string(f), "%("))
			default:
				arg(y)
			}
			// built in one buffer of its size (planPercent)
			return sumCapped(sumCapped(int64(len(f)), reuse(named, total, largest)), rendered)
		}
	}
	return 0
}

// sumCapped is a+b for non-negative a and b, at most math.MaxInt64.
func sumCapped(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// reuse bounds what a format string prints from its arguments: each
// argument once, plus the largest one again for every directive that
// names its argument (mark: "%(" or "{name"), since only those can print
// an argument twice.
func reuse(named, total, largest int64) int64 {
	if largest > 0 && named > (math.MaxInt64-total)/largest {
		return math.MaxInt64
	}
	return total + named*largest
}

// namedFields counts the fields of a str.format string that name or
// number their argument ("{0}", "{x}"), as opposed to "{}" and "{!r}".
func namedFields(f string) int64 {
	var n int64
	for i := 0; i < len(f); i++ {
		if f[i] != '{' {
			continue
		}
		if i+1 < len(f) && f[i+1] == '{' {
			i++ // "{{" is a literal brace
			continue
		}
		if i+1 < len(f) && f[i+1] != '}' && f[i+1] != '!' && f[i+1] != ':' {
			n++
		}
	}
	return n
}

// methodEstimate estimates the bytes recv.name(args...) allocates.
func methodEstimate(recv starlark.Value, name string, args starlark.Tuple, kwargs []starlark.Tuple, budget int64) int64 {
	switch name {
	case "join":
		sep, ok := recv.(starlark.String)
		if !ok || len(args) != 1 {
			return 0
		}
		var it starlark.Iterable
		switch x := args[0].(type) {
		case *starlark.List:
			it = x
		case starlark.Tuple:
			it = x
		case *starlark.Dict:
			it = x
		default:
			// iterated once, charged as it grows (joinGrowing)
			return 0
		}
		var n, count int64
		iter := it.Iterate()
		defer iter.Done()
		var e starlark.Value
		for iter.Next(&e) && n <= budget {
			if s, ok := e.(starlark.String); ok {
				n += int64(len(s))
			}
			count++
			if count > 1 {
				n += int64(len(sep))
			}
		}
		return n
	case "replace":
		s, ok := recv.(starlark.String)
		if !ok || len(args) < 2 {
			return 0
		}
		old, ok1 := args[0].(starlark.String)
		nw, ok2 := args[1].(starlark.String)
		if !ok1 || !ok2 {
			return 0
		}
		grow := int64(len(nw)) - int64(len(old))
		if grow <= 0 {
			return int64(len(s))
		}
		count := int64(strings.Count(string(s), string(old)))
		return int64(len(s)) + count*grow
	case "format":
		s, ok := recv.(starlark.String)
		if !ok {
			return 0
		}
		// "{0}" * 300 prints its argument 300 times; a container
		// argument is rendered first (preRender), a copy beside the result
		var total, largest, rendered int64
		arg := func(e starlark.Value) {
			n := reprSize(e, budget)
			total, largest = total+n, max(largest, n)
			if isContainer(e) {
				rendered += n
			}
		}
		for _, a := range args {
			arg(a)
		}
		for _, kv := range kwargs {
			arg(kv[1])
		}
		// built in one buffer of its size (planFormat)
		return sumCapped(sumCapped(int64(len(s)), reuse(namedFields(string(s)), total, largest)), rendered)
	case "upper", "lower", "title", "capitalize":
		// built in one buffer of its exact size (caseCopy)
		if s, ok := recv.(starlark.String); ok {
			return caseSize(name, string(s))
		}
	case "split", "rsplit", "splitlines":
		s, ok := recv.(starlark.String)
		if !ok {
			return 0
		}
		parts := int64(len(s))/2 + 1 // whitespace split: at most every other byte starts a field
		if len(args) > 0 {
			if sep, ok := args[0].(starlark.String); ok && len(sep) > 0 {
				parts = int64(strings.Count(string(s), string(sep))) + 1
			}
		}
		if name == "splitlines" {
			parts = int64(strings.Count(string(s), "\n")) + 1
		}
		return int64(len(s)) + parts*elemCost
	case "elems", "codepoints", "elem_ords", "codepoint_ords":
		switch x := recv.(type) {
		case starlark.String:
			return int64(len(x)) * elemCost
		case starlark.Bytes:
			return int64(len(x)) * elemCost
		}
	case "extend":
		if l, ok := recv.(*starlark.List); ok && len(args) == 1 {
			n := int64(l.Len())
			if sq, ok := args[0].(starlark.Sequence); ok {
				n += int64(sq.Len())
			}
			return n * elemCost
		}
	case "items", "keys", "values":
		// a list of n, and for items n pairs (measured: 96 bytes an
		// entry for items, 16 for keys, up to 72 for values that are
		// boxed again)
		if d, ok := recv.(*starlark.Dict); ok && len(args) == 0 {
			per := int64(elemCost)
			switch name {
			case "items":
				per = 4 * elemCost
			case "values":
				per = 3 * elemCost
			}
			return int64(d.Len()) * per
		}
	case "update":
		if d, ok := recv.(*starlark.Dict); ok {
			n := int64(d.Len())
			if len(args) == 1 {
				if sq, ok := args[0].(starlark.Sequence); ok {
					n += int64(sq.Len())
				}
			}
			n += int64(len(kwargs))
			return n * entryCost
		}
	}
	return 0
}

// ---- heap sampler ----

// heapSampler watches the process heap while a run is active.
type heapSampler struct {
	base    uint64
	limit   int64
	growth  atomic.Int64 // latest sample: heap bytes above base
	peak    atomic.Int64
	stop    chan struct{}
	done    chan struct{}
	samples []metrics.Sample
	onLimit func(growth int64)

	mu     sync.Mutex // guards lastGC and samples
	lastGC time.Time
}

const heapMetric = "/memory/classes/heap/objects:bytes"

// samplerInterval is how often the backstop looks at the heap. A read of
// one runtime/metrics value costs well under a microsecond and does not
// stop the world.
const samplerInterval = time.Millisecond

func newHeapSampler(limit int64, onLimit func(int64)) *heapSampler {
	h := &heapSampler{limit: limit, stop: make(chan struct{}), done: make(chan struct{}), onLimit: onLimit,
		samples: []metrics.Sample{{Name: heapMetric}}}
	h.base = h.read()
	go h.loop()
	return h
}

func (h *heapSampler) read() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	metrics.Read(h.samples)
	if h.samples[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return h.samples[0].Value.Uint64()
}

func (h *heapSampler) sample() int64 {
	cur := h.read()
	g := int64(0)
	if cur > h.base {
		g = int64(cur - h.base)
	}
	h.growth.Store(g)
	if g > h.peak.Load() {
		h.peak.Store(g)
	}
	return g
}

// recheck is called when a sample is over the limit: the heap may be
// mostly garbage (the collector paces itself on the whole process, and its
// goal may be far above this run's limit), so collect, at most every
// minGCGap, and sample again.
func (h *heapSampler) recheck() int64 {
	h.mu.Lock()
	due := time.Since(h.lastGC) >= minGCGap
	if due {
		h.lastGC = time.Now()
	}
	h.mu.Unlock()
	if due {
		runtime.GC()
	}
	return h.sample()
}

// minGCGap bounds how often a run near its limit forces a collection.
const minGCGap = 10 * time.Millisecond

func (h *heapSampler) loop() {
	defer close(h.done)
	t := time.NewTicker(samplerInterval)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		g := h.sample()
		if g <= h.limit {
			continue
		}
		// Far over (4x): stop now to protect the process. Otherwise
		// collect and look again before blaming the script.
		if g <= 4*h.limit {
			if g = h.recheck(); g <= h.limit {
				continue
			}
		}
		h.onLimit(g)
		return
	}
}

func (h *heapSampler) close() {
	close(h.stop)
	<-h.done
}
