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
	"sluice/gateway/internal/upstream"
	"sluice/gateway/mcp"
	"sluice/gateway/proc"
)

// The gateway's side of the upstream slots (gateway/internal/upstream owns
// their state): which slot runs which declaration, how a server launches,
// and how a slot's errors read.

// RunState is a server's run status, separate from where its catalog came
// from (provenance).
type RunState string

const (
	RunIdle      RunState = RunState(upstream.Idle)      // not running; will launch on need
	RunStarting  RunState = RunState(upstream.Starting)  // launching now
	RunReady     RunState = RunState(upstream.Ready)     // running
	RunBackoff   RunState = RunState(upstream.Backoff)   // failed recently; relaunch waits
	RunCrashLoop RunState = RunState(upstream.CrashLoop) // failed too often; not relaunched
)

// slotFor returns the slot running declaration d, replacing (and shutting
// down) one that runs an older declaration of the same server.
func (g *Gateway) slotFor(d config.Server) (*upstream.Slot, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, ErrClosed
	}
	s := g.ups[d.ID]
	if s != nil && s.Digest() == d.Digest {
		return s, nil
	}
	if s != nil {
		delete(g.ups, d.ID)
		g.goBG(func() { s.Shutdown() })
	}
	slot := g.newSlot(d)
	g.ups[d.ID] = slot
	return slot, nil
}

// newSlot makes the slot for declaration d. (Apart from slotFor, whose
// common case, the slot already running d, then copies d nowhere: the
// closures here capture it.)
func (g *Gateway) newSlot(d config.Server) *upstream.Slot {
	timeout := declTimeout(d)
	var slot *upstream.Slot
	slot = upstream.New(upstream.Config{
		Server:      d.ID,
		Digest:      d.Digest,
		CallTimeout: timeout,
		ToolTimeout: func(tool string) (time.Duration, bool) { return cliCallTimeout(d, tool) },
		Launch: func(ctx context.Context) (*mcp.Client, *mcp.ToolList, error) {
			if err := g.launchCheck(d); err != nil {
				g.noteLaunch(d.ID, false)
				return nil, nil, err
			}
			c, tl, err := g.start(ctx, d, slot)
			g.noteLaunch(d.ID, err == nil)
			return c, tl, err
		},
		Died:              func() { g.noteCrash(d.ID) },
		Listed:            func(c *mcp.Client, tl *mcp.ToolList) { g.recordCatalog(d, c, tl) },
		Changed:           g.changed,
		Outcome:           func(out proc.Outcome) { g.reportOutcome(d.ID, out) },
		Go:                g.goBG,
		Now:               g.opts.now,
		RestartBackoff:    g.opts.restartBackoff,
		MaxRestartBackoff: MaxRestartBackoff,
		CrashLoopLimit:    g.opts.crashLoopLimit,
		Log:               g.log,
	})
	return slot
}

// peekSlot returns the slot running the declaration with this digest,
// without creating one; nil if there is none.
func (g *Gateway) peekSlot(id, digest string) *upstream.Slot {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s := g.ups[id]; s != nil && s.Digest() == digest {
		return s
	}
	return nil
}

// running leases the live client of server v without launching it (nil
// when none runs); the lease must be released.
func (g *Gateway) running(v ServerView) *upstream.Lease {
	if s := g.peekSlot(v.ID, v.Digest); s != nil {
		return s.Running()
	}
	return nil
}

// lease leases a ready client of declaration d, launching it if needed.
func (g *Gateway) lease(ctx context.Context, d config.Server) (*upstream.Lease, error) {
	s, err := g.slotFor(d)
	if err != nil {
		return nil, err
	}
	return acquire(ctx, s)
}

// acquire is Slot.Acquire with the slot's errors as gateway errors.
func acquire(ctx context.Context, s *upstream.Slot) (*upstream.Lease, error) {
	l, err := s.Acquire(ctx)
	if err == nil {
		return l, nil
	}
	var we *upstream.WaitError
	var cl *upstream.CrashLoopError
	switch {
	case errors.Is(err, upstream.ErrClosed):
		return nil, ErrClosed
	case errors.As(err, &we):
		return nil, &Error{Kind: KindUpstream, Server: we.Server, Message: we.Error(), Err: we.Err}
	case errors.As(err, &cl):
		return nil, &Error{Kind: KindCrashLoop, Server: cl.Server, Message: cl.Error(),
			Remedy: Remedy{Before: "fix the server or its declaration, then", Step: StepRefresh, Server: cl.Server, After: "(a refresh resets the count)"},
			Err:    cl.Last}
	}
	return nil, err // a launch error, already a gateway error
}

func (g *Gateway) reportOutcome(id string, out proc.Outcome) {
	if !out.Complete {
		g.log.Error("teardown incomplete", "server", id, "pgid", out.Pgid, "reason", out.Reason)
	}
}

