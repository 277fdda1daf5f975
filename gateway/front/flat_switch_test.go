package front

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAutoModeSwitchIsWholeToTools: a tools/list that arrives while
// ModeAuto switches its surface (in either direction) answers the whole
// surface before or after the switch, never a mix (gateway tools beside
// flat ones, or the flat ones without their read_result). The hook runs
// in the middle of every switch, after the leaving registrations are
// gone and before the coming ones are in, and lists from there.
func TestAutoModeSwitchIsWholeToTools(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		t.Run(fmt.Sprintf("version=%q", version), func(t *testing.T) {
			b := newFake()
			b.features = Features{ReadResult: true, Execute: true, Expose: true}
			budget := itemBytes(autoItems(1)) * 10 // 10 tools fit
			b.setItems(KindTools, autoItems(5)...)
			var switches atomic.Int32
			s := connect(t, b, &Options{Mode: ModeAuto, AutoFlatBytes: budget, OnMode: func(Mode) { switches.Add(1) }}, nil, version)
			flat := []string{"sluice__read_result"}
			for i := range 5 {
				flat = append(flat, fmt.Sprintf("fs__t%d", i))
			}
			flat = sorted(flat)
			gateway := sorted(append(slices.Clone(gatewayNames), "fs__t0"))

			var mu sync.Mutex
			var mid [][]string
			var failed []error
			var lists sync.WaitGroup
			s.f.switching.midSwitch = func() {
				// A list sent now either finishes (nothing holds it: it
				// sees the half-made surface) or waits for the switch.
				waitsBefore := s.f.switching.waiters.Load()
				done := make(chan struct{})
				lists.Add(1)
				go func() {
					defer lists.Done()
					defer close(done)
					res, err := s.cs.ListTools(context.Background(), nil)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						failed = append(failed, err)
						return
					}
					var names []string
					for _, tl := range res.Tools {
						names = append(names, tl.Name)
					}
					mid = append(mid, sorted(names))
				}()
				for {
					select {
					case <-done:
						return
					default:
					}
					if s.f.switching.waiters.Load() > waitsBefore {
						return
					}
					time.Sleep(time.Millisecond)
				}
			}
			for round := range 3 {
				for i, step := range []struct {
					n    int
					want []string
				}{{11, gateway}, {5, flat}} {
					b.setItems(KindTools, autoItems(step.n)...)
					b.emit(Event{Kind: EventToolsChanged})
					n := int32(1 + 2*round + i + 1) // OnMode at start, then once per switch
					waitFor(t, fmt.Sprintf("round %d: switch to %d tools", round, step.n), func() bool { return switches.Load() >= n })
				}
			}
			lists.Wait()
			s.f.switching.midSwitch = nil
			if len(failed) > 0 {
				t.Fatalf("a list during a switch failed: %v", failed)
			}
			if len(mid) != 6 {
				t.Fatalf("%d lists during 6 switches", len(mid))
			}
			for i, names := range mid {
				if !slices.Equal(names, flat) && !slices.Equal(names, gateway) {
					t.Fatalf("list %d during a switch saw a mix: %v\n(flat %v, gateway %v)", i, names, flat, gateway)
				}
			}
			if got := sorted(s.toolNames(t)); !slices.Equal(got, flat) {
				t.Fatalf("after the last switch: %v, want %v", got, flat)
			}
		})
	}
}
