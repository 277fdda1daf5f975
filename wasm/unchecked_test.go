package wasm

import (
	"context"
	"errors"
	"testing"
	"time"
)

// heavyResult is a result the built-in redactor needs well over a
// millisecond for: 1 MiB with a secret on every line.
func heavyResult() []byte { return secretResultEvery(1<<20, 1) }

// TestBuiltinOverrunAbandoned: a built-in (compiled without termination
// checks) that overruns its deadline is answered at the deadline with a
// TimeoutError marked Abandoned; its instance leaves the pool, calls that
// find every slot taken by running abandoned calls fail fast with
// OverrunError, and the pool serves again once the call has ended.
func TestBuiltinOverrunAbandoned(t *testing.T) {
	// Never disabled: the OverrunErrors below count as failures.
	h := newTestHost(t, &Options{PoolSize: 1, DisableAfter: -1})
	ctx := context.Background()
	short := mustLoad(t, h, Spec{Builtin: "redact", Timeout: time.Millisecond, TimeoutPerMiB: -1})
	roomy := mustLoad(t, h, Spec{Builtin: "redact"}) // same pool, the test's generous deadline
	if !short.pool.cm.fast {
		t.Fatal("the built-in was compiled with termination checks")
	}
	_, err := short.Run(ctx, heavyResult(), Meta{})
	var te *TimeoutError
	if !errors.As(err, &te) || !te.Abandoned || !errors.Is(err, ErrFilterFailed) {
		t.Fatalf("Run = %v, want an abandoned TimeoutError", err)
	}
	tiny := []byte(`{"content":[{"type":"text","text":"key AKIAIOSFODNN7EXAMPLE"}]}`)
	sawOverrun := false
	for start := time.Now(); ; {
		out, err := roomy.Run(ctx, tiny, Meta{})
		if err == nil {
			if out.Status != StatusReplaced || string(out.Data) != `{"content":[{"type":"text","text":"key [REDACTED:aws-access-key-id]"}]}` {
				t.Fatalf("after the overrun: %v %s", out.Status, out.Data)
			}
			break
		}
		var oe *OverrunError
		if !errors.As(err, &oe) || oe.Running != 1 || !errors.Is(err, ErrFilterFailed) {
			t.Fatalf("while the abandoned call runs: %v, want an OverrunError", err)
		}
		sawOverrun = true
		if time.Since(start) > time.Minute {
			t.Fatal("the abandoned call never ended")
		}
		time.Sleep(5 * time.Millisecond)
	}
	short.pool.mu.Lock()
	overrun, live := short.pool.overrun, len(short.pool.live)
	short.pool.mu.Unlock()
	if overrun != 0 || live != 1 {
		t.Fatalf("after the abandoned call ended: overrun %d, live instances %d; want 0 and 1", overrun, live)
	}
	t.Logf("a call found the pool taken by the running abandoned call: %v", sawOverrun)
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

// TestCheckedModulesStop: with CheckBuiltins, and for a configured copy of
// a built-in's bytes, the guest is compiled with termination checks and an
// overrun is stopped, not abandoned.
func TestCheckedModulesStop(t *testing.T) {
	redact, _ := Builtin("redact")
	for _, c := range []struct {
		name string
		opts Options
		spec Spec
	}{
		{"CheckBuiltins", Options{CheckBuiltins: true}, Spec{Builtin: "redact"}},
		{"configured copy", Options{}, Spec{Name: "copy", Module: redact, Mode: ModeResultJSON}},
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
