package wasm

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestRenewOffTheCallPath: an instance at MaxCallsPerInstance is replaced
// by one made in the background; no call after the first instantiates,
// the pool never holds more than one instance beyond its size, every
// output is right, and closing the filter closes the spare too.
func TestRenewOffTheCallPath(t *testing.T) {
	const limit = 20
	h := newTestHost(t, &Options{MaxCallsPerInstance: limit, PoolSize: 1, Timeout: 10 * time.Second})
	f := mustLoad(t, h, Spec{Name: "upper", Module: testGuest(t, "upper")})
	ctx := context.Background()
	p := f.pool
	seen := map[*instance]bool{}
	for i := range 10 * limit {
		in := fmt.Sprintf("call %d", i)
		out, err := f.Run(ctx, []byte(in), Meta{})
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("CALL %d", i); string(out.Data) != want {
			t.Fatalf("call %d: %q, want %q", i, out.Data, want)
		}
		out.Release()
		// Let a replacement being made get ready before the limit, as it
		// does when calls are not back to back (the guard only bounds a
		// hang).
		for deadline := time.Now().Add(20 * time.Second); ; {
			p.mu.Lock()
			preparing, live := p.preparing, len(p.live)
			for in := range p.live {
				seen[in] = true
			}
			p.mu.Unlock()
			if live > p.size()+1 {
				t.Fatalf("call %d: %d live instances in a pool of %d", i, live, p.size())
			}
			if !preparing {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the replacement instance was never made")
			}
			time.Sleep(time.Millisecond)
		}
	}
	if n := p.coldStarts.Load(); n != 0 {
		t.Fatalf("%d instances made on a call's path, want none (Load warmed the first)", n)
	}
	if len(seen) < 9 {
		t.Fatalf("%d instances served %d calls with a limit of %d", len(seen), 10*limit, limit)
	}
	f.Close(ctx)
	for in := range seen {
		if !in.mod.IsClosed() {
			t.Fatalf("an instance (%d calls) is still open after Close", in.calls)
		}
	}
}
