package wasm

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/sys"
)

// Filter is a loaded filter. It is safe for concurrent use; calls run on
// pooled instances.
type Filter struct {
	host    *Host
	name    string
	mode    Mode
	onError OnError
	builtin bool          // one of the built-in filters (see Filter.result)
	timeout time.Duration // fixed part of a call's deadline
	perMiB  time.Duration // added per MiB of input
	pool    *pool

	mu      sync.Mutex
	closed  bool
	stat    FilterStatus
	streaks map[string]*streak // per server (Meta.Server): failures in a row, disablement
	spare   *streak            // the last streak deleted, reused by the next (a call makes and drops one)
}

// streak is one server's run of consecutive failures of a filter, and its
// overrun episode. While an abandoned call of the server runs on, the
// server's new calls are refused (OverrunError, not a failure). Of the
// timeouts of calls that overlapped in time (a burst of big results, calls
// queued behind an overrun) only the first counts: the episode opens with
// it and closes once none of the server's calls is running any more.
type streak struct {
	n           int
	last        string
	disabledAt  time.Time // zero unless disabled for this server
	running     int       // the server's calls in Run, plus its abandoned calls running on
	overrunning int       // abandoned calls of this server still running
	episode     bool      // a timeout was counted while running stayed above 0
}

// State of a filter.
type State string

const (
	StateActive   State = "active"
	StateDisabled State = "disabled"
	StateClosed   State = "closed"
)

// FilterStatus is a snapshot of a filter's health.
type FilterStatus struct {
	Name                string
	State               State
	Mode                Mode
	OnError             OnError
	Calls               int64
	Failures            int64
	ConsecutiveFailures int
	LastError           string    // "" if none
	DisabledAt          time.Time // zero unless disabled (for some server: the latest)
	// DisabledFor lists the servers (Meta.Server) the filter is disabled
	// for; a failing server disables the filter for itself only.
	DisabledFor []string
	// ReenabledAt is when the filter last came back (after its cool-down
	// or by Enable); zero if never.
	ReenabledAt time.Time
	// CoolDown is how long a disablement lasts before the filter tries
	// again.
	CoolDown time.Duration
	// Refused counts the calls not made because earlier calls overran
	// their deadlines and were still running (OverrunError; not failures).
	Refused int64
	// Overrunning is the number of abandoned calls still running.
	Overrunning int
}

// Result status of one call.
type Status int

const (
	// StatusReplaced: Output.Data is the filter's output.
	StatusReplaced Status = iota
	// StatusPass: the filter left the input unchanged; Output.Data is the input.
	StatusPass
	// StatusBlocked: the filter withheld the result; Output.Reason says why.
	StatusBlocked
)

func (s Status) String() string {
	switch s {
	case StatusReplaced:
		return "replaced"
	case StatusPass:
		return "pass"
	case StatusBlocked:
		return "blocked"
	}
	return "unknown"
}

// Output is a successful call's outcome.
type Output struct {
	// Data is the caller's until it calls Release (see Release); without
	// Release it is the caller's for good.
	Data   []byte
	Status Status
	Reason string // for StatusBlocked: the filter's reason (sanitised, ≤ 1 KiB)

	buf *outBuf // the buffer Data was lent in (StatusReplaced)
	gen uint64  // buf's generation when lent
}

// Name returns the filter's name.
func (f *Filter) Name() string { return f.name }

// Mode returns the filter's input mode.
func (f *Filter) Mode() Mode { return f.mode }

// OnError returns the filter's failure policy.
func (f *Filter) OnError() OnError { return f.onError }

// Status returns a snapshot of the filter's health.
func (f *Filter) Status() FilterStatus {
	f.mu.Lock()
	reenabled := f.expireLocked(time.Now())
	s := f.statusLocked()
	f.mu.Unlock()
	f.logReenabled(reenabled)
	return s
}

