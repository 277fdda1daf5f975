package threads

import (
	"math"
	"testing"
	"time"
)

const tick = 100 * time.Millisecond

// load is a synthetic sample: cores of CPU and queue goroutines waiting
// on average over one tick.
func load(cores, queue float64) Sample {
	return Sample{Wall: tick, CPU: time.Duration(cores * float64(tick)), Waiting: time.Duration(queue * float64(tick))}
}

// feed gives p n copies of s and returns the last decision.
func feed(p *Policy, s Sample, n int) (procs int, sleep bool) {
	for range n {
		procs, sleep = p.Next(s)
	}
	return procs, sleep
}

// TestPolicyRaise: one busy sample is not enough; HotSamples in a row, by
// CPU or by goroutines queueing while there is real work, raise to High.
func TestPolicyRaise(t *testing.T) {
	for _, c := range []struct {
		name string
		s    Sample
		want int
	}{
		{"cpu-bound", load(0.95, 0), 8},
		{"queueing", load(0.4, 3), 8},
		{"queue without work", load(0.05, 3), 1},
		{"light", load(0.5, 0.5), 1},
		{"idle", load(0, 0), 1},
	} {
		p := NewPolicy(1, 8)
		if got, _ := feed(p, c.s, HotSamples-1); got != 1 {
			t.Errorf("%s: raised after %d samples, want %d in a row", c.name, HotSamples-1, HotSamples)
		}
		if got, _ := p.Next(c.s); got != c.want {
			t.Errorf("%s: %d threads after %d samples, want %d", c.name, got, HotSamples, c.want)
		}
	}
	// Busy samples broken by a light one do not add up.
	p := NewPolicy(1, 8)
	for range 10 {
		feed(p, load(0.95, 0), HotSamples-1)
		if got, _ := p.Next(load(0.3, 0)); got != 1 {
			t.Fatalf("raised on busy samples that were not in a row")
		}
	}
	if p.Changes() != 0 {
		t.Errorf("changes = %d, want 0", p.Changes())
	}
}

// TestPolicyLower: at High only a sustained light spell lowers, and a
// busy or queueing sample starts the count again.
func TestPolicyLower(t *testing.T) {
	p := NewPolicy(1, 4)
	feed(p, load(1, 0), HotSamples)
	if p.Procs() != 4 {
		t.Fatalf("not raised")
	}
	// Load that needs the threads keeps them, however long.
	if got, _ := feed(p, load(1.5, 0), 10*ColdSamples); got != 4 {
		t.Fatalf("lowered under load")
	}
	if got, _ := feed(p, load(0.1, 1), 10*ColdSamples); got != 4 {
		t.Fatalf("lowered while goroutines queue")
	}
	feed(p, load(0.1, 0), ColdSamples-1)
	p.Next(load(0.6, 0))
	if got, _ := feed(p, load(0.1, 0), ColdSamples-1); got != 4 {
		t.Fatalf("lowered before %d light samples in a row", ColdSamples)
	}
	if got, sleep := p.Next(load(0.1, 0)); got != 1 || sleep {
		t.Fatalf("after %d light samples: %d threads (sleep %v), want 1 and awake", ColdSamples, got, sleep)
	}
	if p.Changes() != 2 {
		t.Errorf("changes = %d, want 2", p.Changes())
	}
}

// TestPolicyFlap: a raise soon after a lowering doubles the light spell
// the next lowering needs, up to MaxColdSamples; a raise long after one
// starts again from ColdSamples.
func TestPolicyFlap(t *testing.T) {
	p := NewPolicy(1, 2)
	need := ColdSamples
	for range 8 {
		feed(p, load(1, 0), HotSamples)
		if p.Procs() != 2 {
			t.Fatalf("not raised")
		}
		if got, _ := feed(p, load(0, 0), need-1); got != 2 {
			t.Fatalf("lowered after %d light samples, want %d", need-1, need)
		}
		if got, _ := p.Next(load(0, 0)); got != 1 {
			t.Fatalf("not lowered after %d light samples", need)
		}
		need = min(2*need, MaxColdSamples)
	}
	// Quiet for longer than FlapWindow at Low: the next cycle is back to
	// the short wait.
	feed(p, load(0.1, 0), int(FlapWindow/tick)+1)
	feed(p, load(1, 0), HotSamples)
	if got, _ := feed(p, load(0, 0), ColdSamples); got != 1 {
		t.Errorf("a raise long after the last lowering kept the long wait")
	}
}

