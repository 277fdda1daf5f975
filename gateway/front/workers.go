package front

import (
	"sync"
	"time"
)

// workers runs the stdio fast path's calls on goroutines that are kept
// for a while after a call: a fresh goroutine per call grew its stack
// through the whole call path (gateway, client, filters) every time, about
// 5 % of the serve process's CPU under load. A worker that ran no call
// for a whole workerIdle period ends, so a burst leaves nothing behind for
// long, and close ends every idle one at once (the connection is over).
//
// # Why the idle timer is not reset per call
//
// Resetting a worker's timer after every call moved it in the runtime's
// timer heap under the heap's lock, per call, and left the scheduler a
// modified timer to sort out at its next check. The timer instead runs
// through whole periods: when it fires, a worker that ran a call during
// the period arms it for the next one; one that ran none ends. An idle
// worker so ends between one and two periods after its last call.
type workers struct {
	ch   chan func() // unbuffered: a send succeeds only when a worker waits
	stop chan struct{}
	once sync.Once
	idle time.Duration // workerIdle; shorter in tests
	// tick, when set (tests), ends each period in place of a timer of
	// idle, so a test decides when a period is over
	tick <-chan time.Time
}

// workerIdle is the period after which a worker that ran no call ends.
const workerIdle = 5 * time.Second

func newWorkers() *workers {
	return &workers{ch: make(chan func()), stop: make(chan struct{}), idle: workerIdle}
}

// close ends the idle workers; a worker running a call ends after it.
func (w *workers) close() { w.once.Do(func() { close(w.stop) }) }

// run runs fn on an idle worker, or on a new one when none waits.
func (w *workers) run(fn func()) {
	select {
	case w.ch <- fn:
	default:
		go w.loop(fn)
	}
}

func (w *workers) loop(fn func()) {
	period := w.tick
	var t *time.Timer
	if period == nil {
		t = time.NewTimer(w.idle)
		defer t.Stop()
		period = t.C
	}
	busy := false // a call ran in the timer's current period
	for {
		if fn != nil {
			fn()
			fn = nil
			busy = true
		}
		select {
		case fn = <-w.ch:
		case <-period:
			if !busy {
				return
			}
			busy = false
			if t != nil {
				t.Reset(w.idle)
			}
		case <-w.stop:
			return
		}
	}
}