// statusLocked builds Status's snapshot. Called with f.mu held.
func (f *Filter) statusLocked() FilterStatus {
	s := f.stat
	s.Name, s.Mode, s.OnError = f.name, f.mode, f.onError
	s.CoolDown = f.host.opts.DisableCoolDown
	s.DisabledFor = nil
	s.ConsecutiveFailures = 0
	for srv, st := range f.streaks {
		s.Overrunning += st.overrunning
		s.ConsecutiveFailures = max(s.ConsecutiveFailures, st.n)
		if !st.disabledAt.IsZero() {
			s.DisabledFor = append(s.DisabledFor, srv)
			if st.disabledAt.After(s.DisabledAt) {
				s.DisabledAt = st.disabledAt
			}
		}
	}
	slices.Sort(s.DisabledFor)
	switch {
	case f.closed:
		s.State = StateClosed
	case len(s.DisabledFor) > 0:
		s.State = StateDisabled
	default:
		s.State = StateActive
		s.DisabledAt = time.Time{}
	}
	return s
}

// Enable re-enables a disabled filter (for every server) and clears its
// failure streaks. Calls still overrunning keep their servers' results
// refused until they end.
func (f *Filter) Enable() {
	var reenabled []string
	f.mu.Lock()
	for srv, st := range f.streaks {
		if !st.disabledAt.IsZero() {
			f.stat.ReenabledAt = time.Now()
			reenabled = append(reenabled, srv)
		}
		if st.running == 0 {
			delete(f.streaks, srv)
			continue
		}
		st.n, st.last, st.disabledAt = 0, "", time.Time{}
	}
	f.mu.Unlock()
	for _, srv := range reenabled {
		f.host.logger.Info("filter re-enabled by command", "filter", f.name, "server", srv)
	}
}

// expireLocked re-enables the servers whose cool-down has passed and
// returns them, for logReenabled once f.mu is let go. Called with f.mu
// held.
func (f *Filter) expireLocked(now time.Time) (reenabled []string) {
	cd := f.host.opts.DisableCoolDown
	if cd <= 0 {
		return nil
	}
	for srv, st := range f.streaks {
		if !st.disabledAt.IsZero() && now.Sub(st.disabledAt) >= cd {
			st.disabledAt, st.n = time.Time{}, 0
			f.stat.ReenabledAt = now
			reenabled = append(reenabled, srv)
		}
	}
	return reenabled
}

// logReenabled logs the servers expireLocked re-enabled. Called without
// f.mu, like every log line of a filter: the log's handler may run this
// very filter over the line (the gateway redacts its log with
// builtin:redact), and that call takes f.mu; a handler that blocks would
// otherwise stall every call of the filter.
func (f *Filter) logReenabled(servers []string) {
	for _, srv := range servers {
		f.host.logger.Warn("filter re-enabled after its cool-down; it runs again", "filter", f.name, "server", srv, "coolDown", f.host.opts.DisableCoolDown)
	}
}

// Close releases the filter; the pool closes when its last filter does.
func (f *Filter) Close(ctx context.Context) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.closed = true
	f.mu.Unlock()
	h := f.host
	h.mu.Lock()
	f.pool.refs--
	last := f.pool.refs == 0
	if last && h.pools[f.pool.key] == f.pool {
		delete(h.pools, f.pool.key)
	}
	h.mu.Unlock()
	if last {
		f.pool.shutdown(ctx)
		h.release(ctx, f.pool.cm)
	}
}

// Run calls the filter once on input (a result JSON in mode result-json, one
// text item in mode text). It returns a typed error (see errors.go; all match
// ErrFilterFailed) when the filter fails; the caller decides what to do with
// the result then (see Decide). A cancelled ctx returns ctx's error.
func (f *Filter) Run(ctx context.Context, input []byte, meta Meta) (Output, error) {
	if err := f.admit(meta.Server); err != nil {
		return Output{}, err
	}
	defer f.left(meta.Server)
	h := f.host
	if len(input) > h.opts.MaxInputBytes {
		return Output{}, ErrInputTooLarge
	}
	in, err := f.pool.get(ctx, f.name)
	if err != nil {
		if ctx.Err() != nil {
			return Output{}, err
		}
		var oe *OverrunError
		if errors.As(err, &oe) {
			f.mu.Lock()
			f.stat.Refused++
			f.mu.Unlock()
			return Output{}, err // never ran: not a failure
		}
		f.record(meta.Server, err)
		return Output{}, err
	}
	// Waiting for an instance may have outlasted one of this server's
	// calls, which then overran: look again.
	f.mu.Lock()
	err = f.refuseLocked(meta.Server)
	f.mu.Unlock()
	if err != nil {
		f.pool.put(ctx, in, true)
		return Output{}, err
	}
	in.state.server = meta.Server
	in.state.validInput = meta.ValidInput
	out, abandoned, err := f.call(ctx, in, input, &meta)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// The caller gave up; not the filter's fault.
		if !abandoned {
			f.pool.put(ctx, in, false)
		}
		return Output{}, ctx.Err()
	}
	if !abandoned {
		// A guest that returned normally, reporting an error or with
		// output the host refuses, left its instance as sound as any
		// call does; making a new one (about 10 ms for a Go guest) for
		// each made a run of invalid inputs that slow.
		var invalid *InvalidOutputError
		var reported *ReportedError
		f.pool.put(ctx, in, err == nil || errors.As(err, &invalid) || errors.As(err, &reported))
	}
	f.record(meta.Server, err)
	return out, err
}