// TestPolicySleep: only at Low, and only after IdleSamples idle samples in
// a row, may the monitor stop sampling.
func TestPolicySleep(t *testing.T) {
	p := NewPolicy(1, 2)
	if _, sleep := feed(p, load(0, 0), IdleSamples-1); sleep {
		t.Fatalf("sleeps after %d idle samples, want %d", IdleSamples-1, IdleSamples)
	}
	if _, sleep := p.Next(load(0, 0)); !sleep {
		t.Fatalf("awake after %d idle samples", IdleSamples)
	}
	if _, sleep := p.Next(load(0.1, 0)); sleep {
		t.Fatalf("sleeps through a sample with work")
	}
	feed(p, load(1, 0), HotSamples)
	if _, sleep := feed(p, load(0, 0), ColdSamples-1); sleep {
		t.Fatalf("sleeps at High")
	}
	// A sample of no length (a clock that did not move) changes nothing.
	if got, sleep := p.Next(Sample{}); got != 2 || sleep {
		t.Fatalf("empty sample: %d threads, sleep %v", got, sleep)
	}
}

// TestWaiting: the runnable time is read from the histogram's difference,
// each bucket at its middle, the open last one at its lower bound, scaled
// by the runtime's sampling period; mismatched readings give nothing.
func TestWaiting(t *testing.T) {
	buckets := []float64{-1, 0, 10e-6, 100e-6, 1e-3, math.Inf(1)}
	prev := []uint64{0, 5, 5, 5, 5}
	cur := []uint64{0, 5 + 10, 5 + 2, 5, 5 + 1}
	// 10 runs at 5 µs, 2 at 55 µs, 1 at 1 ms: 1.16 ms sampled, ×8.
	want := time.Duration((10*5e-6 + 2*55e-6 + 1e-3) * trackingPeriod * float64(time.Second))
	if got := waiting(prev, cur, buckets); got < want-time.Microsecond || got > want+time.Microsecond {
		t.Errorf("waiting = %v, want %v", got, want)
	}
	if got := waiting(prev[:4], cur, buckets); got != 0 {
		t.Errorf("mismatched readings: %v", got)
	}
}

// TestPolicyQuiet: Quiet is true once per quiet spell, at the
// QuietSamples-th idle sample in a row at the low count, and not at the
// high count.
func TestPolicyQuiet(t *testing.T) {
	p := NewPolicy(1, 2)
	idle := Sample{Wall: Interval, CPU: 0}
	active := Sample{Wall: Interval, CPU: Interval / 4}
	var quiet []int
	for i := range 3 * QuietSamples {
		p.Next(idle)
		if p.Quiet() {
			quiet = append(quiet, i)
		}
	}
	if len(quiet) != 1 || quiet[0] != QuietSamples-1 {
		t.Fatalf("quiet at samples %v, want only [%d]", quiet, QuietSamples-1)
	}
	p.Next(active)
	if p.Quiet() {
		t.Fatal("quiet after an active sample")
	}
	for range QuietSamples {
		p.Next(idle)
	}
	if !p.Quiet() {
		t.Fatal("not quiet again after a new quiet spell")
	}
	busy := Sample{Wall: Interval, CPU: Interval}
	for range HotSamples {
		p.Next(busy)
	}
	if p.Procs() != 2 {
		t.Fatalf("procs %d after busy samples, want 2", p.Procs())
	}
	for range QuietSamples + 1 {
		p.Next(idle)
		if p.Quiet() {
			t.Fatal("quiet at the high count")
		}
	}
}
