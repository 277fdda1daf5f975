package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sluice/gateway/config"
	"sluice/gateway/proc"
	"sluice/gateway/trace"
	"sluice/wasm"
)

// The result pipeline.
//
// Filters come from the user file's filters: list (config.Settings.Filters),
// in order: every result-stage filter whose capability globs match runs on
// every tool result (direct calls and calls from scripts alike); when the
// result goes back to a model, the matching context-stage filters run after
// them. A script's final value is filtered under the pseudo capability
// ExecuteCapability ("sluice__execute"), which globs such as "*" match.
//
// Defaults: builtin:shape runs at the context stage with a 16 KiB budget,
// fail-open, on every capability, unless the list has a builtin:shape entry
// (which replaces it; "capabilities: []" turns shaping off). A filter's
// onError defaults to fail-closed, its timeoutMs (per call) to the filter
// host's 100 ms. Offloaded results live in results.dir
// (default <state dir>/results, 0700, files 0600) for results.ttlMs
// (default 24 h) under results.quotaBytes (default 256 MiB).
//
// Open refuses to start when the filters setting has an error, a module is
// unreadable, unknown or does not match its sha256 pin, or the results
// directory is unsafe. Each filter is compiled (wazero cache in
// <cache dir>/wazero) and warmed alone, when a result first has to run
// through it or when LoadFilters is called, never per call; a filter no
// result needs is never loaded (CheckFilters only checks). When the user file's filters
// change, the next result runs through a new set built from them (calls in
// flight finish with the old one); while the file contributes nothing
// (syntax error ...) or the new filters cannot run (invalid setting, pin
// mismatch ...), results are withheld with a KindFilter error. The results
// settings are read once, at Open.

// Filter pipeline defaults.
const (
	// DefaultShapeBudget is the byte budget of the default shape filter.
	DefaultShapeBudget = 16384
	// DefaultFilterLoadTimeout bounds compiling and warming every filter.
	DefaultFilterLoadTimeout = 2 * time.Minute
	// defaultShapeName names the implicit shape filter in statuses and errors.
	defaultShapeModule = config.BuiltinPrefix + "shape"
)

// Filter states reported by FilterStatuses.
const (
	FilterNotLoaded  = "not-loaded"     // configured; compiled on first need or by LoadFilters
	FilterActive     = "active"         // loaded and running
	FilterDisabled   = "disabled"       // failed too often in a row; results follow its onError policy
	FilterLoadFailed = "failed-to-load" // could not be compiled or rejected its config
	FilterInactive   = "inactive"       // capabilities: [] — matches nothing, never loaded
)

// FilterStatus is one configured filter and its health.
type FilterStatus struct {
	Index               int       `json:"index"` // position in filters:, -1 for the default shape filter
	Name                string    `json:"name"`
	Module              string    `json:"module"`
	Stage               string    `json:"stage"`
	Capabilities        []string  `json:"capabilities"`
	OnError             string    `json:"onError"`
	Default             bool      `json:"default,omitempty"` // the implicit shape filter
	State               string    `json:"state"`
	Mode                string    `json:"mode,omitempty"`
	Calls               int64     `json:"calls"`
	Failures            int64     `json:"failures"`
	ConsecutiveFailures int       `json:"consecutiveFailures"`
	LastError           string    `json:"lastError,omitempty"`
	DisabledAt          time.Time `json:"disabledAt,omitzero"`
	DisabledFor         []string  `json:"disabledFor,omitempty"` // servers it is disabled for (each for a cool-down)
	ReenabledAt         time.Time `json:"reenabledAt,omitzero"`  // last came back after a cool-down or by command
	File                string    `json:"file,omitempty"`
	Line                int       `json:"line,omitempty"`

	// P50 is the median of the filter's recent runs in this process.
	P50 time.Duration `json:"p50Ns,omitempty"`
}

// pipeline runs the result filters of one gateway: the current filter set
// (rebuilt when the user file's filters change) and the offload store
// behind shape's handles.
type pipeline struct {
	log      *slog.Logger
	cacheDir string // wazero compilation cache
	store    *wasm.OffloadStore
	storeDir string // the store's directory, for the dashboard's listing
	reqID    atomic.Uint64

	mu     sync.Mutex
	cur    *filterSet
	seen   string         // fingerprint of the filter settings last looked at
	seenL  *config.Loaded // the declarations seen was taken of (a reload makes a new one)
	cfgErr error          // the settings last looked at cannot run: calls are refused
	closed bool
	sets   sync.WaitGroup // sets not yet closed

	// observe, when set, is told the outcome of every filter run (for
	// sluice_filter_outcomes_total): pass, modified, blocked, error,
	// fail_open or fail_closed.
	observe atomic.Pointer[func(filter, outcome string)]

	countMu sync.Mutex
	counts  outcomeCounts // every run's outcome, for the live status
	passes  sync.Map      // filter name -> *atomic.Int64: its "pass" outcomes (counted apart)
}

