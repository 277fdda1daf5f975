package upstream

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"sluice/gateway/mcp"
	"sluice/gateway/proc"
)

// State is a server's run status.
type State string

const (
	Idle      State = "idle"       // not running; will launch on need
	Starting  State = "starting"   // launching now
	Ready     State = "ready"      // running
	Backoff   State = "backoff"    // failed recently; relaunch waits
	CrashLoop State = "crash-loop" // failed too often; not relaunched
)

// Config describes one slot. Every function field but Launch may be nil.
type Config struct {
	Server string // server id, named in errors and logs
	Digest string // of the declaration the slot runs

	// CallTimeout bounds one request to the server (Lease.Timeout); 0
	// means no bound of the server's own.
	CallTimeout time.Duration
	// ToolTimeout, when it knows the tool, replaces CallTimeout for calls
	// of that tool (a CLI tool's own deadline plus its teardown).
	ToolTimeout func(tool string) (time.Duration, bool)

	// Launch starts the server, completes the handshake and lists its
	// tools. On error it leaves nothing running.
	Launch func(ctx context.Context) (*mcp.Client, *mcp.ToolList, error)
	// Listed runs after a launch, a relist or Lease.List installed a
	// listing (the gateway records the catalog), before waiters go on.
	Listed func(c *mcp.Client, tl *mcp.ToolList)
	// Changed runs after a launch or a relist changed what the server
	// offers.
	Changed func()
	// Died runs when a running client died (the slot retires it); nil:
	// nothing.
	Died func()
	// Outcome receives the teardown of every client the slot closes on
	// its own (death, idle, a launch that finished after Shutdown).
	Outcome func(proc.Outcome)
	// Go runs background work the owner waits for on shutdown; nil: a
	// plain goroutine.
	Go func(func())

	Now               func() time.Time // default time.Now
	RestartBackoff    time.Duration    // first backoff after a failure
	MaxRestartBackoff time.Duration    // the doubling stops here
	CrashLoopLimit    int              // consecutive failures that stop relaunching
	RelistTimeout     time.Duration    // bound of a relist after tools/list_changed; default 30s
	Log               *slog.Logger
}

// Slot holds at most one live client of a declared server.
type Slot struct {
	cfg Config

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
	late        []proc.Outcome // teardowns of launches that finished after Shutdown
}

// New returns an idle slot.
func New(cfg Config) *Slot {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Go == nil {
		cfg.Go = func(fn func()) { go fn() }
	}
	if cfg.Outcome == nil {
		cfg.Outcome = func(proc.Outcome) {}
	}
	if cfg.RelistTimeout <= 0 {
		cfg.RelistTimeout = 30 * time.Second
	}
	return &Slot{cfg: cfg}
}

// Server is the slot's server id.
func (s *Slot) Server() string { return s.cfg.Server }

// Digest is the digest of the declaration the slot runs.
func (s *Slot) Digest() string { return s.cfg.Digest }

// State reports the run status and the last error, if any.
func (s *Slot) State() (State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.client != nil && s.client.State() == mcp.Ready:
		return Ready, nil
	case s.starting != nil:
		return Starting, nil
	case s.failures >= s.cfg.CrashLoopLimit:
		return CrashLoop, s.lastErr
	case s.failures > 0 && s.cfg.Now().Before(s.nextTry):
		return Backoff, s.lastErr
	}
	return Idle, s.lastErr
}

// LiveTools returns the live listing, if a client is running.
func (s *Slot) LiveTools() (*mcp.ToolList, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil || s.tools == nil {
		return nil, false
	}
	return s.tools, true
}

// Acquire leases a ready client, launching one if needed (waiting out a
// backoff first). It fails with ErrClosed, a *WaitError when ctx ends
// first, a *CrashLoopError, or the error of the launch it waited for.
// Every lease must be released.
func (s *Slot) Acquire(ctx context.Context) (*Lease, error) {
	s.mu.Lock()
	for {
		if s.closed {
			s.mu.Unlock()
			return nil, ErrClosed
		}
		if c := s.client; c != nil {
			select {
			case <-c.Done():
				s.retireLocked(c, c.Err())
				continue
			default:
			}
			l := s.leaseLocked(c)
			s.mu.Unlock()
			return l, nil
		}
		if ch := s.starting; ch != nil {
			if err := s.awaitLaunchLocked(ctx, ch); err != nil {
				return nil, err
			}
			continue
		}
		if s.failures >= s.cfg.CrashLoopLimit {
			err := &CrashLoopError{Server: s.cfg.Server, Failures: s.failures, Last: s.lastErr}
			s.mu.Unlock()
			return nil, err
		}
		if wait := s.nextTry.Sub(s.cfg.Now()); s.failures > 0 && wait > 0 {
			s.mu.Unlock()
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, &WaitError{Server: s.cfg.Server, Err: ctx.Err()}
			}
			s.mu.Lock()
			continue
		}
		ch := make(chan struct{})
		s.starting = ch
		go s.launch(context.WithoutCancel(ctx), ch)
		// Wait for this launch like any other caller: a launch that fails
		// before this goroutine looks again must still be reported, not
		// retried after its backoff.
		if err := s.awaitLaunchLocked(ctx, ch); err != nil {
			return nil, err
		}
	}
}

