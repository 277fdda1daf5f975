package gateway

import (
	"testing"
	"time"
)

func TestLatenciesMedian(t *testing.T) {
	var l latencies
	if l.p50() != 0 {
		t.Fatal("a median before any run")
	}
	for _, ms := range []int{5, 1, 3} {
		l.add(time.Duration(ms) * time.Millisecond)
	}
	if got := l.p50(); got != 3*time.Millisecond {
		t.Fatalf("p50 of 5,1,3 ms = %v", got)
	}
	// Only the last filterRuns count: fill the ring with 100 ms runs.
	for range filterRuns {
		l.add(100 * time.Millisecond)
	}
	if got := l.p50(); got != 100*time.Millisecond {
		t.Fatalf("p50 after the ring turned = %v", got)
	}
}
