package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// fileOptions are the dialect scripts are written in: Python-ish top-level
// control flow, while loops, reassignable globals and (depth-bounded)
// recursion. Set stays off.
var fileOptions = &syntax.FileOptions{
	While:           true,
	TopLevelControl: true,
	GlobalReassign:  true,
	Recursion:       true,
}

// ownNames are the sandbox's predeclared names; server modules avoid them.
var ownNames = map[string]bool{
	"call": true, "parallel": true, "json": true, "struct": true,
	"elapsed_ms": true, "group_by": true, "result": true,
}

func reservedName(name string) bool { return ownNames[name] || starlark.Universe.Has(name) }

type toolInfo struct {
	capability string
	server     string
	tool       Tool
	fn         string // "module.function"
	schema     *schema
}

// runState is the state of one run. Fields without a comment are only
// touched on the Starlark goroutine.
type runState struct {
	ctx     context.Context // the run's context (with the timeout)
	parent  context.Context // the caller's
	host    Host
	lim     Limits
	names   *Names
	tools   map[string]*toolInfo // by capability
	byFn    map[string]*toolInfo // by "module.function"
	modules map[string]*toolModule
	start   time.Time
	thread  *starlark.Thread

	// freeSteps: steps the comprehension and item-assignment rewrites
	// add to what starlark-go executes for the same script, left out of
	// maxSteps and Stats.Steps (see rewriteSteps)
	freeSteps uint64

	logs          []string
	logBytes      int
	logsTruncated bool
	calls         []CallRecord
	ncalls        int
	peakDepth     int

	tripped  atomic.Pointer[scriptErr] // first limit/cancel; written from any goroutine
	heap     *heapSampler
	semMu    sync.Mutex
	serverSe map[string]chan struct{}
}

func newRunState(ctx context.Context, host Host, lim Limits) *runState {
	servers := host.Servers()
	rs := &runState{ctx: ctx, host: host, lim: lim, names: Mangle(servers),
		tools: map[string]*toolInfo{}, byFn: map[string]*toolInfo{}, modules: map[string]*toolModule{},
		serverSe: map[string]chan struct{}{}}
	for _, s := range servers {
		mod := rs.names.Modules[s.ID]
		if _, done := rs.modules[mod]; done {
			continue
		}
		tm := &toolModule{name: mod, server: s.ID, members: starlark.StringDict{}, names: rs.names}
		for _, t := range s.Tools {
			c := s.ID + "__" + t.Name
			if _, dup := rs.tools[c]; dup {
				continue
			}
			fn := rs.names.funcs[s.ID][t.Name]
			ti := &toolInfo{capability: c, server: s.ID, tool: t, fn: mod + "." + fn, schema: parseSchema(t.InputSchema)}
			rs.tools[c] = ti
			rs.byFn[ti.fn] = ti
			tm.members[fn] = starlark.NewBuiltin(ti.fn, rs.toolBuiltin)
		}
		rs.modules[mod] = tm
	}
	return rs
}

// toolModule is a server as a Starlark value: `fs.read_text_file(...)`.
// Unknown attributes get a did-you-mean message.
type toolModule struct {
	name, server string
	members      starlark.StringDict
	names        *Names
}

var _ starlark.HasAttrs = (*toolModule)(nil)

func (m *toolModule) String() string        { return "<server module " + m.name + ">" }
func (m *toolModule) Type() string          { return "module" }
func (m *toolModule) Freeze()               { m.members.Freeze() }
func (m *toolModule) Truth() starlark.Bool  { return true }
func (m *toolModule) Hash() (uint32, error) { return starlark.String(m.name).Hash() }
func (m *toolModule) AttrNames() []string   { return m.members.Keys() }
func (m *toolModule) Attr(name string) (starlark.Value, error) {
	if v, ok := m.members[name]; ok {
		return v, nil
	}
	if c, ok := m.names.hidden[m.name+"."+name]; ok {
		return nil, errors.New(hiddenError(m.name+"."+name, c))
	}
	hint := ""
	if best := closest(name, m.members.Keys()); best != "" {
		hint = fmt.Sprintf(" (did you mean %s.%s?)", m.name, best)
	}
	return nil, fmt.Errorf("server %q has no tool %s.%s%s", m.server, m.name, name, hint)
}

// Run runs one script against host under lim (nil = all defaults). It never
// panics on script input and always returns a Result; a failed run has
// Result.Error set. Before any tool runs, the script is parsed and checked
// (unknown tools and argument names, see Check) and every capability it
// names literally is passed to Host.Admit.
func Run(ctx context.Context, host Host, filename, src string, lim *Limits) *Result {
	return run(ctx, host, filename, src, lim, nil, nil)
}