// filterSet is one generation of filters: one wasm.Host (created on the
// first filter's load) and the filters in config order, each compiled and
// warmed when it first has to run (or by LoadFilters). Calls hold a
// reference; a replaced set closes when its last call ends.
type filterSet struct {
	p       *pipeline
	entries []*filterEntry
	refs    int // guarded by p.mu; 1 while current, plus one per call

	mu     sync.Mutex
	host   *wasm.Host
	hostMu sync.Mutex // serialises creating the host
	// hostErr is why the host could not start (set once; every filter of
	// the set then fails to load with it).
	hostErr error
	loads   sync.WaitGroup // filter loads in progress: close waits for them
	closed  bool
}

// prepareCompileCache, when set (by tests, which give every gateway its own
// cache directory), fills a compilation cache directory before a host
// compiles the named built-ins into it.
var prepareCompileCache func(dir string, builtins []string)

// filterEntry is one configured filter.
type filterEntry struct {
	index   int // in filters:, -1 for the default shape
	name    string
	cfg     config.Filter
	spec    wasm.Spec
	budget  int  // shape's budget: results within it pass without a call; 0 = unknown
	isShape bool // builtin shape (native fallback for inputs over the host's cap)

	// guarded by the set's mu:
	loadDone chan struct{} // closed once the load ended (nil: not started)
	filter   *wasm.Filter  // set by load
	loadErr  error
	runs     latencies // recent run times, for FilterStatus.P50

	// passes counts this filter's "pass" outcomes (shared by name with
	// the sets before and after, as the other outcomes are): the common
	// outcome of a within-budget result, counted without a lock.
	passes *atomic.Int64
}

func (e *filterEntry) inactive() bool { return len(e.cfg.Capabilities) == 0 }

// initPipeline validates the filter configuration and opens the offload
// store. It refuses to start (fail closed) when the filters setting was
// invalid, a module cannot be read or does not match its sha256 pin, or the
// results directory is unsafe. Modules are compiled later, once, on first
// need or by LoadFilters — never per call.
func (g *Gateway) initPipeline() error {
	l := g.reload()
	st := l.Settings
	if err := invalidFilters(l); err != nil {
		return err
	}
	entries, err := buildEntries(st.Filters)
	if err != nil {
		return err
	}
	dir := st.Results.Dir
	if dir == "" {
		dir = filepath.Join(g.stateDir, "results")
	}
	// Private before the store opens it: mode 0700, and on Windows an
	// owner-only access list that every result file inherits.
	if err := proc.MkdirPrivate(dir); err != nil {
		return &Error{Kind: KindGateway, Message: "cannot create the results store: " + err.Error(), Remedy: fixText("fix the directory or set results.dir in " + l.UserFile), Err: err}
	}
	store, err := wasm.NewOffloadStore(wasm.OffloadOptions{
		Dir:        dir,
		TTL:        time.Duration(st.Results.TtlMs) * time.Millisecond,
		QuotaBytes: st.Results.QuotaBytes,
		Now:        g.opts.now,
	})
	if err != nil {
		remedy := "fix the directory or set results.dir in " + l.UserFile
		if errors.Is(err, wasm.ErrOffloadStoreInDir) {
			remedy = "run 'chmod 700 " + dir + "' (it must be a directory only you can read), or set results.dir"
		}
		return &Error{Kind: KindGateway, Message: "cannot open the results store: " + err.Error(), Remedy: fixText(remedy), Err: err}
	}
	p := &pipeline{
		log:      g.log,
		cacheDir: filepath.Join(g.cacheDir, "wazero"),
		store:    store,
		storeDir: dir,
		seen:     filtersFingerprint(l),
	}
	p.cur = p.newSet(entries)
	if d, broken := userFileBroken(l); broken {
		p.cfgErr = brokenErr(l, d)
	}
	g.pipeline = p
	return nil
}

