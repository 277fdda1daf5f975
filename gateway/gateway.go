package gateway

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"sluice/gateway/config"
	"sluice/gateway/front"
	"sluice/gateway/internal/upstream"
	"sluice/gateway/proc"
	"sluice/gateway/trace"
	"sluice/gateway/trust"
)

// Defaults.
const (
	DefaultIdleTimeout    = 5 * time.Minute
	DefaultCallTimeout    = 60 * time.Second
	DefaultRestartBackoff = 500 * time.Millisecond
	MaxRestartBackoff     = 30 * time.Second
	DefaultCrashLoopLimit = 5
)

// Options configures a Gateway. Every zero value means the documented
// default; a nil *Options is allowed.
type Options struct {
	Cwd     string              // default os.Getwd
	Project string              // the --project flag; "" = discovered from Cwd
	Getenv  func(string) string // default os.Getenv
	// LookupEnv resolves ${env:NAME} references at launch. Default:
	// os.LookupEnv, or, when only Getenv is set, Getenv with "" as unset.
	LookupEnv func(string) (string, bool)
	Logger    *slog.Logger // default: discard

	// ServerStderr receives every stderr line of every upstream server,
	// prefixed with its id. nil: lines are only kept in each server's
	// bounded tail (attached to errors).
	ServerStderr io.Writer

	IdleTimeout time.Duration // default: the user setting idleTimeoutMs, else DefaultIdleTimeout

	ClientName, ClientVersion string // how sluice introduces itself upstream

	// Reauthorize, when set, lets a request to a remote server that needs
	// a new OAuth authorization (step-up to a larger scope, a refresh
	// token that stopped working, a new authorization server) run the
	// flow in place with these options and then go on. nil: the request
	// fails, telling the user to run `sluice auth SERVER`. The first
	// authorization of a server is always `sluice auth`.
	Reauthorize *ReauthorizeOptions

	// Profile narrows everything this gateway exposes (find, describe,
	// call, execute, the served tools) to a declared profile; "" = none.
	// Open refuses a profile that is not declared.
	Profile string

	// SlowCall is the slow-call threshold: an upstream call that takes
	// longer logs a "slow call" warning. 0 = DefaultSlowCall; < 0 = off.
	SlowCall time.Duration

	testKnobs // set only by this package's tests
}

// testKnobs are the knobs only tests turn: shorter teardown and backoff, a
// fixed clock. Their zero values are the product's defaults.
type testKnobs struct {
	killGrace, stdinGrace time.Duration    // zero = proc defaults
	killBound             time.Duration    // after SIGKILL, how long to wait for the group; zero = proc default
	restartBackoff        time.Duration    // first delay after a failed start; doubles; default DefaultRestartBackoff
	crashLoopLimit        int              // consecutive failures that stop relaunching; default DefaultCrashLoopLimit
	now                   func() time.Time // default time.Now
	resolved              func(id string)  // tests: runs between a call's reading of the files and remembering it
	rechecking            func(id string)  // tests: runs between a call's reading of a remembered resolution and its look at the files
	racy                  time.Duration    // how recent a declaration file's times make its stamp racy; default racyWindow
}

func (k testKnobs) racyWindow() time.Duration {
	if k.racy != 0 {
		return k.racy
	}
	return racyWindow
}

// Gateway turns declarations and the native client into capabilities.
// It is safe for concurrent use. Close tears every server down.
type Gateway struct {
	opts      Options
	log       *slog.Logger
	configDir string
	cacheDir  string
	stateDir  string
	allow     *proc.AllowList
	// allowWarnings are SLUICE_ALLOW_COMMANDS entries that were denied;
	// Servers reports them as warnings.
	allowWarnings []string

	mu          sync.Mutex
	loaded      *config.Loaded
	stamp       fileStamps
	ups         map[string]*upstream.Slot
	closed      bool
	watchers    map[int]func()
	nextW       int
	hooks       upstreamHooks
	pipeline    *pipeline
	toolChanges toolChanges                   // baseline cache and change log state (hold.go)
	dash        atomic.Pointer[dashState]     // the dashboard, when one is served
	metrics     atomic.Pointer[front.Metrics] // per-upstream metrics while serving (observe.go)
	stats       stats                         // counters for the shutdown summary (observe.go)
	tracer      *trace.Tracer                 // nil: tracing off (no OTLP endpoint set); set before any request
	views       viewCache                     // resolutions for calls to running servers (viewcache.go)
	vgen        viewGen

	stopReaper chan struct{}
	reaperDone chan struct{}
	bg         sync.WaitGroup // background work Close waits for
}

