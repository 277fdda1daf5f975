package front

import (
	"sync"
	"time"
)

// workers runs the stdio fast path's calls on goroutines that are kept
// for a while after a call: a fresh goroutine per call grew its stack
// through the whole call path (gateway, client, filters) every time, about
// 5 % of the serve process's CPU under load. A worker idle for
// workerIdle ends, so a burst leaves nothing behind for long, and close
// ends every idle one at once (the connection is over).
type workers struct {
	ch   chan func() // unbuffered: a send succeeds only when a worker waits
	stop chan struct{}
	once sync.Once
}

// workerIdle is how long a worker waits for the next call before it ends.
const workerIdle = 5 * time.Second

func newWorkers() *workers { return &workers{ch: make(chan func()), stop: make(chan struct{})} }

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
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		fn()
		fn = nil
		t.Reset(workerIdle)
		select {
		case fn = <-w.ch:
		case <-t.C:
			return
		case <-w.stop:
			return
		}
	}
}
