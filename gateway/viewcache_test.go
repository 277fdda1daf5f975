package gateway

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"sluice/gateway/trust"
)

// clock is a settable test clock, starting at the real time (midSave
// compares it with file modification times).
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now()} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var echoArgs = json.RawMessage(`{"text":"x"}`)

// A trust record revoked by another process (the file rewritten behind
// the gateway's back) reaches calls to the running server once
// RecheckEvery has passed, and a re-trust in this process at once.
func TestRevokedTrustReachesRunningCallsWithinRecheck(t *testing.T) {
	w := newWorld(t)
	w.writeProject("servers:\n" + fixture(t, "pj"))
	clk := newClock()
	g := w.open(func(o *Options) { o.now = clk.now })
	plan, err := g.PlanTrust("pj", "read")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Trust(plan); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Call(ctx(t), CallRequest{Capability: "pj__echo", Arguments: echoArgs}); err != nil {
		t.Fatal(err)
	}
	if removed, err := trust.Remove(trust.FilePath(g.ConfigDir()), plan.ProjectRoot, "pj"); err != nil || !removed {
		t.Fatalf("revoke: %v %v", removed, err)
	}
	// Within RecheckEvery of the last look the running server may still
	// be called on the resolution already made.
	if _, err := g.Call(ctx(t), CallRequest{Capability: "pj__echo", Arguments: echoArgs}); err != nil {
		t.Fatalf("within the recheck interval: %v", err)
	}
	clk.advance(RecheckEvery)
	_, err = g.Call(ctx(t), CallRequest{Capability: "pj__echo", Arguments: echoArgs})
	if KindOf(err) != KindUntrusted || !strings.Contains(err.Error(), "sluice trust pj") {
		t.Fatalf("after the recheck interval the revocation must count: %v", err)
	}
	// Trusting in this process counts at once, without waiting.
	if err := g.Trust(plan); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Call(ctx(t), CallRequest{Capability: "pj__echo", Arguments: echoArgs}); err != nil {
		t.Fatalf("after re-trust: %v", err)
	}
	// Untrust in this process counts at once too.
	if _, err := g.Untrust("pj"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Call(ctx(t), CallRequest{Capability: "pj__echo", Arguments: echoArgs}); KindOf(err) != KindUntrusted {
		t.Fatalf("after untrust in this process: %v", err)
	}
}

// A declaration edited while its server runs: the trust record goes stale
// and calls see it once RecheckEvery has passed; a user declaration that
// is removed stops being callable the same way.
func TestEditedDeclarationReachesRunningCallsWithinRecheck(t *testing.T) {
	w := newWorld(t)
	decl := "servers:\n" + fixture(t, "pj")
	w.writeProject(decl)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	clk := newClock()
	g := w.open(func(o *Options) { o.now = clk.now })
	plan, err := g.PlanTrust("pj", "read")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Trust(plan); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"pj__echo", "fx__echo"} {
		if _, err := g.Call(ctx(t), CallRequest{Capability: c, Arguments: echoArgs}); err != nil {
			t.Fatal(err)
		}
	}
	w.writeProject(decl + "    timeoutMs: 1000\n")
	w.writeUser("servers: {}\n")
	clk.advance(RecheckEvery)
	_, err = g.Call(ctx(t), CallRequest{Capability: "pj__echo", Arguments: echoArgs})
	if KindOf(err) != KindUntrusted || !strings.Contains(err.Error(), "stale") {
		t.Fatalf("edited project declaration: want stale, got %v", err)
	}
	if _, err := g.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: echoArgs}); KindOf(err) != KindUnknown {
		t.Fatalf("removed user declaration: want unknown, got %v", err)
	}
	// The edit closed both servers: nothing of them runs any more.
	waitNoChildren(t)
}

// A launch never rests on a remembered resolution: a call whose server is
// not running resolves from the files at once, and a lease of a
// declaration that is no longer trusted launches nothing.
func TestLaunchChecksTrustAgain(t *testing.T) {
	w := newWorld(t)
	w.writeProject("servers:\n" + fixture(t, "pj"))
	clk := newClock()
	g := w.open(func(o *Options) { o.now = clk.now })
	plan, err := g.PlanTrust("pj", "read")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Trust(plan); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Call(ctx(t), CallRequest{Capability: "pj__echo", Arguments: echoArgs}); err != nil {
		t.Fatal(err)
	}
	v, err := g.callServer("pj")
	if err != nil || !v.Trusted() {
		t.Fatalf("resolution: %+v %v", v, err)
	}
	// Revoked behind the gateway's back, and the server stops: the clock
	// has not moved, yet the next call must not relaunch it.
	if _, err := trust.Remove(trust.FilePath(g.ConfigDir()), plan.ProjectRoot, "pj"); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	s := g.ups["pj"]
	delete(g.ups, "pj")
	g.mu.Unlock()
	s.Shutdown()
	waitNoChildren(t)
	if _, err := g.Call(ctx(t), CallRequest{Capability: "pj__echo", Arguments: echoArgs}); KindOf(err) != KindUntrusted {
		t.Fatalf("call after revocation to a stopped server: %v", err)
	}
	// The lease itself (what a call racing the server's death reaches with
	// the resolution it made before) refuses too, launching nothing.
	if _, err := g.lease(ctx(t), v.decl); KindOf(err) != KindUntrusted {
		t.Fatalf("lease of a revoked declaration: %v", err)
	}
	if n := children(); n != 0 {
		t.Fatalf("a revoked declaration launched %d processes", n)
	}
}

