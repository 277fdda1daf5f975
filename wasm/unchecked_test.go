package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// heavyResult is a result the built-in redactor needs well over a
// millisecond for: 1 MiB with a secret on every line.
func heavyResult() []byte { return secretResultEvery(1<<20, 1) }

// overrunResult is a result the built-in redactor needs seconds for (3 MiB
// with a secret on every line), far past overrunTimeout, while a small
// result takes well under it on any machine.
func overrunResult() []byte { return secretResultEvery(3<<20, 1) }

const overrunTimeout = 250 * time.Millisecond

// holdOverruns makes every abandoned call's end wait until the returned
// release is called (at the latest when the test ends), so that an overrun
// episode stays open while the test looks at it.
func holdOverruns(t *testing.T) (release func()) {
	t.Helper()
	gate := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	hold := func() { <-gate }
	abandonedEnded.Store(&hold)
	t.Cleanup(func() { release(); abandonedEnded.CompareAndSwap(&hold, nil) }) // before the host's Close, which waits for the calls
	return release
}

const tinySecret = `{"content":[{"type":"text","text":"key AKIAIOSFODNN7EXAMPLE"}]}`
const tinyRedacted = `{"content":[{"type":"text","text":"key [REDACTED:aws-access-key-id]"}]}`

func wantRedacted(t *testing.T, what string, out Output, err error) {
	t.Helper()
	if err != nil || out.Status != StatusReplaced || string(out.Data) != tinyRedacted {
		t.Fatalf("%s: %v %v %s, want the redacted result", what, err, out.Status, out.Data)
	}
}

// waitOverrunsEnded waits (generously) until f has no abandoned call running.
func waitOverrunsEnded(t *testing.T, f *Filter) {
	t.Helper()
	for start := time.Now(); f.Status().Overrunning > 0; time.Sleep(5 * time.Millisecond) {
		if time.Since(start) > 2*time.Minute {
			t.Fatal("the abandoned calls never ended")
		}
	}
}

// TestBuiltinOverrunAbandoned: a built-in (compiled without termination
// checks) that overruns its deadline is answered at the deadline with a
// TimeoutError marked Abandoned. Its instance leaves the pool and is
// replaced at once (a pool of one serves other servers' results while the
// call runs on); the same server's results are refused with an
// OverrunError, which is not a failure; once the call has ended its server
// is served again.
func TestBuiltinOverrunAbandoned(t *testing.T) {
	h := newTestHost(t, &Options{PoolSize: 1, DisableAfter: 2})
	ctx := context.Background()
	short := mustLoad(t, h, Spec{Builtin: "redact", Timeout: overrunTimeout, TimeoutPerMiB: -1})
	roomy := mustLoad(t, h, Spec{Builtin: "redact"}) // same pool, the test's generous deadline
	if !short.pool.cm.fast {
		t.Fatal("the built-in was compiled with termination checks")
	}
	release := holdOverruns(t)
	a, b := Meta{Server: "a"}, Meta{Server: "b"}
	_, err := short.Run(ctx, overrunResult(), a)
	var te *TimeoutError
	if !errors.As(err, &te) || !te.Abandoned || !errors.Is(err, ErrFilterFailed) {
		t.Fatalf("Run = %v, want an abandoned TimeoutError", err)
	}
	for i := 0; i < 3; i++ { // more than DisableAfter: refusals do not count
		_, err = short.Run(ctx, []byte(tinySecret), a)
		var oe *OverrunError
		if !errors.As(err, &oe) || !oe.PerServer || oe.Server != "a" || oe.Running != 1 || !errors.Is(err, ErrFilterFailed) {
			t.Fatalf("server a while its call overruns: %v, want a per-server OverrunError", err)
		}
		if !strings.Contains(err.Error(), `from server "a"`) {
			t.Errorf("OverrunError text does not name the server: %v", err)
		}
	}
	out, err := short.Run(ctx, []byte(tinySecret), b)
	wantRedacted(t, "server b while server a's call overruns", out, err)
	out, err = roomy.Run(ctx, []byte(tinySecret), a)
	wantRedacted(t, "another filter on the same pool", out, err)
	st := short.Status()
	if st.State != StateActive || st.ConsecutiveFailures != 1 || st.Failures != 1 || st.Refused != 3 || st.Overrunning != 1 {
		t.Fatalf("status while the call overruns: %+v; want active, 1 failure, 3 refused, 1 overrunning", st)
	}
	short.pool.mu.Lock()
	overrun, live := short.pool.overrun, len(short.pool.live)
	short.pool.mu.Unlock()
	if overrun != 1 || live != 2 {
		t.Fatalf("while the call overruns: overrun %d, live instances %d; want 1 and 2 (the replacement, the abandoned one)", overrun, live)
	}
	release()
	waitOverrunsEnded(t, short)
	out, err = short.Run(ctx, []byte(tinySecret), a)
	wantRedacted(t, "server a after its call ended", out, err)
	if st := short.Status(); st.ConsecutiveFailures != 0 {
		t.Fatalf("a success did not end the streak: %+v", st)
	}
	short.pool.mu.Lock()
	overrun, live = short.pool.overrun, len(short.pool.live)
	short.pool.mu.Unlock()
	if overrun != 0 || live != 1 {
		t.Fatalf("after the abandoned call ended: overrun %d, live instances %d; want 0 and 1", overrun, live)
	}
}

