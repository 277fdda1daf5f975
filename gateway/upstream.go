package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"sluice/gateway/catalog"
	"sluice/gateway/config"
	"sluice/gateway/mcp"
	"sluice/gateway/proc"
)

// upstream is the gateway's one live client slot for a declared server. It
// holds at most one client; a dead client stays dead for the calls that were
// in flight on it, and the next call may start a new one after a backoff.
// Consecutive failures beyond the crash-loop limit stop relaunching.
type upstream struct {
	g      *Gateway
	id     string
	digest string
	decl   config.Server

	mu          sync.Mutex
	client      *mcp.Client
	tools       *mcp.ToolList
	byName      map[string]mcp.Tool
	starting    chan struct{}
	failures    int
	nextTry     time.Time
	lastErr     error
	lastUsed    time.Time
	inflight    int
	closed      bool
	listedAt    time.Time
	relisting   bool
	relistAgain bool
	late        []proc.Outcome // teardowns of launches that finished after shutdown
}

// RunState is a server's run status, separate from where its catalog came
// from (provenance).
type RunState string

const (
	RunIdle      RunState = "idle"       // not running; will launch on need
	RunStarting  RunState = "starting"   // launching now
	RunReady     RunState = "ready"      // running
	RunBackoff   RunState = "backoff"    // failed recently; relaunch waits
	RunCrashLoop RunState = "crash-loop" // failed too often; not relaunched
)

func (g *Gateway) upstreamFor(d config.Server) (*upstream, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, ErrClosed
	}
	u := g.ups[d.ID]
	if u != nil && u.digest == d.Digest && u.decl.Program == d.Program {
		return u, nil
	}
	if u != nil {
		delete(g.ups, d.ID)
		g.goBG(func() { u.shutdown() })
	}
	u = &upstream{g: g, id: d.ID, digest: d.Digest, decl: d}
	g.ups[d.ID] = u
	return u, nil
}

// peekUpstream returns the slot for id without creating one.
func (g *Gateway) peekUpstream(id string) *upstream {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ups[id]
}

func (u *upstream) state() (RunState, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case u.client != nil && u.client.State() == mcp.Ready:
		return RunReady, nil
	case u.starting != nil:
		return RunStarting, nil
	case u.failures >= u.g.opts.CrashLoopLimit:
		return RunCrashLoop, u.lastErr
	case u.failures > 0 && u.g.opts.Now().Before(u.nextTry):
		return RunBackoff, u.lastErr
	}
	return RunIdle, u.lastErr
}

// liveTools returns the live listing, if this session has one.
func (u *upstream) liveTools() (*mcp.ToolList, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.client == nil || u.tools == nil {
		return nil, false
	}
	return u.tools, true
}

func (u *upstream) backoff() time.Duration {
	d := u.g.opts.RestartBackoff
	for i := 1; i < u.failures && d < MaxRestartBackoff; i++ {
		d *= 2
	}
	if d > MaxRestartBackoff {
		d = MaxRestartBackoff
	}
	return d
}

// get returns a ready client, launching one if needed. Callers must pair a
// successful get with release.
func (u *upstream) get(ctx context.Context) (*mcp.Client, error) {
	u.mu.Lock()
	for {
		if u.closed {
			u.mu.Unlock()
			return nil, ErrClosed
		}
		if c := u.client; c != nil {
			select {
			case <-c.Done():
				u.retireLocked(c, c.Err())
				continue
			default:
			}
			u.inflight++
			u.lastUsed = u.g.opts.Now()
			u.mu.Unlock()
			return c, nil
		}
		if ch := u.starting; ch != nil {
			before := u.failures
			u.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, u.ctxErr(ctx)
			}
			u.mu.Lock()
			if u.client == nil && u.failures > before && u.lastErr != nil {
				// The launch this caller waited for failed: report it
				// rather than waiting out a backoff and trying again.
				err := u.lastErr
				u.mu.Unlock()
				return nil, err
			}
			continue
		}
		if u.failures >= u.g.opts.CrashLoopLimit {
			err := u.crashLoopErr()
			u.mu.Unlock()
			return nil, err
		}
		if wait := u.nextTry.Sub(u.g.opts.Now()); u.failures > 0 && wait > 0 {
			u.mu.Unlock()
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, u.ctxErr(ctx)
			}
			u.mu.Lock()
			continue
		}
		ch := make(chan struct{})
		u.starting = ch
		u.mu.Unlock()
		// The launch does not inherit the caller's cancellation: one
		// impatient caller must not count as the server's failure.
		go u.launch(context.WithoutCancel(ctx), ch)
		u.mu.Lock()
	}
}