// invalidFilters is the refusal for a filters setting with errors.
func invalidFilters(l *config.Loaded) error {
	var lines []string
	for _, d := range l.Diagnostics {
		if d.Severity == config.SeverityError && d.File == l.UserFile && isFiltersField(d.Field) {
			lines = append(lines, d.String())
		}
	}
	if !slices.Contains(l.Settings.Invalid, "filters") && len(lines) == 0 {
		return nil
	}
	msg := "the filters setting in " + l.UserFile + " is invalid; sluice will not run without the filters you configured"
	if len(lines) > 0 {
		msg += ":\n  " + strings.Join(lines, "\n  ")
	}
	return &Error{Kind: KindGateway, Message: msg, Remedy: fixUser("fix the filters setting (run 'sluice check' for every diagnostic)")}
}

func brokenErr(l *config.Loaded, d config.Diagnostic) error {
	return &Error{Kind: KindFilter,
		Message: "the user config file cannot be used (" + d.Message + "), so the filters it configures are unknown; results are withheld until it is fixed",
		Remedy:  fixUser("fix " + l.UserFile + " (run 'sluice check')")}
}

func (p *pipeline) newSet(entries []*filterEntry) *filterSet {
	p.sets.Add(1)
	for _, e := range entries {
		e.passes = p.passCounter(e.name)
	}
	return &filterSet{p: p, entries: entries, refs: 1}
}

func isFiltersField(f string) bool {
	return f == "filters" || strings.HasPrefix(f, "filters[") || strings.HasPrefix(f, "filters.")
}

// userFileBroken returns the diagnostic of a user file that contributes
// nothing (syntax error, unreadable, not a mapping ...): its filters are
// then unknown.
func userFileBroken(l *config.Loaded) (config.Diagnostic, bool) {
	for _, d := range l.Diagnostics {
		if d.Severity == config.SeverityError && d.File != "" && d.File == l.UserFile && d.Field == "" {
			return d, true
		}
	}
	return config.Diagnostic{}, false
}

// filtersFingerprint digests what decides which filters run (positions
// excluded, so editing elsewhere in the file changes nothing).
func filtersFingerprint(l *config.Loaded) string {
	type f struct {
		Module, Builtin, Path, SHA256, Stage, OnError string
		Capabilities                                  []string
		Config                                        json.RawMessage
		TimeoutMs, TimeoutPerMiBMs                    int64
	}
	var fs []f
	for _, x := range l.Settings.Filters {
		fs = append(fs, f{x.Module, x.Builtin, x.Path, x.SHA256, x.Stage, x.OnError, x.Capabilities, x.Config, x.TimeoutMs, x.TimeoutPerMiBMs})
	}
	_, broken := userFileBroken(l)
	b, _ := json.Marshal(struct {
		Filters []f
		Invalid bool
		Broken  bool
	}{fs, slices.Contains(l.Settings.Invalid, "filters"), broken})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// acquire returns the filter set to run a result through, with a
// reference the caller releases. When the user file's filters changed, a
// new set replaces the current one (calls in flight keep theirs); while the
// file contributes nothing or its filters cannot run, calls are refused.
func (g *Gateway) acquire(capability string) (*filterSet, error) {
	p := g.pipeline
	l := g.loadedForCall()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, &Error{Kind: KindFilter, Capability: capability, Message: "the gateway is closed; the result was withheld", Err: ErrClosed}
	}
	fp := p.seen
	if l != p.seenL { // unchanged declarations: the same filters
		fp = filtersFingerprint(l)
		p.seenL = l
	}
	if fp != p.seen {
		p.seen = fp
		p.cfgErr = nil
		if d, broken := userFileBroken(l); broken {
			p.cfgErr = brokenErr(l, d)
		} else if err := invalidFilters(l); err != nil {
			p.cfgErr = err
		} else if entries, err := buildEntries(l.Settings.Filters); err != nil {
			p.cfgErr = err
		} else {
			old := p.cur
			p.cur = p.newSet(entries)
			p.releaseLocked(old)
			p.log.Info("filters changed; new filters apply from the next result", "filters", len(entries))
		}
		if p.cfgErr != nil {
			p.log.Error("filters setting cannot run; results are withheld", "error", p.cfgErr)
		}
	}
	if p.cfgErr != nil {
		var ge *Error
		if errors.As(p.cfgErr, &ge) {
			e := *ge
			e.Kind, e.Capability = KindFilter, capability
			return nil, &e
		}
		return nil, &Error{Kind: KindFilter, Capability: capability, Message: p.cfgErr.Error(), Err: p.cfgErr}
	}
	p.cur.refs++
	return p.cur, nil
}

func (p *pipeline) release(s *filterSet) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked(s)
}

