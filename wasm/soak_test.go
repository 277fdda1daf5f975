package wasm

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestSoakMemoryFlat runs many calls through one pooled instance of the Go
// shape guest and checks that its linear memory stops growing after warm-up
// (the Go reactor heap leak the SDK's runtime.Gosched defends against).
// 100,000 calls by default; 20,000 under -race; SLUICE_WASM_SOAK_CALLS
// overrides; skipped with -short.
//
// Warm-up is 10,000 calls: a Go guest's heap grows until its first GC cycles
// (the Go runtime's minimum heap goal is 4 MiB, ~8,000 calls of this filter's
// garbage), then stays flat; without the SDK's yield it keeps growing.
func TestSoakMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("soak skipped in -short mode")
	}
	calls := 100000
	if raceEnabled {
		calls = 20000
	}
	if v := os.Getenv("SLUICE_WASM_SOAK_CALLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 15000 {
			t.Fatalf("SLUICE_WASM_SOAK_CALLS=%q: want an integer >= 15000", v)
		}
		calls = n
	}
	h := newTestHost(t, &Options{Offload: nopHostOffload, PoolSize: 1, MaxCallsPerInstance: 1 << 30, Timeout: 10 * time.Second, DisableAfter: -1})
	f := mustLoad(t, h, Spec{Builtin: "shape", Config: json.RawMessage(`{"budgetBytes":1024}`)})
	in := proseResult(3000) // shaped on every call: allocation on every call
	ctx := context.Background()
	const warmup = 10000
	var warm, peak uint32
	start := time.Now()
	for i := 1; i <= calls; i++ {
		out, err := f.Run(ctx, in, Meta{Tool: "soak"})
		if err != nil || out.Status != StatusReplaced {
			t.Fatalf("call %d: %v %v", i, out.Status, err)
		}
		if i%500 == 0 {
			inst := <-f.pool.idle
			p := pages(inst.mod)
			if inst.calls != i {
				t.Fatalf("instance was recycled at call %d", inst.calls)
			}
			f.pool.idle <- inst
			if i == warmup {
				warm = p
			}
			if p > peak && i > warmup {
				t.Logf("call %d: %d pages", i, p)
			}
			peak = max(peak, p)
		}
	}
	t.Logf("%d calls in %v (%v/call); linear memory %d pages after %d calls, peak %d pages",
		calls, time.Since(start).Round(time.Millisecond), time.Since(start)/time.Duration(calls), warm, warmup, peak)
	if peak > warm {
		t.Fatalf("guest memory grew after warm-up: %d -> %d pages", warm, peak)
	}
}
