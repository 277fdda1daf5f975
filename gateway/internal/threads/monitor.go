package threads

import (
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// Interval is how often the Monitor samples while the process is active.
const Interval = 100 * time.Millisecond

// Options configures Start. The zero value is usable.
type Options struct {
	// Logger gets one debug line per change ("threads raised", "threads
	// lowered", with gomaxprocs and the count of changes so far) and one
	// when the monitor starts; nil: no log.
	Logger *slog.Logger
}

// Monitor runs the process at one thread and adapts it; see the package
// comment. Stop it with Stop.
type Monitor struct {
	log    *slog.Logger
	policy *Policy
	done   chan struct{}
	wake   chan struct{}
	exited chan struct{}
	once   sync.Once

	mu      sync.Mutex
	changes int
}

const latencies = "/sched/latencies:seconds"

// Start sets GOMAXPROCS to one and starts the monitor, which raises it to
// the runtime's default (runtime.SetDefaultGOMAXPROCS: the GOMAXPROCS
// environment variable does not count) when the process is busy. It
// returns ErrNoProcessCPU, having changed nothing, where the process CPU
// time cannot be read; with a default of one thread there is nothing to
// adapt and it returns a stopped Monitor (at that one thread).
func Start(o Options) (*Monitor, error) {
	if _, ok := processCPU(); !ok {
		return nil, ErrNoProcessCPU
	}
	m := &Monitor{log: o.Logger, done: make(chan struct{}), wake: make(chan struct{}, 1), exited: make(chan struct{})}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	// The runtime's default (the CPUs this process may use, a
	// container's limit included), whatever GOMAXPROCS says.
	runtime.SetDefaultGOMAXPROCS()
	high := runtime.GOMAXPROCS(0)
	if high <= 1 {
		close(m.exited)
		return m, nil
	}
	runtime.GOMAXPROCS(1)
	m.policy = NewPolicy(1, high)
	m.log.Debug("threads adapt to the load", "gomaxprocs", 1, "max", high)
	go m.run()
	return m, nil
}

// Stop ends the monitor and waits for it; the thread count stays as it is.
func (m *Monitor) Stop() {
	m.once.Do(func() { close(m.done) })
	<-m.exited
}

// Changes counts the thread-count changes the monitor made.
func (m *Monitor) Changes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changes
}

// sampler takes the samples Policy decides by.
type sampler interface {
	// next is what the process did since the last sample (or rebase);
	// false: no sample this time.
	next() (Sample, bool)
	// rebase starts the next sample now: what came before is no sample's.
	rebase()
}

// testSampler, when set (by a test build, see testhook_sluicetest.go),
// stands for the process's own readings in every Monitor started after.
var testSampler func() sampler

// reading is one point the samples are differences of.
type reading struct {
	at   time.Time
	cpu  time.Duration
	hist []uint64 // /sched/latencies counts
}

// runtimeSampler samples the process: its CPU time from the kernel, the
// time its goroutines waited for a P from the runtime.
type runtimeSampler struct {
	ms        []metrics.Sample
	buckets   []float64
	prev, cur reading
}

func newRuntimeSampler() *runtimeSampler {
	r := &runtimeSampler{ms: []metrics.Sample{{Name: latencies}}}
	r.rebase()
	return r
}

func (r *runtimeSampler) read(into *reading) {
	into.at = time.Now()
	into.cpu, _ = processCPU()
	metrics.Read(r.ms)
	if r.ms[0].Value.Kind() != metrics.KindFloat64Histogram {
		into.hist = into.hist[:0]
		return
	}
	h := r.ms[0].Value.Float64Histogram()
	r.buckets = h.Buckets
	into.hist = append(into.hist[:0], h.Counts...)
}

func (r *runtimeSampler) rebase() { r.read(&r.prev) }

func (r *runtimeSampler) next() (Sample, bool) {
	r.read(&r.cur)
	s := Sample{Wall: r.cur.at.Sub(r.prev.at), CPU: r.cur.cpu - r.prev.cpu}
	s.Waiting = waiting(r.prev.hist, r.cur.hist, r.buckets)
	r.prev, r.cur = r.cur, r.prev
	return s, true
}