// call runs one call on in. A call on an instance compiled without
// termination checks runs on the instance's worker goroutine; when it
// overruns the deadline (or ctx ends) call returns without it (abandoned:
// the instance is no longer the caller's to return, see run).
func (f *Filter) call(ctx context.Context, in *instance, input []byte, meta *Meta) (Output, bool, error) {
	h := f.host
	in.state.reset(input, meta, f.mode, h.opts.MaxOutputBytes)
	in.state.ctx = ctx
	in.stderr.Reset()
	deadline := f.deadline(len(input))
	if !f.pool.cm.fast {
		cctx, cancel := context.WithTimeout(ctx, deadline)
		defer cancel()
		cctx = context.WithValue(cctx, stateKey{}, &in.state)
		out, err := f.result(ctx, in, input, deadline, in.filter.CallWithStack(cctx, in.stack))
		return out, false, err
	}
	done, err := f.run(ctx, in, deadline)
	if !done {
		if ctx.Err() != nil {
			return Output{}, true, ctx.Err() // the caller gave up first
		}
		return Output{}, true, &TimeoutError{Filter: f.name, Timeout: deadline, InputBytes: len(input), Abandoned: true}
	}
	out, err := f.result(ctx, in, input, deadline, err)
	return out, false, err
}

// run makes a call that cannot be stopped on in's worker goroutine and
// waits for it, for the deadline or for ctx. When the deadline or ctx
// comes first, the call is abandoned: its host functions trap from then on
// (callState.gate), it leaves the pool (see abandon), and the instance is
// closed when the call returns (Host.Close waits for it).
func (f *Filter) run(ctx context.Context, in *instance, deadline time.Duration) (bool, error) {
	h := f.host
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return true, ErrClosed
	}
	h.inflight.Add(1)
	h.mu.Unlock()
	w := in.w
	w.claimed, w.onEnd = false, nil // the worker is idle: the hand-over below orders this
	p := f.pool
	p.mu.Lock()
	if w.stopped { // the pool shut down under this call
		p.mu.Unlock()
		h.inflight.Done()
		return true, ErrClosed
	}
	w.start <- struct{}{} // never blocks: the worker is idle
	p.mu.Unlock()
	w.timer.Reset(deadline)
	select {
	case err := <-w.done:
		w.timer.Stop()
		return true, err
	case <-w.timer.C:
	case <-ctx.Done():
		w.timer.Stop()
	}
	w.claim.Lock()
	if w.claimed { // it ended meanwhile: its result is on the way
		w.claim.Unlock()
		return true, <-w.done
	}
	w.claimed = true
	// Before the claim is let go: the call may end at once and run onEnd.
	server := in.state.server
	f.overrunStarted(server)
	w.onEnd = func() { f.overrunEnded(server) }
	w.claim.Unlock()
	in.state.gate.Lock()
	in.state.abandoned = true
	in.state.gate.Unlock()
	p.abandon(in)
	return false, nil
}