// run is Run with extra predeclared names and a thread set-up hook (tests
// use them for the starlarktest assert module).
func run(ctx context.Context, host Host, filename, src string, lim *Limits, extra starlark.StringDict, setup func(*starlark.Thread)) *Result {
	start := time.Now()
	res := &Result{Result: json.RawMessage("null"), Logs: []string{}, Calls: []CallRecord{}}
	if host == nil {
		res.Error = &Error{Kind: KindRuntime, Message: errNoHost.Error()}
		return res
	}
	l := lim.withDefaults()
	rs := newRunState(ctx, host, l)
	rs.start = start
	predeclared := rs.predeclared()
	for k, v := range extra {
		predeclared[k] = v
	}

	// 1. Static checks, all problems at once.
	pf, perr := check(filename, src, rs.names, rs.tools, predeclared.Has)
	if perr != nil {
		res.Error = perr
		return res
	}
	// 2. Admission up front, so a tool needing approval is refused before
	// any side effect.
	for _, c := range pf.Capabilities {
		if err := host.Admit(c); err != nil {
			var he *HostError
			if !errors.As(err, &he) {
				err = &HostError{Kind: HostAdmission, Capability: c, Message: clip(err.Error(), 500), Err: err}
			}
			res.Error = hostErrorToError(c, err)
			return res
		}
	}
	// 3. Compile the memory-checked form.
	f, err := fileOptions.Parse(filename, src, 0)
	if err != nil {
		res.Error = syntaxError(err)
		return res
	}
	rewriteFile(f)
	prog, err := starlark.FileProgram(f, predeclared.Has)
	if err != nil {
		res.Error = syntaxError(err)
		return res
	}

	// 4. Run.
	if ctx.Err() != nil {
		rs.parent = ctx
		rs.tripCtx()
		t := rs.tripped.Load()
		res.Error = &Error{Kind: t.kind, Limit: t.limit, Message: t.msg, Remedy: t.remedy}
		return res
	}
	runCtx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	rs.ctx = runCtx
	thread := &starlark.Thread{Name: "sandbox:" + filename}
	rs.thread = thread
	thread.Print = func(_ *starlark.Thread, msg string) { rs.log(msg) }
	thread.OnMaxSteps = rs.hook
	thread.SetMaxExecutionSteps(1) // the hook runs at the first step and re-arms itself
	if setup != nil {
		setup(thread)
	}

	rs.heap = newHeapSampler(l.MaxMemoryBytes, func(g int64) {
		rs.trip(limitErr(LimitMemory, "the run's heap grew by %s, over maxMemoryBytes %s", fmtBytes(g), fmtBytes(l.MaxMemoryBytes)))
	})
	done := make(chan struct{})
	rs.parent = ctx
	go func() {
		select {
		case <-runCtx.Done():
			rs.tripCtx()
		case <-done:
		}
	}()
	globals, err := initSafely(prog, thread, predeclared)
	close(done)
	rs.heap.close()

	if rs.logs != nil {
		res.Logs = rs.logs
	}
	res.LogsTruncated = rs.logsTruncated
	if rs.calls != nil {
		res.Calls = rs.calls
	}
	res.Stats = Stats{Steps: rs.steps(thread), Calls: rs.ncalls, MaxDepth: rs.peakDepth, PeakHeapGrowth: rs.heap.peak.Load()}
	defer func() { res.Stats.ElapsedMs = time.Since(start).Milliseconds() }()
	if err != nil {
		res.Error = rs.classify(err)
		return res
	}
	v, ok := globals["result"]
	if !ok {
		res.Notes = append(res.Notes, "the script did not assign `result`, so the result is null; end the script with `result = ...`")
		return res
	}
	out, err := toJSON(v, l.MaxOutputBytes)
	if err != nil {
		var tb *errTooBig
		if errors.As(err, &tb) {
			se := limitErr(LimitOutputBytes, "`result` is larger than maxOutputBytes %s as JSON", fmtBytes(int64(l.MaxOutputBytes)))
			res.Error = &Error{Kind: KindLimit, Limit: se.limit, Message: se.msg, Remedy: se.remedy}
		} else {
			res.Error = &Error{Kind: KindRuntime, Message: "`result` cannot be returned: " + err.Error(), Remedy: "assign only None, bools, numbers, strings, lists and dicts with string keys"}
		}
		return res
	}
	res.Result = out
	return res
}