// releaseLocked drops a reference; the last one closes the set (in the
// background: closing waits for a load in progress).
func (p *pipeline) releaseLocked(s *filterSet) {
	s.refs--
	if s.refs == 0 {
		go func() {
			defer p.sets.Done()
			s.close()
		}()
	}
}

// buildEntries turns the configured filters into load specs, reading and
// pin-checking module files now. The default shape filter is appended at the
// context stage unless a builtin:shape entry is configured.
func buildEntries(fs []config.Filter) ([]*filterEntry, error) {
	var out []*filterEntry
	names := map[string]int{}
	hasShape := false
	for i, f := range fs {
		e := &filterEntry{index: i, cfg: f, name: f.Module}
		names[f.Module]++
		switch {
		case f.Builtin != "":
			if _, ok := wasm.Builtin(f.Builtin); !ok {
				return nil, &Error{Kind: KindGateway, Message: fmt.Sprintf("%s: filters[%d]: unknown built-in filter %q (known: %s)", where(f), i, f.Builtin, strings.Join(wasm.BuiltinNames(), ", ")),
					Remedy: fixText("use one of the built-in names or a path to a .wasm file")}
			}
			e.spec.Builtin = f.Builtin
			if f.Builtin == "redact" && f.OnError == config.OnErrorOpen {
				// A redaction filter that fails open hands the model the
				// very text it exists to hide.
				return nil, &Error{Kind: KindGateway, Message: fmt.Sprintf("%s: filters[%d]: builtin:redact must be fail-closed: when it fails, the model sees an error, never unredacted text", where(f), i),
					Remedy: fixText("remove 'onError: fail-open' from this filter (fail-closed is the default)")}
			}
			if f.Builtin == "shape" {
				hasShape = true
				e.isShape = true
				e.budget = shapeBudget(f.Config)
			}
		default:
			b, err := readModule(f.Path)
			if err != nil {
				return nil, &Error{Kind: KindGateway, Message: fmt.Sprintf("%s: filters[%d]: cannot read filter module %s: %v", where(f), i, f.Path, err),
					Remedy: fixText("point module at a readable .wasm file"), Err: err}
			}
			if f.SHA256 != "" {
				sum := sha256.Sum256(b)
				if got := hex.EncodeToString(sum[:]); got != f.SHA256 {
					return nil, &Error{Kind: KindGateway, Message: fmt.Sprintf("%s: filters[%d]: module %s does not match its sha256 pin (pinned %s, file has %s); refusing to run", where(f), i, f.Path, f.SHA256, got),
						Remedy: fixText("restore the pinned module, or update sha256 after reviewing the new file (sha256sum " + f.Path + ")"), Err: wasm.ErrSHA256Mismatch}
				}
			}
			e.spec.Module = b
			e.spec.SHA256 = f.SHA256
		}
		e.spec.Config = f.Config
		e.spec.OnError = wasm.OnError(f.OnError)
		e.spec.Timeout = time.Duration(f.TimeoutMs) * time.Millisecond // 0: the host's default
		e.spec.TimeoutPerMiB = time.Duration(f.TimeoutPerMiBMs) * time.Millisecond
		out = append(out, e)
	}
	for _, e := range out {
		if names[e.cfg.Module] > 1 {
			e.name = fmt.Sprintf("%s#%d", e.cfg.Module, e.index)
		}
		e.spec.Name = e.name
	}
	if !hasShape {
		cfg := json.RawMessage(`{"budgetBytes":` + strconv.Itoa(DefaultShapeBudget) + `}`)
		out = append(out, &filterEntry{
			index: -1, name: defaultShapeModule, isShape: true, budget: DefaultShapeBudget,
			cfg:  config.Filter{Module: defaultShapeModule, Builtin: "shape", Capabilities: []string{"*"}, Stage: config.StageContext, Config: cfg, OnError: config.OnErrorOpen},
			spec: wasm.Spec{Name: defaultShapeModule, Builtin: "shape", Config: cfg, OnError: wasm.FailOpen},
		})
	}
	return out, nil
}