// start spawns the server of declaration d for slot s, completes the
// handshake and lists its tools.
func (g *Gateway) start(ctx context.Context, d config.Server, s *upstream.Slot) (*mcp.Client, *mcp.ToolList, error) {
	env, err := d.ExpandEnv(g.opts.LookupEnv)
	if err != nil {
		return nil, nil, &Error{Kind: KindGateway, Server: d.ID, Message: err.Error(), Err: err}
	}
	// Launch exactly the program the declarations resolved on the
	// gateway's PATH (the one trust binds), never a name a declared PATH
	// could redirect. The allow-list names bare commands, so it is
	// checked here, on the declared name, before the path is handed on.
	if d.CLI == nil && !d.IsRemote() && !filepath.IsAbs(d.Command) && !g.allow.Allows(d.Command) {
		err := &proc.CommandError{Server: d.ID, Command: d.Command, Reason: proc.ReasonCommandNotAllowed, Err: proc.ErrCommandNotAllowed}
		return nil, nil, upstreamErr(d.ID, "start", err)
	}
	if d.CLI == nil && !d.IsRemote() && d.Program == "" {
		err := &proc.CommandError{Server: d.ID, Command: d.Command, Reason: proc.ReasonCommandNotFound, Err: proc.ErrCommandNotFound}
		return nil, nil, upstreamErr(d.ID, "start", err)
	}
	spec := proc.Spec{
		Server:        d.ID,
		Command:       d.Program,
		Args:          d.Args,
		Dir:           d.Dir,
		Root:          d.Root,
		Env:           env,
		PassEnv:       d.PassEnv,
		AllowCommands: g.allow,
		KillGrace:     g.opts.killGrace,
		StdinGrace:    g.opts.stdinGrace,
		KillBound:     g.opts.killBound,
	}
	scrub := newScrubber(declSecrets(d, env))
	if scrub != nil {
		spec.Scrub = scrub
	}
	if g.opts.ServerStderr != nil {
		spec.Stderr = &prefixWriter{w: g.opts.ServerStderr, prefix: "[" + d.ID + "] "}
	}
	g.mu.Lock()
	hooks := g.hooks
	g.mu.Unlock()
	opts := &mcp.Options{
		Server:        d.ID,
		MaxLineBytes:  d.MaxLineBytes,
		NoiseFatal:    d.StdoutNoise == config.NoiseFatal,
		ClientName:    g.opts.ClientName,
		ClientVersion: g.opts.ClientVersion,
		Logger:        g.log, // the client names the server itself
		Capabilities:  hooks.Capabilities,
		Scrub:         newScrubber(stdoutSecrets(d, env)).messages(),
		OnNotification: func(method string, params json.RawMessage) {
			if method == "notifications/tools/list_changed" {
				g.goBG(s.ListChanged)
				return
			}
			if hooks.Notify != nil {
				hooks.Notify(d.ID, method, params)
			}
		},
	}
	// Every request to the server honours its declared timeout, the
	// listings included (the handshake has its own bound).
	opts.RequestTimeout = declTimeout(d)
	if hooks.Request != nil {
		opts.OnRequest = func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			return hooks.Request(ctx, d.ID, method, params)
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
		return nil, nil, upstreamErr(d.ID, "start", err)
	}
	tools, err := c.ListTools(ctx)
	if err != nil {
		g.reportOutcome(d.ID, c.Close())
		return nil, nil, upstreamErr(d.ID, "list tools", err)
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

// recordCatalog stores the listing of a client of declaration d.
func (g *Gateway) recordCatalog(d config.Server, c *mcp.Client, tl *mcp.ToolList) {
	info := c.ServerInfo()
	cat := &catalog.Catalog{
		Identity: g.catalogIdentity(d),
		Server: catalog.Server{
			Name: info.Name, Version: info.Version, Title: info.Title,
			Era: c.Era(), ProtocolVersion: c.ProtocolVersion(), Instructions: info.Instructions,
		},
		Truncated:  tl.Truncated,
		RecordedAt: g.opts.now(),
	}
	for _, t := range tl.Tools {
		cat.Tools = append(cat.Tools, t.Raw)
	}
	if !catalog.Store(g.cacheDir, cat, nil) {
		g.log.Warn("could not record the tool catalog", "server", d.ID, "dir", g.cacheDir)
	}
	g.recordBaseline(d, cat.Tools, cat.Server.Instructions)
}

// prefixWriter prefixes each write (one stderr line) with the server id.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

var stderrMu sync.Mutex

// Write writes the prefixed text in one write, so a line of the gateway's
// own log written meanwhile (which does not take stderrMu) never lands
// between a server's prefix and its text.
func (p *prefixWriter) Write(b []byte) (int, error) {
	line := make([]byte, 0, len(p.prefix)+len(b)+1)
	line = append(append(line, p.prefix...), b...)
	if len(b) == 0 || b[len(b)-1] != '\n' {
		line = append(line, '\n')
	}
	stderrMu.Lock()
	defer stderrMu.Unlock()
	if _, err := p.w.Write(line); err != nil {
		return 0, err
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