// goBG runs fn in the background; Close waits for it.
func (g *Gateway) goBG(fn func()) {
	g.bg.Add(1)
	go func() {
		defer g.bg.Done()
		fn()
	}()
}

// upstreamHooks let a surface (sluice serve) see what upstream servers send
// on their own: notifications and server->client requests. Set them before
// the first launch.
type upstreamHooks struct {
	// Notify receives notifications other than progress, cancelled and
	// tools/list_changed (which the gateway handles itself).
	Notify func(server, method string, params json.RawMessage)
	// Request answers server->client requests (sampling, elicitation,
	// roots). nil: the client's defaults (ping, empty roots, -32601).
	Request func(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, error)
	// Capabilities advertised upstream; must match what Request handles.
	Capabilities json.RawMessage
}

// Open loads the declarations and returns a gateway. It launches nothing.
// Diagnostics do not make Open fail: a malformed file contributes no server
// and its diagnostics are reported by Servers and Check.
func Open(opts *Options) (*Gateway, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.LookupEnv == nil {
		if o.Getenv == nil {
			o.LookupEnv = os.LookupEnv
		} else {
			get := o.Getenv
			o.LookupEnv = func(k string) (string, bool) { v := get(k); return v, v != "" }
		}
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, &Error{Kind: KindGateway, Message: "cannot read the working directory: " + err.Error()}
		}
		o.Cwd = wd
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.restartBackoff <= 0 {
		o.restartBackoff = DefaultRestartBackoff
	}
	if o.crashLoopLimit <= 0 {
		o.crashLoopLimit = DefaultCrashLoopLimit
	}
	if o.ClientName == "" {
		o.ClientName = "sluice"
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	log = slog.New(requestIDHandler{log.Handler()})
	configDir, err := config.ConfigDir(o.Getenv)
	if err != nil {
		return nil, &Error{Kind: KindGateway, Message: err.Error() + "; set SLUICE_HOME to a directory", Err: err}
	}
	cacheDir, err := config.CacheDir(o.Getenv)
	if err != nil {
		return nil, &Error{Kind: KindGateway, Message: err.Error() + "; set SLUICE_CACHE_DIR to a directory", Err: err}
	}
	stateDir, err := config.StateDir(o.Getenv)
	if err != nil {
		return nil, &Error{Kind: KindGateway, Message: err.Error() + "; set XDG_STATE_HOME to a directory", Err: err}
	}
	g := &Gateway{
		stats:     stats{start: time.Now()},
		opts:      o,
		log:       log,
		configDir: configDir,
		cacheDir:  cacheDir,
		stateDir:  stateDir,
		ups:       map[string]*upstream.Slot{},
		watchers:  map[int]func(){},
	}
	if csv := o.Getenv("SLUICE_ALLOW_COMMANDS"); csv != "" {
		al, warnings := proc.ParseAllowList(csv)
		g.allow, g.allowWarnings = al, warnings
	}
	if err := checkProfile(o.Profile, g.reload()); err != nil {
		return nil, err
	}
	if tr, err := trace.Open(&trace.Options{Getenv: o.Getenv, ServiceVersion: o.ClientVersion}); err != nil {
		g.log.Warn("tracing is off: the OTLP exporter could not be set up", "error", err.Error())
	} else {
		g.tracer = tr
	}
	if err := g.initPipeline(); err != nil {
		return nil, err
	}
	idle := g.idleTimeout()
	g.stopReaper = make(chan struct{})
	g.reaperDone = make(chan struct{})
	go g.reap(idle, g.opts.now())
	return g, nil
}

// ConfigDir, CacheDir and StateDir are the directories this gateway uses.
func (g *Gateway) ConfigDir() string { return g.configDir }
func (g *Gateway) CacheDir() string  { return g.cacheDir }
func (g *Gateway) StateDir() string  { return g.stateDir }

// UserFile is the user declaration file's path.
func (g *Gateway) UserFile() string { return filepath.Join(g.configDir, config.UserFileName) }

// setUpstreamHooks installs hooks for what upstream servers send on their
// own. Servers already running keep the hooks they were started with.
func (g *Gateway) setUpstreamHooks(h upstreamHooks) {
	g.mu.Lock()
	g.hooks = h
	g.mu.Unlock()
}

func (g *Gateway) idleTimeout() time.Duration {
	if g.opts.IdleTimeout > 0 {
		return g.opts.IdleTimeout
	}
	g.mu.Lock()
	ms := g.loaded.Settings.IdleTimeoutMs
	g.mu.Unlock()
	if ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return DefaultIdleTimeout
}

// reload re-reads the declarations when either file changed since the last
// load. Servers whose declaration changed (or vanished) are closed, so the
// next call launches what the file now says.
func (g *Gateway) reload() *config.Loaded {
	// The common case (nothing changed) stats outside g.mu: concurrent
	// calls do not queue behind each other's syscalls.
	g.mu.Lock()
	l, stamp := g.loaded, g.stamp
	g.mu.Unlock()
	if l != nil {
		if now := restamp(stamp, g.opts.racyWindow(), l.UserFile, l.ProjectFile); now.same(stamp) {
			g.settle(stamp, now)
			return l
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reloadLocked()
}

// settle records now, a look that found the files as stamp says, in
// place of stamp: once a racy file's content was confirmed after its
// window, later looks stat it without reading it.
func (g *Gateway) settle(stamp, now fileStamps) {
	next := now.settled(g.opts.racyWindow())
	if next == stamp {
		return
	}
	g.mu.Lock()
	if g.stamp == stamp {
		g.stamp = next
	}
	g.mu.Unlock()
}

func (g *Gateway) reloadLocked() *config.Loaded {
	var before fileStamps // taken before the read: a change during it shows at the next look
	if g.loaded != nil {
		before = restamp(g.stamp, g.opts.racyWindow(), g.loaded.UserFile, g.loaded.ProjectFile)
		if before.same(g.stamp) {
			g.stamp = before.settled(g.opts.racyWindow())
			return g.loaded
		}
		if g.midSave(before) {
			return g.loaded
		}
	}
	l := config.Load(config.LoadOptions{Cwd: g.opts.Cwd, Project: g.opts.Project, ConfigDir: g.configDir, Getenv: g.opts.Getenv})
	if g.loaded == nil || l.UserFile != g.loaded.UserFile || l.ProjectFile != g.loaded.ProjectFile {
		// Other files than the ones stamped before (the first load, or a
		// new project root): stamped after the read, a racy one with
		// no hash, so the next look reads it again.
		before = restamp(fileStamps{}, g.opts.racyWindow(), l.UserFile, l.ProjectFile)
		for i := range before {
			if before[i].racy(time.Now(), g.opts.racyWindow()) {
				before[i].hashed, before[i].sum = true, [32]byte{}
			}
		}
	}
	g.loaded = l
	g.stamp = before
	g.invalidateViews()
	for id, s := range g.ups {
		d, ok := l.Server(id)
		if !ok || d.Digest != s.Digest() {
			g.log.Info("declaration changed; closing server", "server", id)
			delete(g.ups, id)
			g.goBG(func() { s.Shutdown() })
		}
	}
	return l
}

// saveWindow is how long a declaration file that just became empty is
// taken to be mid-save rather than emptied on purpose.
const saveWindow = time.Second

// midSave reports whether a file that had content is now empty and was
// modified within saveWindow: an editor that saves in place truncates the
// file first, and reading it in that instant would mean "no filters, no
// servers" — a redaction filter silently off. The previous declarations
// stay in force until the file has content again or stays empty longer.
func (g *Gateway) midSave(now fileStamps) bool {
	for i := range now {
		if g.stamp[i].ok && g.stamp[i].size > 0 && now[i].ok && now[i].size == 0 && g.opts.now().Sub(now[i].mod) < saveWindow {
			return true
		}
	}
	return false
}

// trustState reads the trust file; it is read for every decision, never
// cached, so a record written by another process counts at once.
func (g *Gateway) trustState() *trust.State {
	return trust.Read(trust.FilePath(g.configDir))
}

// Subscribe registers fn to run whenever the set of capabilities may have
// changed (a server's live listing changed). It returns the unsubscribe func.
func (g *Gateway) Subscribe(fn func()) (cancel func()) {
	g.mu.Lock()
	id := g.nextW
	g.nextW++
	g.watchers[id] = fn
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		delete(g.watchers, id)
		g.mu.Unlock()
	}
}

func (g *Gateway) changed() {
	g.mu.Lock()
	fns := make([]func(), 0, len(g.watchers))
	for _, fn := range g.watchers {
		fns = append(fns, fn)
	}
	g.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// Teardown is how one server's shutdown ended.
type Teardown struct {
	Server  string
	Outcome proc.Outcome
}

// Close tears every server down and returns the teardowns that were
// incomplete (a process of the group survived). It is idempotent.
func (g *Gateway) Close() []Teardown {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	ups := make([]*upstream.Slot, 0, len(g.ups))
	for _, s := range g.ups {
		ups = append(ups, s)
	}
	g.ups = map[string]*upstream.Slot{}
	g.mu.Unlock()
	close(g.stopReaper)
	<-g.reaperDone

	var mu sync.Mutex
	var bad []Teardown
	var wg sync.WaitGroup
	for _, u := range ups {
		wg.Add(1)
		go func(s *upstream.Slot) {
			defer wg.Done()
			for _, out := range s.Shutdown() {
				if !out.Complete {
					mu.Lock()
					bad = append(bad, Teardown{Server: s.Server(), Outcome: out})
					mu.Unlock()
				}
			}
		}(u)
	}
	wg.Wait()
	g.bg.Wait()
	if g.pipeline != nil {
		g.pipeline.close()
	}
	if g.tracer != nil {
		// Spans still batched go out now, within a bound.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := g.tracer.Shutdown(ctx); err != nil {
			g.log.Warn("spans not exported at shutdown", "error", err.Error())
		}
		cancel()
	}
	sort.Slice(bad, func(i, j int) bool { return bad[i].Server < bad[j].Server })
	for _, t := range bad {
		g.log.Error("teardown incomplete", "server", t.Server, "pgid", t.Outcome.Pgid, "reason", t.Outcome.Reason)
	}
	return bad
}

// sweepEvery is how often a running gateway removes expired offloaded
// results (a quiet gateway stores nothing, so Put's own cleanup never runs).
const sweepEvery = 10 * time.Minute

// reap closes servers idle for longer than idle and, every sweepEvery,
// sweeps the results store, counting from started (read before the
// goroutine starts, so a clock that moves meanwhile still counts).
func (g *Gateway) reap(idle time.Duration, started time.Time) {
	defer close(g.reaperDone)
	tick := idle / 4
	if tick < 50*time.Millisecond {
		tick = 50 * time.Millisecond
	}
	if tick > 30*time.Second {
		tick = 30 * time.Second
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	swept := started
	for {
		select {
		case <-g.stopReaper:
			return
		case <-t.C:
		}
		now := g.opts.now()
		if now.Sub(swept) >= sweepEvery {
			swept = now
			g.sweepResults()
		}
		g.mu.Lock()
		var idleUps []*upstream.Slot
		for _, s := range g.ups {
			if s.IdleFor(now) > idle {
				idleUps = append(idleUps, s)
			}
		}
		g.mu.Unlock()
		for _, s := range idleUps {
			if s.CloseIfIdle(now, idle) {
				g.log.Info("closed idle server", "server", s.Server())
			}
		}
	}
}