func where(f config.Filter) string {
	if f.File == "" {
		return "config"
	}
	if f.Line > 0 {
		return fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	return f.File
}

// readModule reads a module file, bounded by the host's module cap. Only a
// regular file is opened (a FIFO would block the open).
func readModule(path string) ([]byte, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, wasm.DefaultMaxModuleBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > wasm.DefaultMaxModuleBytes {
		return nil, fmt.Errorf("larger than %d bytes", wasm.DefaultMaxModuleBytes)
	}
	return b, nil
}

// shapeBudget reads budgetBytes from a shape config (default 16 KiB); 0
// when the config is not understood, which disables the within-budget
// shortcut (the filter then decides every time).
func shapeBudget(cfg json.RawMessage) int {
	if len(bytes.TrimSpace(cfg)) == 0 {
		return DefaultShapeBudget
	}
	var c map[string]json.RawMessage
	if json.Unmarshal(cfg, &c) != nil {
		return 0
	}
	v, ok := c["budgetBytes"]
	if !ok {
		return DefaultShapeBudget
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
	if err != nil || n < 1024 {
		return 0
	}
	return n
}

// ensureLoaded loads e (creating the set's host first if it has none),
// once; a concurrent call waits for the same load. A load failure is kept
// on e and applied per call with its policy; the returned error is the
// set's (closed, or the host could not start) or ctx's.
func (s *filterSet) ensureLoaded(ctx context.Context, e *filterEntry) error {
	done := s.startLoad(e)
	if done == nil {
		return ErrClosed
	}
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hostErr
}

// startLoad starts loading e unless it is loading or loaded, and returns
// the channel closed when that load ends; nil when the set is closed.
func (s *filterSet) startLoad(e *filterEntry) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	if e.loadDone == nil {
		e.loadDone = make(chan struct{})
		s.loads.Add(1)
		go s.load(e, e.loadDone)
	}
	return e.loadDone
}

// load runs detached from any one caller, so a cancelled call does not
// poison the load for the next.
func (s *filterSet) load(e *filterEntry, done chan struct{}) {
	defer s.loads.Done()
	ctx, cancel := context.WithTimeout(context.Background(), DefaultFilterLoadTimeout)
	defer cancel()
	start := time.Now()
	h, err := s.hostFor(ctx)
	if err != nil {
		close(done)
		return
	}
	f, err := h.Load(ctx, e.spec)
	s.mu.Lock()
	if err != nil {
		e.loadErr = err
		s.p.log.Error("filter failed to load", "filter", e.name, "error", err)
	} else {
		e.filter = f
	}
	s.mu.Unlock()
	close(done) // the waiting call goes on now
	// Compiling leaves tens of MiB of garbage behind (much more when the
	// compilation cache is cold); hand it back now rather than keep it
	// as the idle process's footprint.
	debug.FreeOSMemory()
	s.p.log.Debug("filter loaded", "filter", e.name, "elapsed", time.Since(start))
}

// hostFor returns the set's filter host, creating it on first use. Its
// failure is recorded as the set's hostErr.
func (s *filterSet) hostFor(ctx context.Context) (*wasm.Host, error) {
	s.hostMu.Lock()
	defer s.hostMu.Unlock()
	s.mu.Lock()
	h, herr := s.host, s.hostErr
	s.mu.Unlock()
	if h != nil || herr != nil {
		return h, herr
	}
	p := s.p
	cache := p.compileCache()
	if prepareCompileCache != nil && cache != "" {
		var builtins []string
		for _, e := range s.entries {
			if e.spec.Builtin != "" && !e.inactive() {
				builtins = append(builtins, e.spec.Builtin)
			}
		}
		prepareCompileCache(cache, builtins)
	}
	h, err := wasm.NewHost(ctx, &wasm.Options{CacheDir: cache, Offload: p.store.PutContext, Logger: p.log})
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.hostErr = &Error{Kind: KindFilter, Message: "cannot start the filter host: " + err.Error(), Err: err}
		return nil, s.hostErr
	}
	if s.closed {
		h.Close(ctx)
		s.hostErr = ErrClosed
		return nil, ErrClosed
	}
	s.host = h
	return h, nil
}

// compileCache returns the wazero compilation cache directory, creating
// it; "" when it cannot be used (filters then compile in memory).
func (p *pipeline) compileCache() string {
	if err := proc.MkdirPrivate(p.cacheDir); err != nil { // 0700; an owner-only ACL on Windows
		p.log.Warn("wazero compilation cache unavailable; compiling in memory", "dir", p.cacheDir, "error", err)
	}
	if fi, err := os.Lstat(p.cacheDir); err != nil || !fi.IsDir() {
		return ""
	}
	return p.cacheDir
}

// close ends the pipeline: the current set is released and close returns
// once every set is closed.
func (p *pipeline) close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		p.releaseLocked(p.cur)
	}
	p.mu.Unlock()
	p.sets.Wait()
}

func (s *filterSet) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.loads.Wait() // no load starts once closed is set
	s.mu.Lock()
	h := s.host
	s.host = nil
	s.mu.Unlock()
	if h != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h.Close(ctx)
	}
}

