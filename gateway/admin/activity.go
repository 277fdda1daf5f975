package admin

// This file is the record of recent calls (the Activity page) and the
// per-server, per-minute series behind the Metrics page. Both are bounded:
// a ring of calls and, per server, one bucket per minute for an hour, each
// keeping at most maxBucketSamples durations for its percentiles.

import (
	"slices"
	"sort"
	"sync"
	"time"
)

// Activity bounds.
const (
	maxCalls         = 500 // calls kept for the Activity page
	metricMinutes    = 60  // the Metrics page's window
	maxBucketSamples = 256 // durations kept per server-minute (reservoir)
	maxMetricServers = 128 // servers tracked; more share the bucket "(other)"
)

// Call is one finished call as the Activity page lists it.
type Call struct {
	Time       time.Time     `json:"time"`
	Capability string        `json:"capability"`
	Server     string        `json:"server"`
	Outcome    string        `json:"outcome"` // ok, tool-error, refused, error
	Duration   time.Duration `json:"durationNs"`
	BytesIn    int           `json:"bytesIn"`
	BytesOut   int           `json:"bytesOut"`
	RequestID  string        `json:"requestId,omitempty"`
	Surface    string        `json:"surface,omitempty"` // agent, script, dashboard, cli
}

// Activity records calls. The zero value is not ready; use NewActivity.
// It is safe for concurrent use.
type Activity struct {
	mu      sync.Mutex
	now     func() time.Time
	ring    []Call
	next    int
	full    bool
	total   int64
	servers map[string]*series
}

type series struct {
	buckets [metricMinutes]bucket
}

type bucket struct {
	minute  int64 // unix minute this bucket holds
	calls   int
	errors  int
	samples []time.Duration
	seen    int // samples offered, for the reservoir
}

// NewActivity returns an empty record. now may be nil (time.Now).
func NewActivity(now func() time.Time) *Activity {
	if now == nil {
		now = time.Now
	}
	return &Activity{now: now, ring: make([]Call, maxCalls), servers: map[string]*series{}}
}

// Record adds one finished call.
func (a *Activity) Record(c Call) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if c.Time.IsZero() {
		c.Time = a.now()
	}
	a.ring[a.next] = c
	a.next = (a.next + 1) % len(a.ring)
	a.full = a.full || a.next == 0
	a.total++
	name := c.Server
	if _, ok := a.servers[name]; !ok && len(a.servers) >= maxMetricServers {
		name = "(other)"
	}
	s := a.servers[name]
	if s == nil {
		s = &series{}
		a.servers[name] = s
	}
	m := c.Time.Unix() / 60
	b := &s.buckets[m%metricMinutes]
	if b.minute != m {
		*b = bucket{minute: m}
	}
	b.calls++
	if c.Outcome != "ok" {
		b.errors++
	}
	b.seen++
	if len(b.samples) < maxBucketSamples {
		b.samples = append(b.samples, c.Duration)
	} else if j := int(uint64(c.Time.UnixNano()) % uint64(b.seen)); j < maxBucketSamples {
		// Reservoir sampling, with the call's time as a cheap source of
		// randomness: each duration is kept with probability k/seen.
		b.samples[j] = c.Duration
	}
}

// Recent returns up to n calls, newest first.
func (a *Activity) Recent(n int) []Call {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	count := a.next
	if a.full {
		count = len(a.ring)
	}
	if n <= 0 || n > count {
		n = count
	}
	out := make([]Call, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, a.ring[(a.next-i+len(a.ring))%len(a.ring)])
	}
	return out
}

// Total is the number of calls recorded since start.
func (a *Activity) Total() int64 {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.total
}

// Series is one server's last hour, one point per minute, oldest first.
type Series struct {
	Server  string    `json:"server"`
	Minutes []int64   `json:"minutes"` // unix seconds of each minute's start
	PerSec  []float64 `json:"callsPerSecond"`
	P50     []float64 `json:"p50Ms"` // milliseconds; 0 where the minute had no calls
	P99     []float64 `json:"p99Ms"`
	Errors  []int     `json:"errors"`
	Calls   int       `json:"calls"` // in the window
}

// Metrics returns every server's series over the last hour.
func (a *Activity) Metrics() []Series {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	nowMin := a.now().Unix() / 60
	var out []Series
	for name, s := range a.servers {
		se := Series{Server: name}
		for m := nowMin - metricMinutes + 1; m <= nowMin; m++ {
			b := s.buckets[((m%metricMinutes)+metricMinutes)%metricMinutes]
			se.Minutes = append(se.Minutes, m*60)
			if b.minute != m || b.calls == 0 {
				se.PerSec = append(se.PerSec, 0)
				se.P50 = append(se.P50, 0)
				se.P99 = append(se.P99, 0)
				se.Errors = append(se.Errors, 0)
				continue
			}
			d := slices.Clone(b.samples)
			sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
			se.PerSec = append(se.PerSec, float64(b.calls)/60)
			se.P50 = append(se.P50, ms(percentile(d, 50)))
			se.P99 = append(se.P99, ms(percentile(d, 99)))
			se.Errors = append(se.Errors, b.errors)
			se.Calls += b.calls
		}
		if se.Calls > 0 {
			out = append(out, se)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Server < out[j].Server })
	return out
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	return sorted[max(rank, 1)-1]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