func (u *upstream) ctxErr(ctx context.Context) error {
	return &Error{Kind: KindUpstream, Server: u.id, Message: fmt.Sprintf("server %s: gave up waiting for it to start: %v", u.id, ctx.Err()), Err: ctx.Err()}
}

func (u *upstream) crashLoopErr() error {
	msg := fmt.Sprintf("server %s failed %d times in a row and is not relaunched (crash loop)", u.id, u.failures)
	if u.lastErr != nil {
		msg += "; last error: " + u.lastErr.Error()
	}
	return &Error{Kind: KindCrashLoop, Server: u.id, Message: msg,
		Remedy: Remedy{Before: "fix the server or its declaration, then", Step: StepRefresh, Server: u.id, After: "(a refresh resets the count)"},
		Err:    u.lastErr}
}

func (u *upstream) release(ok bool) {
	u.mu.Lock()
	u.inflight--
	u.lastUsed = u.g.opts.Now()
	if ok {
		u.failures = 0
	}
	u.mu.Unlock()
}

// retireLocked drops a dead client, counts the failure and tears its group
// down in the background.
func (u *upstream) retireLocked(c *mcp.Client, err error) {
	if u.client != c {
		return
	}
	u.client = nil
	u.tools = nil
	u.byName = nil
	u.failures++
	u.lastErr = err
	u.nextTry = u.g.opts.Now().Add(u.backoff())
	u.g.log.Warn("server died", "server", u.id, "error", errString(err), "failures", u.failures)
	u.g.goBG(func() { u.g.reportOutcome(u.id, c.Close()) })
}

