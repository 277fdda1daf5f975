package wasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Defaults for Options fields left zero.
const (
	DefaultMaxMemoryPages       = 512 // 32 MiB
	DefaultTimeout              = 100 * time.Millisecond
	DefaultTimeoutPerMiB        = 2 * time.Second
	DefaultInitTimeout          = 10 * time.Second
	DefaultCompileTimeout       = 10 * time.Second
	DefaultCompileTimeoutPerMiB = 5 * time.Second
	DefaultMaxCallsPerInstance  = 10000
	DefaultPoolIdleTimeout      = time.Minute
	DefaultMaxInputBytes        = 4 << 20
	DefaultMaxOutputBytes       = 4 << 20
	DefaultMaxModuleBytes       = 20 << 20
	DefaultMaxOffloadBytes      = 64 << 20
	DefaultDisableAfter         = 5
	DefaultDisableCoolDown      = time.Minute
	maxErrorBytes               = 1024
	maxLogBytes                 = 4096
	maxLogsPerCall              = 64
	maxStderrBytes              = 4096
	maxStderrWriteBytes         = 1 << 20 // a call's stderr writes, kept or not
	handleMax                   = 256
)

// Options configures a Host. The zero value (or nil) means the documented
// defaults.
type Options struct {
	// CacheDir holds wazero's on-disk compilation cache ("" = in memory
	// only). Entries are specific to the wazero version; protect the
	// directory (0700) — its contents become machine code.
	CacheDir string
	// MaxMemoryPages caps every instance's linear memory (64 KiB pages).
	// Default 512 (32 MiB). Go guests need at least ~128.
	MaxMemoryPages uint32
	// Timeout is the default per-call deadline (Spec.Timeout overrides).
	// Default 100ms.
	Timeout time.Duration
	// TimeoutPerMiB is added to a call's deadline for every MiB of its
	// input (pro rata), so a big result is not withheld for being big:
	// the deadline of a call is Timeout + len(input)/1 MiB × TimeoutPerMiB.
	// Default 2s; negative = a fixed deadline (Spec.TimeoutPerMiB
	// overrides).
	TimeoutPerMiB time.Duration
	// InitTimeout bounds instantiation + _initialize + mcpf_init. Default 10s.
	InitTimeout time.Duration
	// CompileTimeout and CompileTimeoutPerMiB bound the compilation of a
	// module from configuration (a cache hit takes none of it): it is
	// refused (CompileError wrapping ErrCompileBudget) when it has not
	// finished within CompileTimeout + its size in MiB × CompileTimeoutPerMiB.
	// Defaults 10s and 5s (a 2.7 MB Go guest compiles in about 3 s on one
	// core); a negative CompileTimeoutPerMiB = a fixed budget. Built-in
	// filters are not bounded.
	CompileTimeout       time.Duration
	CompileTimeoutPerMiB time.Duration
	// PoolSize is the default number of live instances per (module, config).
	// Default GOMAXPROCS.
	PoolSize int
	// PoolIdleTimeout closes an instance that has sat unused in its pool
	// that long; a pool grows again on demand (up to PoolSize) and shrinks
	// to no instance when nothing calls it. Default 1 minute; negative =
	// instances stay until recycled or closed.
	PoolIdleTimeout time.Duration
	// MaxCallsPerInstance recycles an instance after that many calls.
	// Default 10000.
	MaxCallsPerInstance int
	// RecycleAbovePages recycles an instance whose memory grew above it.
	// Default 3/4 of MaxMemoryPages.
	RecycleAbovePages uint32
	// MaxInputBytes refuses larger inputs before any guest runs. Default 4 MiB.
	MaxInputBytes int
	// MaxOutputBytes caps what a call may write with output_write. Default 4 MiB.
	MaxOutputBytes int
	// MaxModuleBytes refuses larger modules at load. Default 20 MiB.
	MaxModuleBytes int
	// DisableAfter disables a filter, for one server (Meta.Server), after
	// that many consecutive failures on that server's results. Default 5;
	// negative = never.
	DisableAfter int
	// DisableCoolDown is how long such a disablement lasts before the
	// filter runs again for that server. Default 1 minute; negative =
	// until Filter.Enable.
	DisableCoolDown time.Duration
	// Offload, when set, backs the offload_put import: it receives the bytes
	// a guest hands over and returns an opaque handle (1..256 bytes). data is
	// a view of guest memory, valid only during the callback: copy it to keep
	// it. It runs on the calling goroutine inside the call's deadline:
	// ctx ends at that deadline, and Offload must then stop soon and
	// return an error (OffloadStore.PutContext writes in pieces and checks
	// ctx between them), since the guest's call cannot be stopped while
	// it runs. It must be safe for concurrent use. nil = offload_put
	// reports "unavailable" to guests.
	Offload func(ctx context.Context, data []byte) (handle string, err error)
	// MaxOffloadBytes caps the bytes one call may offload. Default 64 MiB.
	MaxOffloadBytes int
	// Logger receives guest log lines (mcpf.log) and guest stderr on
	// failures. nil = discard.
	Logger *slog.Logger
	// CheckBuiltins compiles the built-in filters with the per-loop
	// termination checks every other module gets, so a built-in that
	// overruns its deadline is stopped rather than abandoned (see "Why
	// built-in filters run without termination checks"). About 2× slower.
	CheckBuiltins bool
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.MaxMemoryPages == 0 {
		r.MaxMemoryPages = DefaultMaxMemoryPages
	}
	if r.MaxMemoryPages > 65536 {
		r.MaxMemoryPages = 65536
	}
	if r.Timeout <= 0 {
		r.Timeout = DefaultTimeout
	}
	if r.TimeoutPerMiB == 0 {
		r.TimeoutPerMiB = DefaultTimeoutPerMiB
	}
	if r.InitTimeout <= 0 {
		r.InitTimeout = DefaultInitTimeout
	}
	if r.CompileTimeout <= 0 {
		r.CompileTimeout = DefaultCompileTimeout
	}
	if r.CompileTimeoutPerMiB == 0 {
		r.CompileTimeoutPerMiB = DefaultCompileTimeoutPerMiB
	}
	if r.PoolSize <= 0 {
		r.PoolSize = runtime.GOMAXPROCS(0)
	}
	if r.PoolIdleTimeout == 0 {
		r.PoolIdleTimeout = DefaultPoolIdleTimeout
	}
	if r.MaxCallsPerInstance <= 0 {
		r.MaxCallsPerInstance = DefaultMaxCallsPerInstance
	}
	if r.RecycleAbovePages == 0 || r.RecycleAbovePages > r.MaxMemoryPages {
		r.RecycleAbovePages = r.MaxMemoryPages * 3 / 4
	}
	if r.MaxInputBytes <= 0 {
		r.MaxInputBytes = DefaultMaxInputBytes
	}
	if r.MaxOutputBytes <= 0 {
		r.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if r.MaxModuleBytes <= 0 {
		r.MaxModuleBytes = DefaultMaxModuleBytes
	}
	if r.MaxOffloadBytes <= 0 {
		r.MaxOffloadBytes = DefaultMaxOffloadBytes
	}
	if r.DisableAfter == 0 {
		r.DisableAfter = DefaultDisableAfter
	}
	if r.DisableCoolDown == 0 {
		r.DisableCoolDown = DefaultDisableCoolDown
	}
	return r
}

// Host runs filters: two wazero runtimes (one with termination checks for
// modules from configuration, one without for the built-ins), their
// compilation caches, the compiled modules and the instance pools.
type Host struct {
	opts   Options
	rt     wazero.Runtime // every module from configuration (and built-ins with CheckBuiltins)
	rtFast wazero.Runtime // built-ins: no termination checks; nil with CheckBuiltins
	caches []wazero.CompilationCache
	logger *slog.Logger

	mu       sync.Mutex
	closed   bool
	compiled map[compiledKey]*compiledModule
	pools    map[poolKey]*pool
	// freeOut holds released output buffers (see Output.Release).
	freeOut chan *outBuf
	// inflight counts the calls running on rtFast (abandoned ones
	// included): Close waits for them before closing the runtimes.
	inflight sync.WaitGroup
	// compiling counts compilations, those given up on at their budget
	// included (each ends after the function it is compiling): Close
	// waits for them before closing the runtimes.
	compiling sync.WaitGroup
	// randomBytes counts the bytes random_get produced (for tests).
	randomBytes atomic.Int64
}

// compiledKey: the same module bytes compiled for either runtime.
type compiledKey struct {
	hash [32]byte
	fast bool
}

type compiledModule struct {
	hash     [32]byte
	fast     bool // compiled by rtFast: calls are not interruptible
	rt       wazero.Runtime
	cm       wazero.CompiledModule
	hasInit  bool
	hasStart bool
	minPages uint32
	refs     int
}

// NewHost creates the runtimes (see newRuntime): one with termination
// checks for modules from configuration and, unless Options.CheckBuiltins,
// one without for the built-in filters.
func NewHost(ctx context.Context, opts *Options) (*Host, error) {
	o := opts.withDefaults()
	h := &Host{opts: o, logger: o.Logger, compiled: map[compiledKey]*compiledModule{}, pools: map[poolKey]*pool{}, freeOut: make(chan *outBuf, maxFreeOutBufs)}
	if h.logger == nil {
		h.logger = slog.New(slog.DiscardHandler)
	}
	var err error
	if h.rt, err = h.newRuntime(ctx, true, o.CacheDir); err != nil {
		h.Close(ctx)
		return nil, err
	}
	if !o.CheckBuiltins {
		// Its own cache directory: wazero's cache key is the module's
		// digest alone, so code compiled without checks must never be
		// found by the checked runtime (a configured copy of a built-in).
		dir := ""
		if o.CacheDir != "" {
			dir = filepath.Join(o.CacheDir, "unchecked")
		}
		if h.rtFast, err = h.newRuntime(ctx, false, dir); err != nil {
			h.Close(ctx)
			return nil, err
		}
	}
	return h, nil
}

// newRuntime creates one runtime (compiler engine on amd64/arm64,
// interpreter elsewhere) with the memory cap, termination checks when
// checked, its compilation cache in dir ("" = none), and links the mcpf
// host module and the sandboxed WASI subset into it.
func (h *Host) newRuntime(ctx context.Context, checked bool, dir string) (wazero.Runtime, error) {
	var cfg wazero.RuntimeConfig
	switch runtime.GOARCH {
	case "amd64", "arm64":
		cfg = wazero.NewRuntimeConfigCompiler()
	default:
		cfg = wazero.NewRuntimeConfigInterpreter()
	}
	cfg = cfg.WithCloseOnContextDone(checked).WithMemoryLimitPages(h.opts.MaxMemoryPages)
	if dir != "" {
		c, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			return nil, fmt.Errorf("wasm: compilation cache in %s: %w", dir, err)
		}
		h.caches = append(h.caches, c)
		cfg = cfg.WithCompilationCache(c)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if err := h.linkWASI(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("wasm: linking WASI: %w", err)
	}
	if err := h.linkMCPF(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("wasm: linking the mcpf host module: %w", err)
	}
	return rt, nil
}

// Close closes every instance, compiled module and the runtime. Filters
// loaded from h fail with ErrClosed afterwards.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	pools := h.pools
	h.pools = map[poolKey]*pool{}
	h.mu.Unlock()
	// Calls on rtFast cannot be stopped: let them end (each is linear in
	// its input) before their code and memory go.
	h.inflight.Wait()
	h.compiling.Wait()
	for _, p := range pools {
		p.shutdown(ctx)
	}
	var err error
	for _, rt := range []wazero.Runtime{h.rt, h.rtFast} {
		if rt != nil {
			if cerr := rt.Close(ctx); err == nil {
				err = cerr
			}
		}
	}
	for _, c := range h.caches {
		if cerr := c.Close(ctx); err == nil {
			err = cerr
		}
	}
	return err
}