// TestBuiltinOverrunBurstCountsOnce: a burst of calls on one server's
// oversized results, all overrunning or queued behind the overrun, counts
// as one failure of that server (the filter is not disabled for it, though
// the burst is longer than DisableAfter), and calls for another server are
// filtered throughout.
func TestBuiltinOverrunBurstCountsOnce(t *testing.T) {
	h := newTestHost(t, &Options{PoolSize: 2, DisableAfter: 2})
	ctx := context.Background()
	f := mustLoad(t, h, Spec{Builtin: "redact", Timeout: overrunTimeout, TimeoutPerMiB: -1})
	release := holdOverruns(t)
	heavy := overrunResult()
	const burst = 8
	errs := make(chan error, burst)
	var wg sync.WaitGroup
	for i := 0; i < burst; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.Run(ctx, heavy, Meta{Server: "a"})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	timeouts, refused := 0, 0
	for err := range errs {
		var te *TimeoutError
		var oe *OverrunError
		switch {
		case errors.As(err, &te) && te.Abandoned:
			timeouts++
		case errors.As(err, &oe) && oe.PerServer && oe.Server == "a":
			refused++
		default:
			t.Fatalf("a call of the burst: %v, want an abandoned TimeoutError or a per-server OverrunError", err)
		}
	}
	if timeouts < 1 || timeouts > 2 || timeouts+refused != burst {
		t.Fatalf("burst of %d: %d timeouts (want 1 or 2: the pool's size), %d refused", burst, timeouts, refused)
	}
	st := f.Status()
	if st.State != StateActive || st.ConsecutiveFailures != 1 || st.Refused != int64(refused) {
		t.Fatalf("after the burst: %+v; want active with 1 consecutive failure and %d refused", st, refused)
	}
	for i := 0; i < 3; i++ {
		out, err := f.Run(ctx, []byte(tinySecret), Meta{Server: "b"})
		wantRedacted(t, "server b during server a's overrun", out, err)
	}
	release()
	waitOverrunsEnded(t, f)
	// A second episode counts again: now DisableAfter is reached.
	release = holdOverruns(t)
	if _, err := f.Run(ctx, heavy, Meta{Server: "a"}); !errors.Is(err, ErrFilterFailed) {
		t.Fatalf("second overrun: %v", err)
	}
	st = f.Status()
	if st.State != StateDisabled || !slices.Equal(st.DisabledFor, []string{"a"}) {
		t.Fatalf("after a second episode: %+v; want disabled for a only", st)
	}
	out, err := f.Run(ctx, []byte(tinySecret), Meta{Server: "b"})
	wantRedacted(t, "server b with the filter disabled for a", out, err)
	release()
}