// initSafely runs the program; a panic (a bug in a built-in or the
// interpreter) becomes an error instead of taking the gateway down.
func initSafely(prog *starlark.Program, thread *starlark.Thread, predeclared starlark.StringDict) (g starlark.StringDict, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &scriptErr{kind: KindRuntime, msg: "internal error in the sandbox (the script was stopped)"}
		}
	}()
	return prog.Init(thread, predeclared)
}

// tripCtx trips the limit or cancellation that ended the run's context.
func (rs *runState) tripCtx() {
	if errors.Is(rs.parent.Err(), context.Canceled) {
		rs.trip(&scriptErr{kind: KindCancelled, msg: "the run was cancelled by its caller"})
	} else {
		rs.trip(limitErr(LimitTime, "the run took longer than %v (timeoutMs %d)", rs.lim.Timeout, rs.lim.Timeout.Milliseconds()))
	}
}

// trip records the first limit or cancellation and stops the interpreter.
func (rs *runState) trip(e *scriptErr) {
	if rs.tripped.CompareAndSwap(nil, e) && rs.thread != nil {
		rs.thread.Cancel(e.msg)
	}
}

// hook runs from the interpreter loop (via OnMaxSteps), re-arming itself so
// it runs again before the call depth can pass MaxDepth: depth grows by at
// most two frames per step (a built-in calling a function).
func (rs *runState) hook(th *starlark.Thread) {
	steps := rs.steps(th)
	if steps >= rs.lim.MaxSteps {
		rs.trip(limitErr(LimitSteps, "the run executed more than maxSteps %d steps", rs.lim.MaxSteps))
		return
	}
	d := th.CallStackDepth()
	if d > rs.peakDepth {
		rs.peakDepth = d
	}
	if d > rs.lim.MaxDepth {
		rs.trip(limitErr(LimitDepth, "call depth passed maxDepth %d (runaway recursion?)", rs.lim.MaxDepth))
		return
	}
	h := uint64((rs.lim.MaxDepth - d) / 2)
	if h < 1 {
		h = 1
	}
	if h > 4096 {
		h = 4096
	}
	next := steps + h
	if next > rs.lim.MaxSteps {
		next = rs.lim.MaxSteps
	}
	th.SetMaxExecutionSteps(next + rs.freeSteps)
}

// steps is the run's steps, those the rewrites added left out.
func (rs *runState) steps(th *starlark.Thread) uint64 {
	n := th.ExecutionSteps()
	if rs.freeSteps >= n {
		return 0
	}
	return n - rs.freeSteps
}

// log appends one print() line, bounded by MaxLogBytes.
func (rs *runState) log(msg string) {
	if rs.logsTruncated {
		return
	}
	room := rs.lim.MaxLogBytes - rs.logBytes
	if len(msg) > room {
		if room > 0 {
			cut := room
			for cut > 0 && cut < len(msg) && msg[cut]&0xC0 == 0x80 {
				cut--
			}
			rs.logs = append(rs.logs, msg[:cut])
		}
		rs.logs = append(rs.logs, fmt.Sprintf("[log truncated: more than maxLogBytes %d bytes were printed]", rs.lim.MaxLogBytes))
		rs.logBytes = rs.lim.MaxLogBytes
		rs.logsTruncated = true
		return
	}
	rs.logs = append(rs.logs, msg)
	rs.logBytes += len(msg)
}

// charge refuses an operation whose estimated allocation would push the
// run past MaxMemoryBytes.
func (rs *runState) charge(est int64, what string) error {
	return rs.chargeFn(est, func() string { return what })
}

// chargeFn is charge with the description built only on refusal (the hot
// path of every checked operator).
func (rs *runState) chargeFn(est int64, what func() string) error {
	if est <= 0 {
		return nil
	}
	g := rs.heap.growth.Load()
	if est >= freshSampleAbove {
		// The latest sample may predate a large value the script just
		// made (a sample every millisecond, later on a busy machine):
		// a copy of a 30 MB string made right after it was let through
		// under a 48 MiB cap on a stale reading.
		g = rs.heap.sample()
	}
	if est <= rs.lim.MaxMemoryBytes && est+g > rs.lim.MaxMemoryBytes {
		g = rs.heap.recheck()
	}
	if est > rs.lim.MaxMemoryBytes || est+g > rs.lim.MaxMemoryBytes {
		e := limitErr(LimitMemory, "%s would allocate about %s with %s already in use, over maxMemoryBytes %s", what(), fmtBytes(est), fmtBytes(g), fmtBytes(rs.lim.MaxMemoryBytes))
		rs.trip(e)
		return e
	}
	return nil
}