// Mode is a filter's input mode.
type Mode string

const (
	// ModeText: mcpf_filter runs once per text content item; input and
	// output are the item's UTF-8 text. The default.
	ModeText Mode = "text"
	// ModeResultJSON: mcpf_filter runs once per result; input and output are
	// the whole CallToolResult JSON.
	ModeResultJSON Mode = "result-json"
)

// OnError says what the caller does with the result when a filter fails.
type OnError string

const (
	// FailClosed withholds the result (the default; mandatory for redaction).
	FailClosed OnError = "fail-closed"
	// FailOpen passes the unfiltered result on (and logs the failure).
	FailOpen OnError = "fail-open"
)

// Spec describes one filter to load.
type Spec struct {
	Name    string          // for errors, logs and Status
	Module  []byte          // module bytes; or
	Builtin string          // a built-in filter's name ("shape", "redact"); see Builtin
	SHA256  string          // optional hex pin of the module bytes
	Config  json.RawMessage // static config handed to the guest (JSON; empty = none)
	Mode    Mode            // "" = the built-in's mode, else ModeText
	OnError OnError         // "" = FailClosed
	Timeout time.Duration   // per call, the fixed part; 0 = Options.Timeout
	// TimeoutPerMiB: the part of a call's deadline that grows with its
	// input; 0 = Options.TimeoutPerMiB, negative = none.
	TimeoutPerMiB time.Duration
	// PoolSize overrides Options.PoolSize for this (module, config).
	PoolSize int
}