// awaitLaunchLocked waits (unlocked) for the launch signalled by ch and
// returns with s.mu held and a nil error, or without the lock and the
// error the caller must return: the context's, or the launch's own when
// that launch failed.
func (s *Slot) awaitLaunchLocked(ctx context.Context, ch chan struct{}) error {
	before := s.failures
	s.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return &WaitError{Server: s.cfg.Server, Err: ctx.Err()}
	}
	s.mu.Lock()
	if s.client == nil && s.failures > before && s.lastErr != nil {
		// The launch this caller waited for failed: report it rather
		// than waiting out a backoff and trying again.
		err := s.lastErr
		s.mu.Unlock()
		return err
	}
	return nil
}

// Running leases the client if one is running and ready, without
// launching; nil otherwise.
func (s *Slot) Running() *Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.client
	if c == nil || s.closed || c.State() != mcp.Ready {
		return nil
	}
	return s.leaseLocked(c)
}

func (s *Slot) leaseLocked(c *mcp.Client) *Lease {
	s.inflight++
	s.lastUsed = s.cfg.Now()
	return &Lease{s: s, c: c}
}

func (s *Slot) backoff() time.Duration {
	d := s.cfg.RestartBackoff
	for i := 1; i < s.failures && d < s.cfg.MaxRestartBackoff; i++ {
		d *= 2
	}
	return min(d, s.cfg.MaxRestartBackoff)
}

// retireLocked drops a dead client, counts the failure and tears its group
// down in the background.
func (s *Slot) retireLocked(c *mcp.Client, err error) {
	if s.client != c {
		return
	}
	s.client, s.tools, s.byName = nil, nil, nil
	s.failures++
	s.lastErr = err
	s.nextTry = s.cfg.Now().Add(s.backoff())
	s.cfg.Log.Warn("server died", "server", s.cfg.Server, "error", errString(err), "failures", s.failures)
	if s.cfg.Died != nil {
		s.cfg.Died()
	}
	s.cfg.Go(func() { s.cfg.Outcome(c.Close()) })
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (s *Slot) launch(ctx context.Context, done chan struct{}) {
	c, tools, err := s.cfg.Launch(ctx)
	s.mu.Lock()
	s.starting = nil
	switch {
	case err != nil:
		s.failures++
		s.lastErr = err
		s.nextTry = s.cfg.Now().Add(s.backoff())
		// Info, not Warn: the error goes back to every caller waiting for
		// this launch, and the CLI prints it once for people.
		s.cfg.Log.Info("server failed to start", "server", s.cfg.Server, "error", err.Error(), "failures", s.failures)
	case s.closed:
		s.mu.Unlock()
		out := c.Close()
		s.cfg.Outcome(out)
		s.mu.Lock()
		s.late = append(s.late, out)
		s.mu.Unlock()
		close(done)
		return
	default:
		s.client = c
		s.setToolsLocked(tools)
		s.lastUsed = s.cfg.Now()
	}
	s.mu.Unlock()
	if err == nil && s.cfg.Listed != nil {
		// Recorded before waiters are released, so a short-lived caller
		// (one CLI call) never exits with the catalog half written.
		s.cfg.Listed(c, tools)
	}
	close(done)
	if err == nil && s.cfg.Changed != nil {
		s.cfg.Changed()
	}
}

func (s *Slot) setToolsLocked(tl *mcp.ToolList) {
	s.tools = tl
	s.byName = make(map[string]mcp.Tool, len(tl.Tools))
	for _, t := range tl.Tools {
		s.byName[t.Name] = t
	}
	s.listedAt = s.cfg.Now()
}

// ListChanged relists the live client's tools after the server sent
// notifications/tools/list_changed. A change arriving while a relist runs
// makes it go round again, so the last change is never lost.
func (s *Slot) ListChanged() {
	s.mu.Lock()
	c := s.client
	if c == nil {
		s.mu.Unlock()
		return
	}
	if s.relisting {
		s.relistAgain = true
		s.mu.Unlock()
		return
	}
	s.relisting = true
	s.mu.Unlock()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RelistTimeout)
		tl, err := c.ListTools(ctx)
		cancel()
		s.mu.Lock()
		ok := err == nil && s.client == c
		if ok {
			s.setToolsLocked(tl)
		}
		again := s.relistAgain && s.client == c
		s.relistAgain = false
		if !again {
			s.relisting = false
		}
		s.mu.Unlock()
		if err != nil {
			s.cfg.Log.Warn("relist after tools/list_changed failed", "server", s.cfg.Server, "error", err.Error())
		}
		if ok {
			if s.cfg.Listed != nil {
				s.cfg.Listed(c, tl)
			}
			if s.cfg.Changed != nil {
				s.cfg.Changed()
			}
		}
		if !again {
			return
		}
	}
}