// TestBuiltinOverrunPoolCap: abandoned calls of different servers leave
// the pool its size, up to twice its size of them; past that every call is
// refused (an OverrunError that names no server) until one ends.
func TestBuiltinOverrunPoolCap(t *testing.T) {
	h := newTestHost(t, &Options{PoolSize: 1, DisableAfter: -1})
	ctx := context.Background()
	f := mustLoad(t, h, Spec{Builtin: "redact", Timeout: overrunTimeout, TimeoutPerMiB: -1})
	release := holdOverruns(t)
	for _, srv := range []string{"a", "b"} {
		if _, err := f.Run(ctx, overrunResult(), Meta{Server: srv}); !errors.Is(err, ErrFilterFailed) {
			t.Fatalf("overrun on %s: %v", srv, err)
		}
	}
	_, err := f.Run(ctx, []byte(tinySecret), Meta{Server: "c"})
	var oe *OverrunError
	if !errors.As(err, &oe) || oe.PerServer || oe.Running != 2 {
		t.Fatalf("server c with two abandoned calls on a pool of one: %v, want a pool-wide OverrunError", err)
	}
	release()
	waitOverrunsEnded(t, f)
	out, err := f.Run(ctx, []byte(tinySecret), Meta{Server: "c"})
	wantRedacted(t, "server c after the calls ended", out, err)
}

// TestBuiltinOverrunCloseWaits: Host.Close waits for an abandoned call to
// end before closing the runtimes (its code and memory).
func TestBuiltinOverrunCloseWaits(t *testing.T) {
	h, err := NewHost(context.Background(), &Options{PoolSize: 1, CacheDir: sharedCacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	f := mustLoad(t, h, Spec{Builtin: "redact", Timeout: time.Millisecond, TimeoutPerMiB: -1})
	if _, err := f.Run(context.Background(), heavyResult(), Meta{}); !errors.Is(err, ErrFilterFailed) {
		t.Fatalf("Run = %v, want a timeout", err)
	}
	f.Close(context.Background()) // waits for the abandoned call: no close under it
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.pool.mu.Lock()
	overrun := f.pool.overrun
	f.pool.mu.Unlock()
	if overrun != 0 {
		t.Fatalf("Close returned with %d abandoned calls still running", overrun)
	}
}

// TestCheckedModulesStop: with CheckBuiltins, for a configured copy of a
// built-in's bytes and for redact with configured patterns, the guest is
// compiled with termination checks and an overrun is stopped, not
// abandoned.
func TestCheckedModulesStop(t *testing.T) {
	redact, _ := Builtin("redact")
	for _, c := range []struct {
		name string
		opts Options
		spec Spec
	}{
		{"CheckBuiltins", Options{CheckBuiltins: true}, Spec{Builtin: "redact"}},
		{"configured copy", Options{}, Spec{Name: "copy", Module: redact, Mode: ModeResultJSON}},
		// Patterns are matched in the guest with no host call in between:
		// unchecked, such a call could not be preempted (a GC would wait).
		{"redact with patterns", Options{}, Spec{Builtin: "redact", Config: json.RawMessage(`{"patterns":["(a+a+)+Q"]}`)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newTestHost(t, &c.opts)
			c.spec.Timeout, c.spec.TimeoutPerMiB = time.Millisecond, -1
			f := mustLoad(t, h, c.spec)
			if f.pool.cm.fast {
				t.Fatal("compiled without termination checks")
			}
			_, err := f.Run(context.Background(), heavyResult(), Meta{})
			var te *TimeoutError
			if !errors.As(err, &te) || te.Abandoned {
				t.Fatalf("Run = %v, want a TimeoutError for a stopped call", err)
			}
		})
	}
}