func (g *Gateway) reportOutcome(id string, out proc.Outcome) {
	if !out.Complete {
		g.log.Error("teardown incomplete", "server", id, "pgid", out.Pgid, "reason", out.Reason)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (u *upstream) launch(ctx context.Context, done chan struct{}) {
	c, tools, err := u.start(ctx)
	u.mu.Lock()
	u.starting = nil
	switch {
	case err != nil:
		u.failures++
		u.lastErr = err
		u.nextTry = u.g.opts.Now().Add(u.backoff())
		// Info, not Warn: the error goes back to every caller waiting for
		// this launch, and the CLI prints it once for people.
		u.g.log.Info("server failed to start", "server", u.id, "error", err.Error(), "failures", u.failures)
	case u.closed:
		u.mu.Unlock()
		out := c.Close()
		u.g.reportOutcome(u.id, out)
		u.mu.Lock()
		u.late = append(u.late, out)
		u.mu.Unlock()
		close(done)
		return
	default:
		u.client = c
		u.setToolsLocked(tools)
		u.lastUsed = u.g.opts.Now()
	}
	u.mu.Unlock()
	if err == nil {
		// Recorded before waiters are released, so a short-lived caller
		// (one CLI call) never exits with the catalog half written.
		u.g.recordCatalog(u, c, tools)
	}
	close(done)
	if err == nil {
		u.g.changed()
	}
}

func (u *upstream) setToolsLocked(tl *mcp.ToolList) {
	u.tools = tl
	u.byName = make(map[string]mcp.Tool, len(tl.Tools))
	for _, t := range tl.Tools {
		u.byName[t.Name] = t
	}
	u.listedAt = u.g.opts.Now()
}

// start spawns the server, completes the handshake and lists its tools.
func (u *upstream) start(ctx context.Context) (*mcp.Client, *mcp.ToolList, error) {
	g := u.g
	d := u.decl
	env, err := d.ExpandEnv(g.opts.LookupEnv)
	if err != nil {
		return nil, nil, &Error{Kind: KindGateway, Server: u.id, Message: err.Error(), Err: err}
	}
	// Launch exactly the program the declarations resolved on the
	// gateway's PATH (the one trust binds), never a name a declared PATH
	// could redirect. The allow-list names bare commands, so it is
	// checked here, on the declared name, before the path is handed on.
	if d.CLI == nil && !d.IsRemote() && !filepath.IsAbs(d.Command) && !g.allow.Allows(d.Command) {
		err := &proc.CommandError{Server: u.id, Command: d.Command, Reason: proc.ReasonCommandNotAllowed, Err: proc.ErrCommandNotAllowed}
		return nil, nil, upstreamErr(u.id, "start", err)
	}
	if d.CLI == nil && !d.IsRemote() && d.Program == "" {
		err := &proc.CommandError{Server: u.id, Command: d.Command, Reason: proc.ReasonCommandNotFound, Err: proc.ErrCommandNotFound}
		return nil, nil, upstreamErr(u.id, "start", err)
	}
	spec := proc.Spec{
		Server:        u.id,
		Command:       d.Program,
		Args:          d.Args,
		Dir:           d.Dir,
		Root:          d.Root,
		Env:           env,
		PassEnv:       d.PassEnv,
		AllowCommands: g.allow,
		KillGrace:     g.opts.KillGrace,
		StdinGrace:    g.opts.StdinGrace,
	}
	if g.opts.ServerStderr != nil {
		spec.Stderr = &prefixWriter{w: g.opts.ServerStderr, prefix: "[" + u.id + "] "}
	}
	g.mu.Lock()
	hooks := g.hooks
	g.mu.Unlock()
	opts := &mcp.Options{
		Server:        u.id,
		MaxLineBytes:  d.MaxLineBytes,
		NoiseFatal:    d.StdoutNoise == config.NoiseFatal,
		ClientName:    g.opts.ClientName,
		ClientVersion: g.opts.ClientVersion,
		Logger:        g.log, // the client names the server itself
		Capabilities:  hooks.Capabilities,
		OnNotification: func(method string, params json.RawMessage) {
			if method == "notifications/tools/list_changed" {
				g.goBG(u.relist)
				return
			}
			if hooks.Notify != nil {
				hooks.Notify(u.id, method, params)
			}
		},
	}
	// Every request to the server honours its declared timeout, the
	// listings included (the handshake has its own bound).
	opts.RequestTimeout = declTimeout(d)
	if hooks.Request != nil {
		opts.OnRequest = func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			return hooks.Request(ctx, u.id, method, params)
		}
	}
	var c *mcp.Client
	switch {
	case d.CLI != nil:
		c, err = g.startCLI(ctx, d, env, opts)
	case d.IsRemote():
		c, err = g.dialRemote(ctx, d, opts)
	default:
		c, err = mcp.Start(ctx, spec, opts)
	}
	if err != nil {
		return nil, nil, upstreamErr(u.id, "start", err)
	}
	tools, err := c.ListTools(ctx)
	if err != nil {
		g.reportOutcome(u.id, c.Close())
		return nil, nil, upstreamErr(u.id, "list tools", err)
	}
	return c, tools, nil
}

// upstreamErr wraps a client or spawn error as a gateway error.
func upstreamErr(id, op string, err error) error {
	var ge *Error
	if errors.As(err, &ge) {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return &Error{Kind: KindUpstream, Server: id, Message: fmt.Sprintf("server %s: %s cancelled", id, op), Err: err}
	}
	msg := fmt.Sprintf("server %s: %s failed: %v", id, op, err)
	var me *mcp.Error
	if errors.As(err, &me) {
		msg = fmt.Sprintf("server %s: %s failed: %s", id, op, innermost(me))
		return &Error{Kind: KindUpstream, Server: id, Message: msg, Stderr: me.StderrTail, Err: err}
	}
	return &Error{Kind: KindUpstream, Server: id, Message: msg, Err: err}
}

// innermost describes an mcp error by its most specific cause: a spawn
// refusal reads "env variable LD_PRELOAD is denied ..." rather than a chain
// of prefixes naming the server three times.
func innermost(me *mcp.Error) string {
	if me.Code == mcp.CodeSpawn && me.Err != nil {
		return me.Err.Error()
	}
	s := me.Error()
	if p := fmt.Sprintf("mcp server %q: ", me.Server); strings.HasPrefix(s, p) {
		s = s[len(p):]
	}
	return s
}

// relist refreshes the live listing after tools/list_changed.
func (u *upstream) relist() {
	u.mu.Lock()
	c := u.client
	if c == nil {
		u.mu.Unlock()
		return
	}
	if u.relisting {
		// A relist is running; it goes round again when it ends, so the
		// last change is never lost.
		u.relistAgain = true
		u.mu.Unlock()
		return
	}
	u.relisting = true
	u.mu.Unlock()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		tl, err := c.ListTools(ctx)
		cancel()
		u.mu.Lock()
		ok := err == nil && u.client == c
		if ok {
			u.setToolsLocked(tl)
		}
		again := u.relistAgain && u.client == c
		u.relistAgain = false
		if !again {
			u.relisting = false
		}
		u.mu.Unlock()
		if err != nil {
			u.g.log.Warn("relist after tools/list_changed failed", "server", u.id, "error", err.Error())
		}
		if ok {
			u.g.recordCatalog(u, c, tl)
			u.g.changed()
		}
		if !again {
			return
		}
	}
}