// LoadFilters compiles and warms every active filter now and keeps them
// loaded ('sluice filter list' without a running serve shows them so). It
// returns an error naming every filter that failed to load; such a filter
// then fails its calls according to its onError policy.
func (g *Gateway) LoadFilters(ctx context.Context) error {
	s, err := g.acquire("")
	if err != nil {
		return err
	}
	defer g.pipeline.release(s)
	return s.loadAll(ctx, s.entries)
}

// CheckFilters is what a long-lived surface runs before it answers its
// first request: every filter the configuration names (not the implicit
// default shape filter, whose module and config are built in) is compiled
// and initialised with its config, so a filter that cannot run refuses the
// start (fail closed) instead of failing calls later. The check then lets
// go of them — with a usable compilation cache reloading one later costs
// tens of milliseconds, and an idle gateway should not hold compiled code
// for filters that may never run. Without a cache the filters stay loaded
// (they would otherwise compile twice). Each filter loads again, alone,
// when a result first needs it.
func (g *Gateway) CheckFilters(ctx context.Context) error {
	s, err := g.acquire("")
	if err != nil {
		return err
	}
	defer g.pipeline.release(s)
	var named []*filterEntry
	for _, e := range s.entries {
		if e.index >= 0 && !e.inactive() {
			named = append(named, e)
		}
	}
	if len(named) == 0 {
		return nil
	}
	if g.pipeline.compileCache() == "" {
		return s.loadAll(ctx, named)
	}
	// A set of its own, closed after the check: the current set stays
	// unloaded.
	check := &filterSet{p: g.pipeline, entries: cloneEntries(named)}
	defer func() {
		check.close()
		debug.FreeOSMemory()
	}()
	return check.loadAll(ctx, check.entries)
}

// cloneEntries copies entries without their load state.
func cloneEntries(es []*filterEntry) []*filterEntry {
	out := make([]*filterEntry, 0, len(es))
	for _, e := range es {
		out = append(out, &filterEntry{index: e.index, name: e.name, cfg: e.cfg, spec: e.spec, budget: e.budget, isShape: e.isShape})
	}
	return out
}

// loadAll loads the active entries of es and names every one that failed.
func (s *filterSet) loadAll(ctx context.Context, es []*filterEntry) error {
	for _, e := range es { // side by side: each compiles on its own goroutine
		if !e.inactive() {
			s.startLoad(e)
		}
	}
	for _, e := range es {
		if e.inactive() {
			continue
		}
		if err := s.ensureLoaded(ctx, e); err != nil {
			return err
		}
	}
	var msgs []string
	s.mu.Lock()
	for _, e := range es {
		if e.loadErr != nil {
			msgs = append(msgs, e.name+": "+e.loadErr.Error())
		}
	}
	s.mu.Unlock()
	if len(msgs) > 0 {
		return &Error{Kind: KindFilter, Message: "filters failed to load: " + strings.Join(msgs, "; "),
			Remedy: fixUser("fix the module or its config; reproduce with 'sluice filter test MODULE --config JSON'")}
	}
	return nil
}

// FilterStatuses lists the configured filters (the default shape filter
// last, when it applies) with their health.
func (g *Gateway) FilterStatuses() []FilterStatus {
	p := g.pipeline
	p.mu.Lock()
	s := p.cur
	p.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]FilterStatus, 0, len(s.entries))
	for _, e := range s.entries {
		s := FilterStatus{Index: e.index, Name: e.name, Module: e.cfg.Module, Stage: e.cfg.Stage,
			Capabilities: slices.Clone(e.cfg.Capabilities), OnError: e.cfg.OnError, Default: e.index < 0,
			State: FilterNotLoaded, File: e.cfg.File, Line: e.cfg.Line}
		switch {
		case e.inactive():
			s.State = FilterInactive
		case e.loadErr != nil:
			s.State = FilterLoadFailed
			s.LastError = e.loadErr.Error()
		case e.filter != nil:
			fs := e.filter.Status()
			s.Mode, s.Calls, s.Failures = string(fs.Mode), fs.Calls, fs.Failures
			s.ConsecutiveFailures, s.LastError, s.DisabledAt = fs.ConsecutiveFailures, fs.LastError, fs.DisabledAt
			s.DisabledFor, s.ReenabledAt = fs.DisabledFor, fs.ReenabledAt
			s.State = FilterActive
			if fs.State == wasm.StateDisabled {
				s.State = FilterDisabled
			}
		}
		s.P50 = e.runs.p50()
		out = append(out, s)
	}
	return out
}