func (m *Monitor) run() {
	defer close(m.exited)
	var smp sampler
	if testSampler != nil {
		smp = testSampler()
	} else {
		smp = newRuntimeSampler()
	}
	gcOff := os.Getenv("GOGC") == "off"
	t := time.NewTimer(Interval)
	defer t.Stop()
	for {
		select {
		case <-m.done:
			return
		case <-t.C:
		}
		s, ok := smp.next()
		if !ok {
			t.Reset(Interval)
			continue
		}
		was := m.policy.Procs()
		procs, sleep := m.policy.Next(s)
		if procs != was {
			m.apply(procs, s)
		}
		if m.policy.Quiet() && !gcOff && trim() {
			smp.rebase() // the trim's own CPU is no sample's
		}
		if sleep && !gcOff {
			armWake(m.wake)
			select {
			case <-m.done:
				return
			case <-m.wake:
			}
			smp.rebase()
		}
		t.Reset(Interval)
	}
}

// TrimBytes: a quiet process hands its heap's free pages back to the OS
// when at least this much of it is free and resident.
const TrimBytes = 1 << 20

const heapFree = "/memory/classes/heap/free:bytes"

// trim returns the heap's free pages to the OS (a collection, then a
// scavenge of every free page) when at least TrimBytes are free, and
// reports whether it did.
func trim() bool {
	ms := []metrics.Sample{{Name: heapFree}}
	metrics.Read(ms)
	if ms[0].Value.Kind() != metrics.KindUint64 || ms[0].Value.Uint64() < TrimBytes {
		return false
	}
	debug.FreeOSMemory()
	return true
}

// apply sets the thread count Policy decided.
func (m *Monitor) apply(procs int, s Sample) {
	msg := "threads lowered"
	if procs > 1 {
		msg = "threads raised"
		runtime.SetDefaultGOMAXPROCS()
		procs = runtime.GOMAXPROCS(0)
	} else {
		runtime.GOMAXPROCS(procs)
	}
	m.mu.Lock()
	m.changes++
	n := m.changes
	m.mu.Unlock()
	m.log.Debug(msg, "gomaxprocs", procs, "changes", n,
		"cpu_cores", round2(float64(s.CPU)/float64(s.Wall)), "queue", round2(float64(s.Waiting)/float64(s.Wall)))
}

// trackingPeriod: the runtime records the runnable wait of one goroutine
// run in this many (runtime2.go, gTrackingPeriod), so the histogram's sum
// is scaled by it.
const trackingPeriod = 8

// waiting estimates, from two readings of /sched/latencies, the total time
// goroutines spent runnable before they ran (each bucket counted at its
// middle; the open last one at its lower bound).
func waiting(prev, cur []uint64, buckets []float64) time.Duration {
	if len(prev) != len(cur) || len(buckets) != len(cur)+1 {
		return 0
	}
	var sum float64
	for i := range cur {
		d := cur[i] - prev[i]
		if d == 0 {
			continue
		}
		lo, hi := max(buckets[i], 0), buckets[i+1]
		if math.IsInf(hi, 1) {
			hi = lo
		}
		sum += float64(d) * (lo + hi) / 2
	}
	return time.Duration(sum * trackingPeriod * float64(time.Second))
}

// sentinel is left for the collector; its cleanup wakes the monitor. It
// holds a pointer so that it is never batched with other small objects
// (the tiny allocator's blocks are freed as one, late).
type sentinel struct {
	_ *int
	_ [2]uint64
}

// armWake makes the next garbage collection send on wake.
func armWake(wake chan struct{}) {
	runtime.AddCleanup(&sentinel{}, func(w chan struct{}) {
		select {
		case w <- struct{}{}:
		default:
		}
	}, wake)
}

func round2(f float64) float64 { return math.Round(100*f) / 100 }
