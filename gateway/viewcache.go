package gateway

import (
	"os"
	"sync"
	"sync/atomic"
	"time"

	"sluice/gateway/config"
	"sluice/gateway/trust"
)

// RecheckEvery bounds how stale the declarations and trust records a call
// to a running server sees may be: the call path looks at the files (one
// stat each) at most this often, and re-resolves a server only when one of
// them changed. A launch never uses a remembered resolution (see "Why a
// call to a running server may use a resolution up to RecheckEvery old" in
// doc.go).
const RecheckEvery = 100 * time.Millisecond

// viewCache remembers what server() resolved for calls, while neither
// declaration file nor the trust file changed. Its entries carry no run
// state or authorization state: the call path needs neither.
type viewCache struct {
	mu     sync.Mutex
	next   time.Time // the files are looked at again from then on
	gen    uint64    // gen of the gateway the entries belong to
	epoch  uint64    // bumped whenever the entries are forgotten
	loaded *config.Loaded
	trust  trustStamp
	views  map[string]ServerView
}

// trustStamp identifies one version of the trust file. The file is always
// replaced by rename (trust's atomic write), so a new version is a new
// file: a change is seen even within one modification-time tick (and an
// edit in place changes the status-change time).
type trustStamp struct {
	info os.FileInfo // nil: no file
	s    fileStamp
}

func stampTrust(path string) trustStamp {
	st, err := os.Stat(path)
	if err != nil {
		return trustStamp{}
	}
	return trustStamp{info: st, s: stampOfInfo(st)}
}

func (a trustStamp) same(b trustStamp) bool {
	if a.info == nil || b.info == nil {
		return a.info == nil && b.info == nil
	}
	return os.SameFile(a.info, b.info) && a.s.same(b.s)
}

// viewGen is bumped by every in-process change of what server() resolves
// (a reload that read new declarations, Trust, Untrust): the call path
// then stops using what it remembered at once, not after RecheckEvery.
type viewGen struct{ n atomic.Uint64 }

func (g *Gateway) invalidateViews() { g.vgen.n.Add(1) }

// callServer is server(id) for a call: it returns the remembered
// resolution when the files were looked at less than RecheckEvery ago (or
// have not changed since) and the declaration it resolved is running
// right now and is no cli server (each of whose calls runs a process);
// otherwise it resolves afresh (server), so whatever may launch
// is decided on what the files say now. The Launch hook checks again
// (launchCheck), because a running server can die between here and the
// lease.
func (g *Gateway) callServer(id string) (ServerView, error) {
	c := &g.views
	now := g.opts.now()
	gen := g.vgen.n.Load()
	c.mu.Lock()
	fresh := c.gen == gen && now.Before(c.next)
	v, ok := c.views[id]
	epoch := c.epoch
	c.mu.Unlock()
	if !fresh {
		if g.opts.rechecking != nil {
			g.opts.rechecking(id)
		}
		// v holds only if nothing was forgotten since it was read: a
		// concurrent look that found a change records the new stamps,
		// and this look would then see them as unchanged.
		ok = g.recheck(now) && ok
		c.mu.Lock()
		ok = ok && c.epoch == epoch
		c.mu.Unlock()
	}
	// A cli server's every call runs a process: a launch, decided afresh.
	if ok && v.decl.CLI == nil && g.isRunning(v) {
		return v, nil
	}
	return g.resolveForCall(now, id)
}

// loadedForCall is the declarations a call's result is filtered under:
// those the call path looked at less than RecheckEvery ago (recheck), so
// a call stats the declaration files no more often than it resolves its
// server; else reload's. A reload in this process (which read new
// declarations) ends the reuse at once, as for the resolutions.
func (g *Gateway) loadedForCall() *config.Loaded {
	c := &g.views
	now := g.opts.now()
	gen := g.vgen.n.Load()
	c.mu.Lock()
	l := c.loaded
	fresh := l != nil && c.gen == gen && now.Before(c.next)
	c.mu.Unlock()
	if fresh {
		return l
	}
	return g.reload()
}

// recheck looks at the files (a stat each; the declarations are re-read
// when theirs changed) and forgets every resolution when anything changed.
// It reports whether the remembered resolutions still hold.
func (g *Gateway) recheck(now time.Time) bool {
	c := &g.views
	// Stamps first, then the reads (resolveForCall): a file that changes
	// in between is read newer than its stamp, and the next look sees the
	// change again.
	l := g.reload()
	ts := stampTrust(trust.FilePath(g.configDir))
	gen := g.vgen.n.Load()
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.gen == gen && c.loaded == l && c.trust.same(ts)
	if !kept {
		c.gen, c.loaded, c.trust, c.views = gen, l, ts, nil
		c.epoch++
	}
	c.next = now.Add(RecheckEvery)
	return kept
}

// resolveForCall resolves id on what the files say now and remembers it,
// unless the entries were forgotten meanwhile: then what it read may be
// older than the stamps a concurrent look recorded (a revocation between
// this read and that look would otherwise be remembered as unchanged).
func (g *Gateway) resolveForCall(now time.Time, id string) (ServerView, error) {
	c := &g.views
	g.recheck(now)
	c.mu.Lock()
	l, epoch := c.loaded, c.epoch
	c.mu.Unlock()
	v, err := g.serverIn(l, g.trustState(), id)
	if err != nil {
		return ServerView{}, err
	}
	if g.opts.resolved != nil {
		g.opts.resolved(id)
	}
	c.mu.Lock()
	if c.epoch == epoch {
		if c.views == nil {
			c.views = map[string]ServerView{}
		}
		kept := v
		kept.Run, kept.RunError, kept.Auth = "", "", ""
		c.views[id] = kept
	}
	c.mu.Unlock()
	return v, nil
}

// isRunning reports whether v's declaration runs with a ready client.
func (g *Gateway) isRunning(v ServerView) bool {
	s := g.peekSlot(v.ID, v.Digest)
	if s == nil {
		return false
	}
	st, _ := s.State()
	return RunState(st) == RunReady
}

// launchCheck re-resolves declaration d right before it launches, on what
// the files say now: a launch never rests on a remembered resolution.
func (g *Gateway) launchCheck(d config.Server) error {
	v, err := g.server(d.ID)
	if err != nil {
		return err
	}
	if !v.Trusted() {
		return untrustedErr(v)
	}
	if v.Digest != d.Digest {
		return &Error{Kind: KindUpstream, Server: d.ID, Message: "the declaration of server " + d.ID + " changed while it was being launched; call again to launch what it says now"}
	}
	return nil
}