// filterResult runs the result-stage filters on a tool result and, when
// toModel is set, the context-stage filters on what goes back to the model.
// Filters run in config order; each sees the previous one's output. A
// fail-closed filter's failure fails the call (KindFilter) and nothing of the
// result is returned; a fail-open one's is logged and its input passes on.
// A script's final value comes here with ExecuteCapability: it meets the
// context-stage filters whose globs match that name (such as "*").
//
// The result may lie in a buffer the filter host lent (see lent): held
// gives it back (held.Release), after which the result must not be read; a
// caller that never releases it keeps the bytes for good.
func (g *Gateway) filterResult(ctx context.Context, capability string, raw json.RawMessage, toModel bool) (_ json.RawMessage, held wasm.Output, _ error) {
	return g.filterResultOf(ctx, capability, raw, toModel, true)
}

// filterResultOf is filterResult; valid says whether raw is known to be
// valid JSON with valid UTF-8 strings (wasm.Meta.ValidInput).
func (g *Gateway) filterResultOf(ctx context.Context, capability string, raw json.RawMessage, toModel, valid bool) (_ json.RawMessage, held wasm.Output, _ error) {
	p := g.pipeline
	if p == nil {
		return raw, wasm.Output{}, nil
	}
	s, err := g.acquire(capability)
	if err != nil {
		return nil, wasm.Output{}, err
	}
	defer p.release(s)
	server, tool, _ := SplitCapability(capability)
	reqID := "" // named once a filter runs
	data := []byte(raw)
	var chain lent
	for _, stage := range []string{config.StageResult, config.StageContext} {
		if stage == config.StageContext && !toModel {
			break
		}
		for _, e := range s.entries {
			if e.cfg.Stage != stage || !matchAny(e.cfg.Capabilities, capability) {
				continue
			}
			if e.budget > 0 && len(data) <= e.budget {
				p.outcome(e, wasm.Output{Status: wasm.StatusPass}, nil)
				continue // shape passes results within its budget unchanged
			}
			if reqID == "" {
				reqID = "f" + strconv.FormatUint(p.reqID.Add(1), 10)
			}
			var fspan *trace.Span
			if g.tracer != nil {
				_, fspan = g.tracer.Start(ctx, "filter "+e.cfg.Module, trace.KindInternal, trace.Attr{Key: "sluice.filter.stage", Value: stage})
			}
			// With valid, data is valid JSON: an upstream's result passed
			// the MCP framing's validation (gateway/mcp Classify, for
			// every transport), a script's value was marshalled as a
			// string, and a filter's output was validated by the host
			// (ValidInput; checked again in -race builds). A composed
			// answer (GuardAnswer) is not vouched for: json.Marshal
			// copies a json.RawMessage (a cached catalog's schema) without
			// checking its UTF-8.
			meta := wasm.Meta{Server: server, Tool: tool, Stage: stage, RequestID: reqID, ValidInput: valid}
			out, o, blocked, err := p.run(ctx, s, e, data, meta, capability)
			fspan.Set(trace.Attr{Key: "sluice.filter.blocked", Value: blocked})
			fspan.End(err)
			if err != nil {
				o.Release()
				chain.o.Release()
				return nil, wasm.Output{}, err
			}
			data = chain.next(data, out, o)
			if blocked {
				return json.RawMessage(data), chain.o, nil
			}
		}
	}
	return json.RawMessage(data), chain.o, nil
}

// lent follows the output buffers of a filter chain (wasm.Output.Release):
// o is the output whose buffer the chain's current data lies in (zero when
// the data is the caller's or the gateway's own). Each buffer is given back
// as soon as the next filter has replaced the data, once.
type lent struct{ o wasm.Output }

// next: the filter that ran on data returned out, lying in o's buffer when
// out is o.Data. The buffer data lay in is given back unless out is still
// data (the filter passed it, or failed open). It returns out.
func (c *lent) next(data, out []byte, o wasm.Output) []byte {
	if sameBytes(out, data) {
		o.Release() // nothing of it is used (a pass holds no buffer)
		return out
	}
	c.o.Release() // the next filter read it and wrote its own output
	c.o = wasm.Output{}
	if sameBytes(out, o.Data) {
		c.o = o
	} else {
		o.Release() // its output was not used (a block's replacement ...)
	}
	return out
}

// sameBytes reports whether a and b are the same slice of the same bytes
// (not merely equal bytes).
func sameBytes(a, b []byte) bool {
	if len(a) != len(b) || cap(a) != cap(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0]
}

