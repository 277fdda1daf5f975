package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

type poolKey struct {
	module [32]byte // sha256 of the module bytes
	config [32]byte // sha256 of the compacted config
	fast   bool     // compiled without termination checks (a built-in)
}

// pool is a bounded set of initialised instances of one (module, config).
// sem holds one token per live instance; idle holds the instances not in a
// call. Never a sync.Pool: wazero keeps every instance in its store until
// Close, so an instance a sync.Pool drops would leak.
type pool struct {
	h      *Host
	key    poolKey
	cm     *compiledModule
	config []byte
	sem    chan struct{}
	idle   chan *instance
	refs   int // guarded by h.mu

	mu     sync.Mutex
	closed bool
	live   map[*instance]struct{}
	// overrun counts the abandoned calls still running (rtFast only):
	// their instances left the pool's slots at once (the pool does not
	// shrink: new instances take them); at twice the pool's size, calls
	// fail fast instead of piling up more.
	overrun int
	ends    sync.Cond // on mu: an abandoned call ended (overrun went down)
	// reaping: a reap is scheduled (see reap); guarded by mu.
	reaping bool
	reaper  *time.Timer
	// spare is the instance made in the background to replace one that
	// reached MaxCallsPerInstance (see renew); preparing: it is being
	// made. At most one of either at a time (guarded by mu): a pool holds
	// at most one instance beyond its size.
	spare     *instance
	preparing bool
	bg        sync.WaitGroup // the background work of renew; shutdown waits for it
	// coldStarts counts the instances made on a call's path (get).
	coldStarts atomic.Int64
}

type instance struct {
	mod    api.Module
	filter api.Function
	state  callState
	stack  []uint64
	trust  [][2]int // reused by Filter.result
	calls  int
	stderr *tailBuffer
	w      *worker // rtFast instances only: the goroutine their calls run on
	// idleSince is when the instance last went back to the pool.
	idleSince time.Time
}

func newPool(h *Host, key poolKey, cm *compiledModule, config []byte, size int) *pool {
	p := &pool{
		h: h, key: key, cm: cm, config: config,
		sem:  make(chan struct{}, size),
		idle: make(chan *instance, size),
		live: map[*instance]struct{}{},
	}
	p.ends.L = &p.mu
	return p
}

// size is the most instances the pool holds at once.
func (p *pool) size() int { return cap(p.sem) }