// Load validates, compiles (once per module; cached on disk) and checks the
// module's imports and exports, then pre-warms one instance, which runs
// _initialize and mcpf_init (a config the guest rejects fails here, not on
// the request path).
func (h *Host) Load(ctx context.Context, spec Spec) (*Filter, error) {
	name := spec.Name
	mod := spec.Module
	mode := spec.Mode
	if spec.Builtin != "" {
		if mod != nil {
			return nil, fmt.Errorf("%w: filter %q sets both Module and Builtin", ErrInvalidSpec, name)
		}
		b, ok := Builtin(spec.Builtin)
		if !ok {
			return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownBuiltin, spec.Builtin, strings.Join(BuiltinNames(), ", "))
		}
		mod = b
		if mode == "" {
			mode = builtinModes[spec.Builtin]
		}
		if name == "" {
			name = "builtin:" + spec.Builtin
		}
	}
	if mode == "" {
		mode = ModeText
	}
	if mode != ModeText && mode != ModeResultJSON {
		return nil, fmt.Errorf("%w: filter %q: mode %q (want %q or %q)", ErrInvalidSpec, name, mode, ModeText, ModeResultJSON)
	}
	onErr := spec.OnError
	if onErr == "" {
		onErr = FailClosed
	}
	if onErr != FailClosed && onErr != FailOpen {
		return nil, fmt.Errorf("%w: filter %q: onError %q (want %q or %q)", ErrInvalidSpec, name, onErr, FailClosed, FailOpen)
	}
	if len(mod) == 0 {
		return nil, fmt.Errorf("%w: filter %q has no module bytes", ErrInvalidSpec, name)
	}
	if len(mod) > h.opts.MaxModuleBytes {
		return nil, fmt.Errorf("%w: filter %q is %d bytes, cap %d", ErrModuleTooLarge, name, len(mod), h.opts.MaxModuleBytes)
	}
	hash := sha256.Sum256(mod)
	if spec.SHA256 != "" {
		want, err := hex.DecodeString(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(spec.SHA256)), "sha256:"))
		if err != nil || len(want) != 32 {
			return nil, fmt.Errorf("%w: filter %q: sha256 %q is not 64 hex digits", ErrInvalidSpec, name, spec.SHA256)
		}
		if string(want) != string(hash[:]) {
			return nil, fmt.Errorf("%w: filter %q: pinned %s, got %s", ErrSHA256Mismatch, name, hex.EncodeToString(want), hex.EncodeToString(hash[:]))
		}
	}
	config, err := normalizeConfig(spec.Config)
	if err != nil {
		return nil, fmt.Errorf("%w: filter %q: config: %v", ErrInvalidSpec, name, err)
	}
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = h.opts.Timeout
	}
	perMiB := spec.TimeoutPerMiB
	if perMiB == 0 {
		perMiB = h.opts.TimeoutPerMiB
	}
	perMiB = max(perMiB, 0)
	size := spec.PoolSize
	if size <= 0 {
		size = h.opts.PoolSize
	}

	fast := spec.Builtin != "" && h.rtFast != nil && builtinUnchecked(spec.Builtin, config)
	var budget time.Duration
	if spec.Builtin == "" {
		budget = h.compileBudget(len(mod))
	}
	cm, err := h.compile(ctx, name, mod, hash, fast, budget)
	if err != nil {
		return nil, err
	}
	key := poolKey{module: hash, config: sha256.Sum256(config), fast: fast}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		h.release(ctx, cm)
		return nil, ErrClosed
	}
	p := h.pools[key]
	fresh := p == nil
	if fresh {
		p = newPool(h, key, cm, config, size)
		h.pools[key] = p
	} else {
		h.mu.Unlock()
		h.release(ctx, cm) // the pool holds its own reference
		h.mu.Lock()
	}
	p.refs++
	h.mu.Unlock()

	f := &Filter{host: h, name: name, mode: mode, onError: onErr, builtin: spec.Builtin != "", timeout: timeout, perMiB: perMiB, pool: p}
	if fresh {
		// Pre-warm one instance: runs _initialize and mcpf_init now.
		inst, err := p.instantiate(ctx, name)
		if err != nil {
			f.Close(ctx)
			return nil, err
		}
		if !p.idleAdd(inst) { // a fresh pool has room for its first instance
			p.discard(ctx, inst) // closed meanwhile
		}
	}
	return f, nil
}

