package gateway

import (
	"slices"
	"sync"
	"time"
)

// filterRuns is the number of recent run times kept per filter for its
// median (the dashboard's Filters page shows it).
const filterRuns = 128

// latencies keeps one filter's last filterRuns run times. The zero value is
// ready; it is safe for concurrent use.
type latencies struct {
	mu sync.Mutex
	d  [filterRuns]time.Duration
	n  int // runs recorded (the ring holds the last min(n, filterRuns))
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d[l.n%filterRuns] = d
	l.n++
	l.mu.Unlock()
}

// p50 is the median of the kept run times, 0 before any run.
func (l *latencies) p50() time.Duration {
	l.mu.Lock()
	k := min(l.n, filterRuns)
	d := slices.Clone(l.d[:k])
	l.mu.Unlock()
	if k == 0 {
		return 0
	}
	slices.Sort(d)
	return d[(k-1)/2]
}