// closeIfIdle closes the client if nothing used it for idle.
func (u *upstream) closeIfIdle(now time.Time, idle time.Duration) bool {
	u.mu.Lock()
	c := u.client
	if c == nil || u.inflight > 0 || now.Sub(u.lastUsed) <= idle {
		u.mu.Unlock()
		return false
	}
	u.client, u.tools, u.byName = nil, nil, nil
	u.mu.Unlock()
	u.g.reportOutcome(u.id, c.Close())
	return true
}

func (u *upstream) idleSince(now time.Time) time.Duration {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.client == nil || u.inflight > 0 {
		return 0
	}
	return now.Sub(u.lastUsed)
}

// shutdown closes the slot for good and returns the teardown outcomes.
func (u *upstream) shutdown() []proc.Outcome {
	u.mu.Lock()
	u.closed = true
	c := u.client
	ch := u.starting
	u.client, u.tools, u.byName = nil, nil, nil
	u.mu.Unlock()
	var outs []proc.Outcome
	if c != nil {
		outs = append(outs, c.Close())
	}
	if ch != nil {
		// A launch in progress closes its own client when it sees closed.
		<-ch
	}
	u.mu.Lock()
	outs = append(outs, u.late...)
	u.late = nil
	u.mu.Unlock()
	return outs
}

// resetFailures clears the crash-loop count (an explicit refresh).
func (u *upstream) resetFailures() {
	u.mu.Lock()
	u.failures = 0
	u.nextTry = time.Time{}
	u.mu.Unlock()
}

func (g *Gateway) catalogIdentity(d config.Server) catalog.Identity {
	id := catalog.Identity{
		Scope:           string(d.Scope),
		DeclarationPath: d.File,
		ServerID:        d.ID,
		Digest:          d.Digest,
		Cwd:             d.Dir,
	}
	if d.Scope == config.ScopeProject {
		g.mu.Lock()
		id.ProjectRoot = g.loaded.ProjectRoot
		g.mu.Unlock()
	}
	return id
}

func (g *Gateway) recordCatalog(u *upstream, c *mcp.Client, tl *mcp.ToolList) {
	info := c.ServerInfo()
	cat := &catalog.Catalog{
		Identity: g.catalogIdentity(u.decl),
		Server: catalog.Server{
			Name: info.Name, Version: info.Version, Title: info.Title,
			Era: c.Era(), ProtocolVersion: c.ProtocolVersion(), Instructions: info.Instructions,
		},
		Truncated:  tl.Truncated,
		RecordedAt: g.opts.Now(),
	}
	for _, t := range tl.Tools {
		cat.Tools = append(cat.Tools, t.Raw)
	}
	if !catalog.Store(g.cacheDir, cat, nil) {
		g.log.Warn("could not record the tool catalog", "server", u.id, "dir", g.cacheDir)
	}
}

// prefixWriter prefixes each write (one stderr line) with the server id.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

var stderrMu sync.Mutex

func (p *prefixWriter) Write(b []byte) (int, error) {
	stderrMu.Lock()
	defer stderrMu.Unlock()
	if _, err := io.WriteString(p.w, p.prefix); err != nil {
		return 0, err
	}
	if _, err := p.w.Write(b); err != nil {
		return 0, err
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		io.WriteString(p.w, "\n")
	}
	return len(b), nil
}

// declTimeout is how long the gateway waits for any one answer from the
// declared server: its timeoutMs, else DefaultCallTimeout.
func declTimeout(d config.Server) time.Duration {
	if d.TimeoutMs > 0 {
		return time.Duration(d.TimeoutMs) * time.Millisecond
	}
	return DefaultCallTimeout
}