// overBudget refuses what, found part way through to need more than
// the budget it was given (what was left of MaxMemoryBytes). Unlike
// charge it does not read the heap again: a collection may since have
// made room, and charge(budget+1) then let a refused operation return
// nothing.
func (rs *runState) overBudget(budget int64, what string) *scriptErr {
	e := limitErr(LimitMemory, "%s would allocate more than the %s left of maxMemoryBytes %s", what, fmtBytes(max(budget, 0)), fmtBytes(rs.lim.MaxMemoryBytes))
	rs.trip(e)
	return e
}

// freshSampleAbove: a charge of at least this many bytes reads the heap
// again (under a microsecond) instead of trusting the latest sample.
const freshSampleAbove = 64 << 10

func (rs *runState) memBudget() int64 {
	b := rs.lim.MaxMemoryBytes - rs.heap.growth.Load()
	if b < 0 {
		return 0
	}
	return b
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// ---- errors ----

func syntaxError(err error) *Error {
	e := &Error{Kind: KindSyntax}
	var se syntax.Error
	var rl resolve.ErrorList
	switch {
	case errors.As(err, &se):
		e.Message, e.Line, e.Column = se.Msg, int(se.Pos.Line), int(se.Pos.Col)
		e.Problems = []Problem{{Line: e.Line, Column: e.Column, Message: se.Msg}}
	case errors.As(err, &rl):
		for _, r := range rl {
			e.Problems = append(e.Problems, Problem{Line: int(r.Pos.Line), Column: int(r.Pos.Col), Message: r.Msg})
		}
		e.Line, e.Column, e.Message = e.Problems[0].Line, e.Problems[0].Column, e.Problems[0].Message
	default:
		e.Message = err.Error()
	}
	return e
}

// maxMessageBytes clips a run's error message: fail() or a missing key
// can quote a value of any size, and the message is for a model to read.
const maxMessageBytes = 16 << 10

// classify turns an Init error into the Result error.
func (rs *runState) classify(err error) *Error {
	out := &Error{Kind: KindRuntime, Message: clip(err.Error(), maxMessageBytes)}
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		out.Message = clip(ee.Msg, maxMessageBytes)
		frames := ee.CallStack
		for i := len(frames) - 1; i >= 0; i-- {
			if frames[i].Pos.Line > 0 && frames[i].Pos.Filename() != "<builtin>" {
				out.Line, out.Column = int(frames[i].Pos.Line), int(frames[i].Pos.Col)
				break
			}
		}
		var bt []string
		for _, fr := range frames {
			if hiddenBuiltins[fr.Name] {
				continue
			}
			if fr.Pos.Line > 0 {
				bt = append(bt, fmt.Sprintf("%s:%d:%d in %s", fr.Pos.Filename(), fr.Pos.Line, fr.Pos.Col, fr.Name))
			} else {
				bt = append(bt, "in "+fr.Name)
			}
		}
		if len(bt) > 8 {
			bt = append([]string{fmt.Sprintf("... %d outer frames", len(bt)-8)}, bt[len(bt)-8:]...)
		}
		out.Backtrace = bt
	}
	var se *scriptErr
	if t := rs.tripped.Load(); t != nil {
		se = t
	} else if !errors.As(err, &se) {
		se = nil
	}
	if se != nil {
		out.Kind, out.Limit, out.Capability, out.Message, out.Remedy = se.kind, se.limit, se.capability, se.msg, se.remedy
	}
	return out
}

func hostErrorToError(capability string, err error) *Error {
	se := hostScriptErr(capability, err)
	return &Error{Kind: se.kind, Capability: capability, Message: se.msg, Remedy: se.remedy}
}

func hostScriptErr(capability string, err error) *scriptErr {
	var he *HostError
	if errors.As(err, &he) {
		k := KindTool
		if he.Kind == HostAdmission {
			k = KindAdmission
		}
		msg := he.Message
		if msg == "" {
			msg = string(he.Kind) + " failure"
		}
		return &scriptErr{kind: k, capability: capability, msg: capability + ": " + msg, remedy: he.Remedy}
	}
	return &scriptErr{kind: KindTool, capability: capability, msg: capability + ": call failed: " + clip(err.Error(), 500)}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "..."
}