// get checks out an instance for one call, creating one if the pool is below
// its size, else waiting for one to come back.
func (p *pool) get(ctx context.Context, filter string) (*instance, error) {
	p.mu.Lock()
	overrun := p.overrun
	p.mu.Unlock()
	if overrun >= 2*cap(p.sem) {
		return nil, &OverrunError{Filter: filter, Running: overrun}
	}
	select {
	case in := <-p.idle:
		return in, nil
	default:
	}
	select {
	case in := <-p.idle:
		return in, nil
	case p.sem <- struct{}{}:
		p.coldStarts.Add(1)
		in, err := p.instantiateSlot(ctx, filter)
		if err != nil {
			<-p.sem
			return nil, err
		}
		return in, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// instantiate takes a slot and creates an instance (used to pre-warm).
func (p *pool) instantiate(ctx context.Context, filter string) (*instance, error) {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	in, err := p.instantiateSlot(ctx, filter)
	if err != nil {
		<-p.sem
	}
	return in, err
}

func (p *pool) instantiateSlot(ctx context.Context, filter string) (*instance, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	p.mu.Unlock()
	h := p.h
	in := &instance{stderr: &tailBuffer{max: maxStderrBytes, budget: maxStderrWriteBytes}, stack: make([]uint64, 1)}
	in.state.filter = filter
	in.state.config = p.config
	in.state.maxOffload = h.opts.MaxOffloadBytes
	ictx, cancel := context.WithTimeout(context.WithValue(ctx, stateKey{}, &in.state), h.opts.InitTimeout)
	defer cancel()
	cfg := wazero.NewModuleConfig().WithName("").WithStdout(stdoutSink{in.stderr}).WithStderr(in.stderr).WithStartFunctions()
	if p.cm.hasStart {
		cfg = cfg.WithStartFunctions("_initialize")
	}
	mod, err := p.cm.rt.InstantiateModule(ictx, p.cm.cm, cfg)
	if err != nil {
		return nil, p.classifyInit(filter, err, nil, in)
	}
	in.mod = mod
	in.filter = mod.ExportedFunction("mcpf_filter")
	if p.cm.hasInit {
		in.state.reset(nil, nil, "", 0)
		res, err := mod.ExportedFunction("mcpf_init").Call(ictx)
		if err != nil {
			mod.Close(ctx)
			return nil, p.classifyInit(filter, err, mod, in)
		}
		if status := int32(res[0]); status != 0 {
			mod.Close(ctx)
			return nil, &ConfigError{Filter: filter, Message: cleanText(in.state.errMsg)}
		}
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		mod.Close(ctx)
		return nil, ErrClosed
	}
	p.live[in] = struct{}{}
	if p.cm.fast {
		p.startWorker(in)
	}
	p.mu.Unlock()
	return in, nil
}

func (p *pool) classifyInit(filter string, err error, mod api.Module, in *instance) error {
	var ee *sys.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == sys.ExitCodeDeadlineExceeded {
		return fmt.Errorf("wasm: filter %q: initialisation exceeded %v: %w", filter, p.h.opts.InitTimeout, &TimeoutError{Filter: filter, Timeout: p.h.opts.InitTimeout})
	}
	if mod != nil && p.nearCap(mod) {
		return &MemoryLimitError{Filter: filter, LimitPages: p.h.opts.MaxMemoryPages, Pages: pages(mod), Detail: "during initialisation"}
	}
	return fmt.Errorf("wasm: filter %q: initialisation failed: %w", filter, &TrapError{Filter: filter, Message: firstLine(err.Error()), Stderr: in.stderr.String()})
}

// put returns an instance after a call. An instance whose call failed
// (ok false: Run passes true when the guest returned normally), over-used
// or over-grown, is closed and its slot freed.
func (p *pool) put(ctx context.Context, in *instance, ok bool) {
	in.calls++
	in.state.input, in.state.metaReady = nil, false
	if cap(in.state.out) > maxScratchBytes {
		in.state.out = nil // a rare big output: not kept by an idle instance
	}
	if ok && pages(in.mod) <= p.h.opts.RecycleAbovePages {
		if in.calls >= p.renewAt() {
			in = p.renew(in)
		}
		if in != nil && p.idleAdd(in) {
			return
		}
		if in == nil {
			return
		}
	}
	p.discard(ctx, in)
}

// renewAt is the call count at which an instance's replacement starts
// being made in the background: a tenth of MaxCallsPerInstance ahead.
func (p *pool) renewAt() int {
	max := p.h.opts.MaxCallsPerInstance
	return max - max/10
}

// renew recycles in, an instance near or at MaxCallsPerInstance, off the
// call path: from renewAt on, a replacement is instantiated in the
// background (one per pool at a time); once it is ready and in has
// reached the limit, the replacement takes in's slot and in is closed in
// the background. It returns the instance to put back in the pool: in
// itself while the replacement is not ready (in serves on, at most to
// twice the limit), the replacement, or nil when in was over twice the
// limit without one (its slot freed: the next call instantiates).
func (p *pool) renew(in *instance) *instance {
	limit := p.h.opts.MaxCallsPerInstance
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return in
	}
	if in.calls < limit || p.spare == nil {
		if p.spare == nil && !p.preparing {
			p.preparing = true
			p.bg.Add(1)
			go p.prepare(in.state.filter)
		}
		if in.calls < 2*limit {
			return in
		}
		p.retireLocked(in)
		<-p.sem
		return nil
	}
	next := p.spare
	p.spare = nil
	p.retireLocked(in)
	return next // in's slot (its sem token) passes to next
}

// prepare makes the spare instance (see renew).
func (p *pool) prepare(filter string) {
	defer p.bg.Done()
	in, err := p.instantiateSlot(context.Background(), filter)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.preparing = false
	if err != nil {
		return // the instance in use serves on; its successor is tried again by a later call
	}
	if p.closed { // shutdown closed it with the live ones, or is about to
		return
	}
	p.spare = in
}

// retireLocked takes in out of the pool and closes it in the background.
// Called with mu held, the pool open.
func (p *pool) retireLocked(in *instance) {
	delete(p.live, in)
	in.stopWorkerLocked()
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		in.mod.Close(context.Background())
	}()
}