// result turns a finished call's error and the guest's status into the
// call's Output.
func (f *Filter) result(ctx context.Context, in *instance, input []byte, deadline time.Duration, err error) (Output, error) {
	h := f.host
	if err != nil {
		var ee *sys.ExitError
		if errors.As(err, &ee) {
			switch ee.ExitCode() {
			case sys.ExitCodeDeadlineExceeded, sys.ExitCodeContextCanceled:
				if ctx.Err() != nil {
					return Output{}, ctx.Err() // the caller gave up first
				}
				return Output{}, &TimeoutError{Filter: f.name, Timeout: deadline, InputBytes: len(input)}
			}
		}
		if f.pool.nearCap(in.mod) {
			return Output{}, &MemoryLimitError{Filter: f.name, LimitPages: h.opts.MaxMemoryPages, Pages: pages(in.mod), Detail: firstLine(err.Error())}
		}
		return Output{}, &TrapError{Filter: f.name, Message: firstLine(err.Error()), Stderr: in.stderr.String()}
	}
	if in.state.outOver {
		return Output{}, &OutputTooLargeError{Filter: f.name, Limit: h.opts.MaxOutputBytes}
	}
	switch status := int32(in.stack[0]); status {
	case 0:
		// The output is assembled once, in a buffer lent to the caller
		// (Output.Release gives it back for a later call's output).
		ob := h.lendOut(in.state.outLen)
		data := in.state.assemble(ob.b)
		var trust [][2]int
		if f.builtin && in.state.validInput {
			in.trust = in.state.trustedSpans(in.trust[:0])
			trust = in.trust
		}
		if err := f.validate(data, trust); err != nil {
			ob.b = data
			h.takeBack(ob)
			return Output{}, err
		}
		ob.b = data
		return Output{Data: data, Status: StatusReplaced, buf: ob, gen: ob.gen.Load()}, nil
	case 1:
		return Output{Data: input, Status: StatusPass}, nil
	case 2:
		reason := cleanText(in.state.errMsg)
		if reason == "" {
			reason = "blocked by filter " + f.name
		}
		return Output{Status: StatusBlocked, Reason: reason}, nil
	case 3:
		return Output{}, &ReportedError{Filter: f.name, Message: cleanText(in.state.errMsg)}
	default:
		return Output{}, &StatusError{Filter: f.name, Status: status}
	}
}

// deadline is a call's deadline for an input of n bytes: the fixed part
// plus perMiB for every MiB (pro rata).
func (f *Filter) deadline(n int) time.Duration {
	d := f.timeout + time.Duration(float64(f.perMiB)*float64(n)/(1<<20))
	if f.timeout >= time.Millisecond {
		d = d.Round(time.Millisecond) // never below f.timeout, a whole number of ms
	}
	return d
}

// Deadline returns the deadline a call with an input of n bytes gets.
func (f *Filter) Deadline(n int) time.Duration { return f.deadline(n) }

// validate checks a call's output for the filter's mode. trust: ranges of
// out the validator need not look at again (validateResultTrusting).
func (f *Filter) validate(out []byte, trust [][2]int) error {
	switch f.mode {
	case ModeResultJSON:
		if reason := validateResultTrusting(out, trust); reason != "" {
			return &InvalidOutputError{Filter: f.name, Mode: f.mode, Reason: reason}
		}
		if checkTrust && len(trust) > 0 && validateResult(out) != "" {
			return &InvalidOutputError{Filter: f.name, Mode: f.mode,
				Reason: "output copied from an input that is not valid JSON, although the caller said it was (Meta.ValidInput)"}
		}
	default:
		if !utf8.Valid(out) {
			return &InvalidOutputError{Filter: f.name, Mode: f.mode, Reason: "text output is not valid UTF-8"}
		}
	}
	return nil
}

// refuseLocked returns the OverrunError for a call on server's results
// while an earlier one overruns, counting it; nil if the call may run.
// Called with f.mu held.
func (f *Filter) refuseLocked(server string) error {
	st := f.streaks[server]
	if st == nil || st.overrunning == 0 {
		return nil
	}
	f.stat.Refused++
	return &OverrunError{Filter: f.name, Server: server, PerServer: true, Running: st.overrunning}
}