// IdleFor is how long the client has been unused (0 while none runs or a
// lease is out).
func (s *Slot) IdleFor(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil || s.inflight > 0 {
		return 0
	}
	return now.Sub(s.lastUsed)
}

// CloseIfIdle closes the client if nothing used it for longer than idle;
// it reports whether it did.
func (s *Slot) CloseIfIdle(now time.Time, idle time.Duration) bool {
	s.mu.Lock()
	c := s.client
	if c == nil || s.inflight > 0 || now.Sub(s.lastUsed) <= idle {
		s.mu.Unlock()
		return false
	}
	s.client, s.tools, s.byName = nil, nil, nil
	s.mu.Unlock()
	s.cfg.Outcome(c.Close())
	return true
}

// ResetFailures clears the crash-loop count (an explicit refresh).
func (s *Slot) ResetFailures() {
	s.mu.Lock()
	s.failures = 0
	s.nextTry = time.Time{}
	s.mu.Unlock()
}

// Shutdown closes the slot for good, waits for a launch in progress, and
// returns the teardown outcomes of every client it closed.
func (s *Slot) Shutdown() []proc.Outcome {
	s.mu.Lock()
	s.closed = true
	c := s.client
	ch := s.starting
	s.client, s.tools, s.byName = nil, nil, nil
	s.mu.Unlock()
	var outs []proc.Outcome
	if c != nil {
		outs = append(outs, c.Close())
	}
	if ch != nil {
		// A launch in progress closes its own client when it sees closed.
		<-ch
	}
	s.mu.Lock()
	outs = append(outs, s.late...)
	s.late = nil
	s.mu.Unlock()
	return outs
}

// Lease is one caller's use of a running client.
type Lease struct {
	s    *Slot
	c    *mcp.Client
	once sync.Once
}

// Client is the leased client.
func (l *Lease) Client() *mcp.Client { return l.c }

// Tool looks a tool up in the live listing of the leased client.
func (l *Lease) Tool(name string) (mcp.Tool, bool) {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if l.s.client != l.c {
		return mcp.Tool{}, false
	}
	t, ok := l.s.byName[name]
	return t, ok
}

// Tools is the live listing of the leased client.
func (l *Lease) Tools() []mcp.Tool {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if l.s.client != l.c || l.s.tools == nil {
		return nil
	}
	return l.s.tools.Tools
}

// Truncated reports whether the leased client's listing stopped at the
// client's bounds (the server offered more tools).
func (l *Lease) Truncated() bool {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	return l.s.client == l.c && l.s.tools != nil && l.s.tools.Truncated
}

// Timeout is the one timeout rule of a request to the server: the tool's
// own timeout (Config.ToolTimeout; tool "" for requests that are not tool
// calls), else the server's CallTimeout, or limit when that is positive and
// shorter (a surface's deadline).
func (l *Lease) Timeout(tool string, limit time.Duration) time.Duration {
	t := l.s.cfg.CallTimeout
	if tool != "" && l.s.cfg.ToolTimeout != nil {
		if tt, ok := l.s.cfg.ToolTimeout(tool); ok {
			t = tt
		}
	}
	if limit > 0 && (t <= 0 || limit < t) {
		t = limit
	}
	return t
}

// ListedSince reports whether the leased client's listing was taken at or
// after t (a launch that just happened listed the tools already).
func (l *Lease) ListedSince(t time.Time) bool {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	return l.s.client == l.c && !l.s.listedAt.Before(t)
}

// List lists the tools again and installs the listing (Config.Listed runs
// after).
func (l *Lease) List(ctx context.Context) error {
	tl, err := l.c.ListTools(ctx)
	if err != nil {
		return err
	}
	l.s.mu.Lock()
	if l.s.client == l.c {
		l.s.setToolsLocked(tl)
	}
	l.s.mu.Unlock()
	if l.s.cfg.Listed != nil {
		l.s.cfg.Listed(l.c, tl)
	}
	return nil
}

// Release gives the lease back. ok: the work succeeded, which clears the
// failure count. A client that died meanwhile is retired now (counted as
// a failure; the next Acquire may relaunch after a backoff). Only the
// first Release counts.
func (l *Lease) Release(ok bool) {
	l.once.Do(func() {
		s := l.s
		s.mu.Lock()
		defer s.mu.Unlock()
		s.inflight--
		s.lastUsed = s.cfg.Now()
		select {
		case <-l.c.Done():
			s.retireLocked(l.c, l.c.Err())
			return
		default:
		}
		if ok {
			s.failures = 0
		}
	})
}