// compileBudget is the time a module of size bytes from configuration
// may take to compile (Options.CompileTimeout, CompileTimeoutPerMiB).
func (h *Host) compileBudget(size int) time.Duration {
	b := h.opts.CompileTimeout
	if per := h.opts.CompileTimeoutPerMiB; per > 0 {
		b += time.Duration(float64(per) * float64(size) / (1 << 20))
	}
	return b
}

// compile returns the compiled module for hash, compiling at most once per
// Host; the wazero cache makes a restart cheap. A budget > 0 bounds the
// compilation (compileBounded).
func (h *Host) compile(ctx context.Context, name string, mod []byte, hash [32]byte, fast bool, budget time.Duration) (*compiledModule, error) {
	key := compiledKey{hash: hash, fast: fast}
	rt := h.rt
	if fast {
		rt = h.rtFast
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	if c := h.compiled[key]; c != nil {
		c.refs++
		h.mu.Unlock()
		return c, nil
	}
	h.mu.Unlock()
	if !fast && !noEntryChecks {
		// wazero caches compiled code under the digest of these bytes,
		// so code compiled from a module's rewrite is never mistaken for
		// code compiled from the module itself.
		checked, err := withEntryChecks(mod)
		if err != nil {
			return nil, &CompileError{Filter: name, Err: err}
		}
		mod = checked
	}
	size := len(mod)
	cm, err := h.compileBounded(ctx, rt, mod, budget)
	if err != nil {
		if errors.Is(err, ErrCompileBudget) {
			return nil, &CompileError{Filter: name, Err: &LimitError{Limit: "a module that takes too long to compile", Function: -1, Offset: -1,
				Detail: fmt.Sprintf("not compiled within its budget of %v (%v + %v per MiB of its %d bytes)", budget, h.opts.CompileTimeout, max(h.opts.CompileTimeoutPerMiB, 0), size),
				Fix:    "make the module smaller or split it into several filters, with smaller functions (the compiler's time grows faster than a function's size); a module that once compiled within the budget loads from the compilation cache",
				Err:    err}}
		}
		if strings.Contains(err.Error(), "over limit") || strings.Contains(err.Error(), "exceeds limit") {
			return nil, &MemoryLimitError{Filter: name, LimitPages: h.opts.MaxMemoryPages, Detail: "the module's declared minimum memory is over the cap: " + err.Error()}
		}
		return nil, &CompileError{Filter: name, Err: err}
	}
	c := &compiledModule{hash: hash, fast: fast, rt: rt, cm: cm, refs: 1}
	if err := h.check(name, c); err != nil {
		cm.Close(ctx)
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		cm.Close(ctx)
		return nil, ErrClosed
	}
	if prev := h.compiled[key]; prev != nil { // compiled concurrently
		cm.Close(ctx)
		prev.refs++
		return prev, nil
	}
	h.compiled[key] = c
	return c, nil
}

// compileWorkers: wazero v1.12.0 checks the context between functions
// only when it compiles with more than one goroutine.
const compileWorkers = 2

// compileBounded compiles mod, giving up after budget (none if budget <=
// 0) with ErrCompileBudget. The compile runs on its own goroutines with
// a context that ends at the budget; wazero checks it before each
// function, so a compilation given up on ends after the functions it is
// on (their cost is bounded by the structural caps of withEntryChecks),
// and closes what it compiled if it finished anyway. Close waits for it.
// The caller returns at the budget.
func (h *Host) compileBounded(ctx context.Context, rt wazero.Runtime, mod []byte, budget time.Duration) (wazero.CompiledModule, error) {
	if budget <= 0 {
		return compileModule(ctx, rt, mod)
	}
	cctx, cancel := context.WithTimeout(experimental.WithCompilationWorkers(ctx, compileWorkers), budget)
	defer cancel()
	type result struct {
		cm  wazero.CompiledModule
		err error
	}
	var (
		mu     sync.Mutex
		gaveUp bool
	)
	done := make(chan result, 1)
	h.compiling.Add(1)
	go func() {
		defer h.compiling.Done()
		cm, err := compileModule(cctx, rt, mod)
		mu.Lock()
		defer mu.Unlock()
		if gaveUp {
			if cm != nil {
				cm.Close(context.Background())
			}
			return
		}
		done <- result{cm, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-cctx.Done():
		mu.Lock()
		select {
		case r = <-done:
		default:
			gaveUp = true
		}
		mu.Unlock()
		if gaveUp {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return nil, ErrCompileBudget
		}
	}
	if r.err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		if r.cm != nil {
			r.cm.Close(context.Background())
		}
		return nil, ErrCompileBudget
	}
	return r.cm, r.err
}

// compileModule is rt.CompileModule, with a panic of the compiler turned
// into an error: wazero v1.12.0 indexes some tables of a module before it
// has checked them (a call of a function whose declared type does not
// exist panics), and a module from configuration must not bring the
// process down.
func compileModule(ctx context.Context, rt wazero.Runtime, mod []byte) (cm wazero.CompiledModule, err error) {
	defer func() {
		if r := recover(); r != nil {
			cm, err = nil, fmt.Errorf("malformed module (the compiler failed on it: %v)", r)
		}
	}()
	return rt.CompileModule(ctx, mod)
}

func (h *Host) release(ctx context.Context, c *compiledModule) {
	h.mu.Lock()
	c.refs--
	last := c.refs == 0
	if k := (compiledKey{hash: c.hash, fast: c.fast}); last && h.compiled[k] == c {
		delete(h.compiled, k)
	}
	closed := h.closed
	h.mu.Unlock()
	if last && !closed {
		c.cm.Close(ctx)
	}
}

// wasiAllowed are the WASI preview-1 functions a guest may import: what Go
// (wasip1), TinyGo and Rust runtimes import at start-up. With no preopens, no
// args, no env, fake clocks and a deterministic random source they grant no
// capability. Anything else (path_open, sock_*, fd_read ...) is refused.
var wasiAllowed = map[string]bool{
	"args_get": true, "args_sizes_get": true,
	"environ_get": true, "environ_sizes_get": true,
	"clock_time_get": true, "clock_res_get": true,
	"fd_write": true, "fd_close": true, "fd_fdstat_get": true, "fd_fdstat_set_flags": true,
	"fd_prestat_get": true, "fd_prestat_dir_name": true,
	"poll_oneoff": true, "sched_yield": true, "proc_exit": true, "random_get": true,
}

// check enforces the import allow-list and the export contract.
func (h *Host) check(name string, c *compiledModule) error {
	for _, imp := range c.cm.ImportedFunctions() {
		m, n, _ := imp.Import()
		switch m {
		case "mcpf":
			sig, ok := mcpfSignatures[n]
			if !ok {
				return &ForbiddenImportError{Filter: name, Module: m, Name: n, Reason: "not a function of ABI mcpf v1"}
			}
			if !sameTypes(imp.ParamTypes(), sig.params) || !sameTypes(imp.ResultTypes(), sig.results) {
				return &ForbiddenImportError{Filter: name, Module: m, Name: n, Reason: "wrong signature, want " + sig.String()}
			}
		case wasi_snapshot_preview1.ModuleName:
			if !wasiAllowed[n] {
				return &ForbiddenImportError{Filter: name, Module: m, Name: n, Reason: "WASI function not granted to filters (no filesystem, network or environment)"}
			}
		default:
			return &ForbiddenImportError{Filter: name, Module: m, Name: n}
		}
	}
	for _, mem := range c.cm.ImportedMemories() {
		m, n, _ := mem.Import()
		return &ForbiddenImportError{Filter: name, Module: m, Name: n, Reason: "filters must define their own memory"}
	}
	exports := c.cm.ExportedFunctions()
	if _, ok := exports["mcpf_abi_v1"]; !ok {
		found := ""
		for n := range exports {
			if strings.HasPrefix(n, "mcpf_abi_") && (found == "" || n < found) {
				found = n
			}
		}
		return &ABIVersionError{Filter: name, Found: found}
	}
	fn, ok := exports["mcpf_filter"]
	if !ok {
		return &ABIVersionError{Filter: name, Detail: "missing export mcpf_filter: () -> i32"}
	}
	if len(fn.ParamTypes()) != 0 || !sameTypes(fn.ResultTypes(), []api.ValueType{api.ValueTypeI32}) {
		return &ABIVersionError{Filter: name, Detail: "export mcpf_filter must have type () -> i32"}
	}
	if in, ok := exports["mcpf_init"]; ok {
		if len(in.ParamTypes()) != 0 || !sameTypes(in.ResultTypes(), []api.ValueType{api.ValueTypeI32}) {
			return &ABIVersionError{Filter: name, Detail: "export mcpf_init must have type () -> i32"}
		}
		c.hasInit = true
	}
	if st, ok := exports["_initialize"]; ok {
		if len(st.ParamTypes()) != 0 || len(st.ResultTypes()) != 0 {
			return &ABIVersionError{Filter: name, Detail: "export _initialize must have type () -> ()"}
		}
		c.hasStart = true
	}
	mems := c.cm.ExportedMemories()
	mem, ok := mems["memory"]
	if !ok {
		return &ABIVersionError{Filter: name, Detail: "missing export memory"}
	}
	c.minPages = mem.Min()
	if c.minPages > h.opts.MaxMemoryPages {
		return &MemoryLimitError{Filter: name, LimitPages: h.opts.MaxMemoryPages, Detail: fmt.Sprintf("the module declares %d initial pages", c.minPages)}
	}
	return nil
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// normalizeConfig checks that config is JSON and compacts it, so the pool key
// (a digest of the config) ignores whitespace. Numbers keep their text.
func normalizeConfig(raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var out bytes.Buffer
	if err := json.Compact(&out, raw); err != nil {
		return nil, errors.New("not valid JSON: " + err.Error())
	}
	if !utf8.Valid(out.Bytes()) {
		return nil, errors.New("not valid UTF-8")
	}
	return out.Bytes(), nil
}
