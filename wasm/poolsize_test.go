package wasm

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// liveInstances counts f's pool's instances (idle or in a call).
func liveInstances(f *Filter) int {
	f.pool.mu.Lock()
	defer f.pool.mu.Unlock()
	return len(f.pool.live)
}

// waitLive polls until f's pool has n instances; the deadline is only a
// hang guard.
func waitLive(t *testing.T, f *Filter, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for liveInstances(f) != n {
		if time.Now().After(deadline) {
			t.Fatalf("pool has %d instances after 30s, want %d", liveInstances(f), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPoolShrinksWhenIdle: a pool holds what its use needs: one instance
// after Load (the config check), none once nothing called it for
// PoolIdleTimeout, and one again on the next call.
func TestPoolShrinksWhenIdle(t *testing.T) {
	h := newTestHost(t, &Options{PoolSize: 2, PoolIdleTimeout: 20 * time.Millisecond})
	f := mustLoad(t, h, Spec{Name: "upper", Module: testGuest(t, "upper")})
	ctx := context.Background()
	if n := liveInstances(f); n != 1 {
		t.Fatalf("after Load: %d instances, want the one warmed by the config check", n)
	}
	// The warmed instance ages like any other.
	waitLive(t, f, 0)
	for round := 0; round < 2; round++ {
		out, err := f.Run(ctx, []byte("abc"), Meta{})
		if err != nil || string(out.Data) != "ABC" {
			t.Fatalf("round %d: Run = %q, %v", round, out.Data, err)
		}
		waitLive(t, f, 0)
		if f.pool.size() != 2 {
			t.Fatalf("pool capacity %d after shrinking, want 2", f.pool.size())
		}
	}
	// Grows again on demand, up to PoolSize.
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if out, err := f.Run(ctx, []byte("x"), Meta{}); err != nil || string(out.Data) != "X" {
					t.Errorf("Run = %q, %v", out.Data, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := liveInstances(f); n > 2 {
		t.Fatalf("pool grew to %d instances, cap 2", n)
	}
	waitLive(t, f, 0)
	if s := f.Status(); s.Failures != 0 || s.State != StateActive {
		t.Fatalf("status after shrinking: %+v", s)
	}
}

// TestPoolReapRacesCalls: instances are reaped while calls take and return
// others (run under -race); every call still gets a correct answer and no
// instance is closed under a call.
func TestPoolReapRacesCalls(t *testing.T) {
	h := newTestHost(t, &Options{PoolSize: 3, PoolIdleTimeout: time.Millisecond})
	f := mustLoad(t, h, Spec{Name: "upper", Module: testGuest(t, "upper")})
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 60; i++ {
				in := strings.Repeat(string(rune('a'+g)), i+1)
				out, err := f.Run(ctx, []byte(in), Meta{})
				if err != nil || string(out.Data) != strings.ToUpper(in) {
					t.Errorf("Run(%q) = %q, %v", in, out.Data, err)
					return
				}
				if i%7 == 0 {
					time.Sleep(2 * time.Millisecond) // let the reaper find idle instances
				}
			}
		}(g)
	}
	wg.Wait()
	waitLive(t, f, 0)
	if s := f.Status(); s.Failures != 0 {
		t.Fatalf("failures: %+v", s)
	}
}

// TestPoolIdleTimeoutNegativeKeeps: a negative PoolIdleTimeout arms no
// reaper; instances stay until recycled or closed.
func TestPoolIdleTimeoutNegativeKeeps(t *testing.T) {
	h := newTestHost(t, &Options{PoolIdleTimeout: -1})
	f := mustLoad(t, h, Spec{Name: "upper", Module: testGuest(t, "upper")})
	if _, err := f.Run(context.Background(), []byte("a"), Meta{}); err != nil {
		t.Fatal(err)
	}
	f.pool.mu.Lock()
	armed := f.pool.reaping || f.pool.reaper != nil
	f.pool.mu.Unlock()
	if armed || liveInstances(f) != 1 {
		t.Fatalf("reaper armed %v, %d instances; want none armed and the instance kept", armed, liveInstances(f))
	}
}