// idleAdd returns in to the idle instances (false when the pool is
// closed), noting when, and arms the reaper.
func (p *pool) idleAdd(in *instance) bool {
	in.idleSince = time.Now()
	p.mu.Lock()
	closed := p.closed
	if !closed && !p.reaping && p.h.opts.PoolIdleTimeout > 0 {
		p.scheduleLocked(p.h.opts.PoolIdleTimeout)
	}
	p.mu.Unlock()
	if closed {
		return false
	}
	p.idle <- in
	return true
}

// scheduleLocked arms the reaper to run after d. Called with mu held.
func (p *pool) scheduleLocked(d time.Duration) {
	p.reaping = true
	if p.reaper == nil {
		p.reaper = time.AfterFunc(d, p.reap)
		return
	}
	p.reaper.Reset(d)
}

// reap closes the instances that have sat idle for PoolIdleTimeout, down
// to none: a pool is as large as its recent use, and a filter nothing
// called for a while holds only its compiled code (the next call
// instantiates again, a few milliseconds for a Go guest). It reschedules
// itself while idle instances remain.
func (p *pool) reap() {
	timeout := p.h.opts.PoolIdleTimeout
	p.mu.Lock()
	if p.closed {
		p.reaping = false
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	now := time.Now()
	var keep, drop []*instance
	var next time.Duration
take:
	for n := len(p.idle); n > 0; n-- {
		select {
		case in := <-p.idle:
			if age := now.Sub(in.idleSince); age >= timeout {
				drop = append(drop, in)
			} else {
				keep = append(keep, in)
				if rest := timeout - age; next == 0 || rest < next {
					next = rest
				}
			}
		default:
			break take
		}
	}
	for _, in := range keep {
		p.idle <- in // never blocks: idle has room for every live instance
	}
	for _, in := range drop {
		p.discard(context.Background(), in)
	}
	p.mu.Lock()
	p.reaping = false
	if !p.closed && len(keep) > 0 {
		p.scheduleLocked(next)
	}
	var spare *instance
	if len(drop) > 0 && len(keep) == 0 && len(p.idle) == 0 && p.spare != nil {
		spare, p.spare = p.spare, nil // a pool nothing uses keeps no spare either
		delete(p.live, spare)
		spare.stopWorkerLocked()
	}
	p.mu.Unlock()
	if spare != nil {
		spare.mod.Close(context.Background())
	}
	if len(drop) > 0 {
		// The instances' memories (megabytes each for a Go guest) are
		// garbage now; an idle process would otherwise keep them mapped
		// until the runtime's background scavenger gets to them.
		releaseMemory()
	}
}

// abandon takes in, whose call overran its deadline and is still running,
// out of its slot; ended is called when the call returns.
func (p *pool) abandon(in *instance) {
	p.mu.Lock()
	p.overrun++
	p.mu.Unlock()
	<-p.sem
}

// ended closes an abandoned instance once its call has returned.
func (p *pool) ended(in *instance) {
	in.mod.Close(context.Background())
	p.mu.Lock()
	p.overrun--
	delete(p.live, in)
	in.stopWorkerLocked()
	p.ends.Broadcast()
	p.mu.Unlock()
}

func (p *pool) discard(ctx context.Context, in *instance) {
	p.mu.Lock()
	delete(p.live, in)
	in.stopWorkerLocked()
	p.mu.Unlock()
	in.mod.Close(context.WithoutCancel(ctx))
	<-p.sem
}

// shutdown closes every instance; instances in a call are closed too (their
// call fails), after the abandoned calls, which cannot be stopped, have
// ended (each closes its own instance).
func (p *pool) shutdown(ctx context.Context) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	if p.reaper != nil {
		p.reaper.Stop()
	}
	for p.overrun > 0 {
		p.ends.Wait()
	}
	p.spare = nil // in live: closed below
	p.mu.Unlock()
	p.bg.Wait() // a spare being made, instances being retired
	p.mu.Lock()
	live := make([]*instance, 0, len(p.live))
	for in := range p.live {
		live = append(live, in)
		in.stopWorkerLocked()
	}
	p.mu.Unlock()
	for _, in := range live {
		in.mod.Close(ctx)
	}
}