// run applies one filter and its policy. blocked: data is the replacement
// result naming the filter's reason, and no later filter runs.
//
// o is the filter's output: out lies in o's lent buffer when it is o.Data
// (see lent); the caller gives it back.
func (p *pipeline) run(ctx context.Context, s *filterSet, e *filterEntry, data []byte, meta wasm.Meta, capability string) (out []byte, o wasm.Output, blocked bool, err error) {
	if err := s.ensureLoaded(ctx, e); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, wasm.Output{}, false, interrupted(e, capability, cerr)
		}
		if out, ok := p.shapeFallback(e, capability, data, err); ok {
			return out, wasm.Output{}, false, nil
		}
		out, blocked, err := p.decide(e, capability, data, wasm.Output{}, err)
		return out, wasm.Output{}, blocked, err
	}
	s.mu.Lock()
	f, loadErr := e.filter, e.loadErr
	s.mu.Unlock()
	if f == nil {
		if loadErr == nil {
			loadErr = ErrClosed
		}
		err := fmt.Errorf("failed to load: %w", loadErr)
		p.outcome(e, wasm.Output{}, err)
		if out, ok := p.shapeFallback(e, capability, data, err); ok {
			return out, wasm.Output{}, false, nil
		}
		out, blocked, err := p.decide(e, capability, data, wasm.Output{}, err)
		return out, wasm.Output{}, blocked, err
	}
	if e.isShape && len(data) > wasm.DefaultMaxInputBytes {
		o, err = p.shapeNative(e, data)
	} else {
		start := time.Now()
		o, err = f.Apply(ctx, data, meta)
		e.runs.add(time.Since(start))
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, wasm.Output{}, false, interrupted(e, capability, cerr)
		}
	}
	p.outcome(e, o, err)
	if err != nil {
		if out, ok := p.shapeFallback(e, capability, data, err); ok {
			return out, o, false, nil
		}
	}
	out, blocked, err = p.decide(e, capability, data, o, err)
	return out, o, blocked, err
}

// shapeFallback keeps the budget when a fail-open shape filter fails
// (a deadline on a loaded machine, a bad config, a trap): failing open
// would hand the model the whole result, so the result is offloaded whole
// and the model gets the native marker with its handle instead. ok is
// false for other filters, for a fail-closed shape (its policy withholds)
// and when the marker cannot be built.
func (p *pipeline) shapeFallback(e *filterEntry, capability string, data []byte, err error) ([]byte, bool) {
	if !e.isShape || e.cfg.OnError != config.OnErrorOpen {
		return nil, false
	}
	o, merr := p.shapeNative(e, data)
	if merr != nil {
		return nil, false
	}
	p.log.Warn("shape filter failed; the result was offloaded whole to keep the context budget", "filter", e.name, "capability", capability, "error", err)
	return o.Data, true
}

// outcome reports one filter run to the observer.
func (p *pipeline) outcome(e *filterEntry, o wasm.Output, err error) {
	out := "modified"
	switch {
	case err != nil && e.cfg.OnError == config.OnErrorOpen:
		out = "fail_open"
	case err != nil:
		out = "fail_closed"
	case o.Status == wasm.StatusBlocked:
		out = "blocked"
	case o.Status == wasm.StatusPass:
		out = "pass"
	}
	if out == "pass" && e.passes != nil {
		e.passes.Add(1)
	} else {
		p.count(e.name, out)
	}
	if obs := p.observe.Load(); obs != nil {
		(*obs)(e.name, out)
	}
}

// shapeNative handles a result too large for the filter host's input cap:
// the whole result goes to the offload store and the model gets a marker
// naming its size and handle (and isError when the tool said so).
func (p *pipeline) shapeNative(e *filterEntry, data []byte) (wasm.Output, error) {
	budget := e.budget
	if budget == 0 {
		budget = DefaultShapeBudget
	}
	text := fmt.Sprintf("[sluice: this result was %d bytes, over the %d-byte context budget; %d bytes were omitted. ", len(data), budget, len(data))
	var link map[string]any
	if h, err := p.store.Put(data); err == nil {
		text += "The full result is stored under handle " + h + "; read it in pages by that handle.]"
		link = resultLink(h, len(data))
	} else {
		p.log.Warn("offload failed", "filter", e.name, "error", err)
		text += "The full result could not be stored.]"
	}
	items := []any{map[string]any{"type": "text", "text": text}}
	if link != nil {
		items = append(items, link)
	}
	r := map[string]any{"content": items}
	if isErrorResult(data) {
		r["isError"] = true
	}
	b, err := json.Marshal(r)
	return wasm.Output{Data: b, Status: wasm.StatusReplaced}, err
}