// streakLocked returns server's streak, creating it. Called with f.mu held.
func (f *Filter) streakLocked(server string) *streak {
	st := f.streaks[server]
	if st == nil {
		if f.streaks == nil {
			f.streaks = map[string]*streak{}
		}
		if st = f.spare; st != nil {
			f.spare, *st = nil, streak{}
		} else {
			st = &streak{}
		}
		f.streaks[server] = st
	}
	return st
}

// left: one of server's calls left Run.
func (f *Filter) left(server string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runningDownLocked(server)
}

// runningDownLocked ends one of server's running calls; the last one closes
// the server's overrun episode. Called with f.mu held.
func (f *Filter) runningDownLocked(server string) {
	st := f.streaks[server]
	if st == nil || st.running == 0 {
		return
	}
	st.running--
	if st.running == 0 {
		st.episode = false
		if st.n == 0 && st.disabledAt.IsZero() {
			delete(f.streaks, server)
			f.spare = st
		}
	}
}

// admit lets a call on server's results in (counting it as running) or
// says why not.
func (f *Filter) admit(server string) error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return ErrClosed
	}
	reenabled := f.expireLocked(time.Now())
	err := f.admitLocked(server)
	f.mu.Unlock()
	f.logReenabled(reenabled)
	return err
}

// admitLocked is admit's decision. Called with f.mu held.
func (f *Filter) admitLocked(server string) error {
	if st := f.streaks[server]; st != nil && !st.disabledAt.IsZero() {
		err := &DisabledError{Filter: f.name, Server: server, Failures: st.n, Last: st.last}
		if cd := f.host.opts.DisableCoolDown; cd > 0 {
			err.Until = st.disabledAt.Add(cd)
		}
		return err
	}
	if err := f.refuseLocked(server); err != nil {
		return err
	}
	f.streakLocked(server).running++
	return nil
}

// overrunStarted: a call on server's results was abandoned at its deadline
// and runs on; until overrunEnded, the server's new calls are refused, and
// it counts as running (its episode stays open).
func (f *Filter) overrunStarted(server string) {
	f.mu.Lock()
	st := f.streakLocked(server)
	st.overrunning++
	st.running++
	first := st.overrunning == 1
	f.mu.Unlock()
	if first { // logged without f.mu: see logReenabled
		f.host.logger.Warn("filter call overran its deadline and runs on; this server's results are refused until it ends",
			"filter", f.name, "server", server)
	}
}

// overrunEnded: an abandoned call on server's results returned.
func (f *Filter) overrunEnded(server string) {
	f.mu.Lock()
	st := f.streaks[server]
	if st == nil || st.overrunning == 0 {
		f.mu.Unlock()
		return
	}
	st.overrunning--
	last := st.overrunning == 0
	f.runningDownLocked(server)
	f.mu.Unlock()
	if last { // logged without f.mu: see logReenabled
		f.host.logger.Info("filter's overrunning call ended; this server's results are filtered again", "filter", f.name, "server", server)
	}
}

// record updates the health counters and disables the filter, for server
// only, after Options.DisableAfter consecutive failures on its results. Of
// the timeouts of one overrun episode (see streak) only the first counts.
func (f *Filter) record(server string, err error) {
	f.mu.Lock()
	f.stat.Calls++
	st := f.streaks[server]
	if err == nil {
		if st != nil {
			st.n = 0
		}
		f.mu.Unlock()
		return
	}
	f.stat.Failures++
	f.stat.LastError = err.Error()
	st = f.streakLocked(server)
	var te *TimeoutError
	if errors.As(err, &te) {
		if st.episode {
			f.mu.Unlock()
			return // overlapped a timeout already counted
		}
		st.episode = true
	}
	st.n++
	st.last = err.Error()
	disabled, failures, last := false, st.n, st.last
	if n := f.host.opts.DisableAfter; n > 0 && st.n >= n && st.disabledAt.IsZero() {
		st.disabledAt = time.Now()
		disabled = true
	}
	f.mu.Unlock()
	if disabled {
		// Logged without f.mu: the log's handler may run this very filter
		// over the line (the gateway redacts its log with builtin:redact),
		// and that call takes f.mu.
		f.host.logger.Error("filter disabled for one server after repeated failures", "filter", f.name, "server", server,
			"failures", failures, "coolDown", f.host.opts.DisableCoolDown, "last", last)
	}
}