// releaseMemory returns freed memory to the operating system now
// (debug.FreeOSMemory: one forced collection, run only after a pool
// shrank or a module was compiled, never per call).
var releaseMemory = debug.FreeOSMemory

func pages(m api.Module) uint32 {
	if m == nil || m.Memory() == nil {
		return 0
	}
	return m.Memory().Size() / 65536
}

// nearCap: within 4 MiB (64 pages, the Go runtime's growth step) of the cap.
func (p *pool) nearCap(m api.Module) bool {
	return pages(m)+64 >= p.h.opts.MaxMemoryPages
}

func firstLine(s string) string {
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 512 {
		s = s[:512]
	}
	return s
}

// tailBuffer keeps the last max bytes written (guest stderr).
type tailBuffer struct {
	mu  sync.Mutex
	max int // bytes kept: the last ones written
	// budget bounds what one call may write (0: no bound). Keeping only
	// the tail bounds memory, not time: one fd_write may name millions of
	// buffers, each the guest's whole memory, and a call gets past its
	// deadline only between host calls.
	budget  int
	written int // since the last Reset
	b       []byte
}

// charge counts p against the budget, at least stderrWriteCost however
// short p is (so that fd_write's buffers, millions of them empty, are
// bounded too), and returns the part of p within it. Called with t.mu held.
func (t *tailBuffer) charge(p []byte) ([]byte, error) {
	if t.budget <= 0 {
		return p, nil
	}
	if t.written >= t.budget {
		return nil, errStderrFull
	}
	var err error
	if len(p) > t.budget-t.written {
		p, err = p[:t.budget-t.written], errStderrFull
	}
	t.written += max(len(p), stderrWriteCost)
	return p, err
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, err := t.charge(p)
	if p == nil {
		return 0, err
	}
	// Only the last max bytes are ever kept, so only they are copied: a
	// guest's one fd_write of a whole memory, many times over, costs a
	// few KiB of copying each and never grows the buffer past 2×max.
	if len(p) >= t.max {
		t.b = append(t.b[:0], p[len(p)-t.max:]...)
		return len(p), err
	}
	if over := len(t.b) + len(p) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	t.b = append(t.b, p...)
	return len(p), err
}

// stdoutSink is a guest's stdout: discarded, but counted against the
// call's stderr budget (a write of no bytes as stderrWriteCost), so that
// one fd_write of millions of buffers ends early on stdout too.
type stdoutSink struct{ t *tailBuffer }

func (s stdoutSink) Write(p []byte) (int, error) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	p, err := s.t.charge(p)
	return len(p), err
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return cleanText(bytes.TrimSpace(t.b))
}

func (t *tailBuffer) Reset() {
	t.mu.Lock()
	t.b = t.b[:0]
	t.written = 0
	t.mu.Unlock()
}
