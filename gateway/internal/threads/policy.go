package threads

import "time"

// Sample is what the process did between two readings.
type Sample struct {
	Wall time.Duration // time between the readings
	CPU  time.Duration // process CPU time (every thread) over Wall
	// Waiting is the time goroutines spent runnable, waiting for a P,
	// over Wall, all goroutines together (estimated from
	// /sched/latencies): Waiting/Wall is the mean number of goroutines
	// that could have run on one more P.
	Waiting time.Duration
}

// The thresholds Policy decides by.
const (
	// HotCPU: at the low thread count, a sample whose CPU time is at
	// least this share of Wall × threads is busy (the threads are nearly
	// saturated).
	HotCPU = 0.8
	// HotQueue, HotQueueCPU: a sample is busy too when on average at
	// least HotQueue goroutines waited for a P while the process used at
	// least HotQueueCPU of a core (goroutines queue for the threads).
	HotQueue    = 1.0
	HotQueueCPU = 0.2
	// HotSamples busy samples in a row raise the thread count.
	HotSamples = 3
	// ColdCPU, ColdQueue: at the high thread count, a sample under
	// ColdCPU of one core with fewer than ColdQueue goroutines waiting on
	// average is light; ColdSamples light samples in a row lower it (the
	// wait doubles after each flap, up to MaxColdSamples).
	ColdCPU        = 0.6
	ColdQueue      = 0.3
	ColdSamples    = 30
	MaxColdSamples = 600
	// FlapWindow: a raise this soon after a lowering is a flap.
	FlapWindow = 10 * time.Second
	// IdleCPU: at the low thread count, IdleSamples samples in a row
	// under this share of one core put the monitor to sleep.
	IdleCPU     = 0.02
	IdleSamples = 10
	// QuietSamples: at the low thread count, this many idle samples in a
	// row make the process quiet (see Quiet).
	QuietSamples = 2
)

// Policy decides the thread count from samples: Low until the process is
// busy for HotSamples samples, then High until it is light for the cold
// wait. The zero value is not usable; see NewPolicy.
type Policy struct {
	Low, High int

	cur       int
	hot, cold int
	idle      int
	coldNeed  int
	since     time.Duration // sample time since the last lowering (-1: none yet)
	changes   int
}

// NewPolicy starts at low.
func NewPolicy(low, high int) *Policy {
	return &Policy{Low: low, High: high, cur: low, coldNeed: ColdSamples, since: -1}
}

// Procs is the thread count Policy last decided.
func (p *Policy) Procs() int { return p.cur }

// Changes counts the thread-count changes so far.
func (p *Policy) Changes() int { return p.changes }

// Next takes one sample and returns the thread count to run with and
// whether the monitor may stop sampling until the process is active again
// (only at Low, after IdleSamples idle samples).
func (p *Policy) Next(s Sample) (procs int, sleep bool) {
	if s.Wall <= 0 {
		return p.cur, false
	}
	if p.since >= 0 {
		p.since += s.Wall
	}
	cores := float64(s.CPU) / float64(s.Wall)
	if p.cur == p.Low {
		if p.busy(s, cores) {
			p.hot++
		} else {
			p.hot = 0
		}
		if p.hot >= HotSamples {
			if p.since >= 0 && p.since < FlapWindow {
				p.coldNeed = min(2*p.coldNeed, MaxColdSamples)
			} else {
				p.coldNeed = ColdSamples
			}
			p.set(p.High)
			return p.cur, false
		}
		if cores < IdleCPU {
			p.idle++
		} else {
			p.idle = 0
		}
		return p.cur, p.idle >= IdleSamples
	}
	if cores < ColdCPU && float64(s.Waiting) < ColdQueue*float64(s.Wall) {
		p.cold++
	} else {
		p.cold = 0
	}
	if p.cold >= p.coldNeed {
		p.set(p.Low)
		p.since = 0
	}
	return p.cur, false
}

// Quiet reports whether the sample Next last took made the process
// quiet: the QuietSamples-th idle sample in a row at Low. It is true
// once per quiet spell.
func (p *Policy) Quiet() bool { return p.cur == p.Low && p.idle == QuietSamples }

// busy: the threads are nearly saturated, or goroutines queue for them
// while the process does real work.
func (p *Policy) busy(s Sample, cores float64) bool {
	if cores >= HotCPU*float64(p.cur) {
		return true
	}
	return float64(s.Waiting) >= HotQueue*float64(s.Wall) && cores >= HotQueueCPU
}

func (p *Policy) set(n int) {
	p.cur = n
	p.hot, p.cold, p.idle = 0, 0, 0
	p.changes++
}