// A revocation written by another process while a call is between reading
// the trust file and remembering what it read, and seen meanwhile by a
// call to another server: the remembered resolution (made on the old
// records) must not outlive RecheckEvery. Before, it was remembered under
// the new file's stamp and every later call to the running server used
// it, however long after the revocation.
func TestRevocationDuringAResolutionIsNotRemembered(t *testing.T) {
	w := newWorld(t)
	w.writeProject("servers:\n" + fixture(t, "pj"))
	w.writeUser("servers:\n" + fixture(t, "fx"))
	clk := newClock()
	var g *Gateway
	var plan *TrustPlan
	raced := false
	g = w.open(func(o *Options) {
		o.now = clk.now
		o.resolved = func(id string) {
			if id != "pj" || raced || plan == nil {
				return
			}
			raced = true
			if removed, err := trust.Remove(trust.FilePath(g.ConfigDir()), plan.ProjectRoot, "pj"); err != nil || !removed {
				t.Errorf("revoke: %v %v", removed, err)
			}
			// Another server's first call looks at the files now.
			if _, err := g.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: echoArgs}); err != nil {
				t.Errorf("fx: %v", err)
			}
		}
	})
	p, err := g.PlanTrust("pj", "read")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Trust(p); err != nil {
		t.Fatal(err)
	}
	// Launch pj (its resolution is made afresh: nothing runs yet), then
	// arm the race for the next resolution.
	if _, err := g.Call(ctx(t), CallRequest{Capability: "pj__echo", Arguments: echoArgs}); err != nil {
		t.Fatal(err)
	}
	plan = p
	clk.advance(RecheckEvery)
	g.invalidateViews() // the next pj call resolves afresh, and races
	_, _ = g.Call(ctx(t), CallRequest{Capability: "pj__echo", Arguments: echoArgs})
	if !raced {
		t.Fatal("the resolution hook did not run")
	}
	clk.advance(2 * RecheckEvery)
	for i := 0; i < 2; i++ {
		_, err = g.Call(ctx(t), CallRequest{Capability: "pj__echo", Arguments: echoArgs})
		if KindOf(err) != KindUntrusted {
			t.Fatalf("call %d, %v after the revocation: want untrusted, got %v", i+1, 2*RecheckEvery, err)
		}
	}
}

// A filter added to the user file while a server runs reaches the results
// of its calls once RecheckEvery has passed since the call path last
// looked at the files (the call path stats them no more often than that).
func TestFilterEditReachesCallsWithinRecheck(t *testing.T) {
	w := newWorld(t)
	decl := "approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx")
	w.writeUser(decl)
	clk := newClock()
	g := w.open(func(o *Options) { o.now = clk.now })
	args := json.RawMessage(`{"text":"token ` + ghToken + `"}`)
	call := func() string {
		t.Helper()
		r, err := g.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return string(r.Result)
	}
	if out := call(); !strings.Contains(out, ghToken) {
		t.Fatalf("no filter configured, yet the result changed: %s", out)
	}
	w.writeUser(decl + "filters:\n  - module: builtin:redact\n")
	clk.advance(RecheckEvery)
	if out := call(); strings.Contains(out, ghToken) || !strings.Contains(out, "[REDACTED:github-token]") {
		t.Fatalf("a redact filter added RecheckEvery ago did not apply: %s", out)
	}
	// Every later result too, without the clock moving.
	if out := call(); strings.Contains(out, ghToken) {
		t.Fatalf("the second result after the edit: %s", out)
	}
}

// A call that read a remembered resolution just before another call's
// look found the trust file replaced must not use it: its own look then
// sees the new stamps as unchanged (the other look recorded them), which
// used to keep the resolution made on the old records, however long ago
// the revocation was written.
func TestRevocationSeenByAConcurrentLookIsNotUsed(t *testing.T) {
	w := newWorld(t)
	w.writeProject("servers:\n" + fixture(t, "pj"))
	w.writeUser("servers:\n" + fixture(t, "fx"))
	clk := newClock()
	var g *Gateway
	armed, raced := false, false
	g = w.open(func(o *Options) {
		o.now = clk.now
		o.rechecking = func(id string) {
			if id != "pj" || !armed || raced {
				return
			}
			raced = true
			// Another server's first call looks at the files now.
			if _, err := g.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: echoArgs}); err != nil {
				t.Errorf("fx: %v", err)
			}
		}
	})
	plan, err := g.PlanTrust("pj", "read")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Trust(plan); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // launch, then a call that remembers the resolution
		if _, err := g.Call(ctx(t), CallRequest{Capability: "pj__echo", Arguments: echoArgs}); err != nil {
			t.Fatal(err)
		}
	}
	if removed, err := trust.Remove(trust.FilePath(g.ConfigDir()), plan.ProjectRoot, "pj"); err != nil || !removed {
		t.Fatalf("revoke: %v %v", removed, err)
	}
	clk.advance(10 * RecheckEvery) // long after the revocation
	armed = true
	_, err = g.Call(ctx(t), CallRequest{Capability: "pj__echo", Arguments: echoArgs})
	if !raced {
		t.Fatal("the recheck hook did not run")
	}
	if KindOf(err) != KindUntrusted {
		t.Fatalf("a call %v after the revocation: want untrusted, got %v", 10*RecheckEvery, err)
	}
}
