package wasm

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// worker runs the calls of one instance compiled without termination checks
// (a built-in) on a goroutine of its own, started on the instance's first
// call and living as long as the instance. A call is a hand-over on a
// channel: a goroutine per call paid for its creation and, every time, for
// growing its stack through wazero's call path (about a tenth of a pooled
// shape call on 64 KiB).
//
// The caller waits for the call or for its deadline (a timer kept with the
// instance) or for its context, whichever comes first; see Filter.run for
// what abandoning a call means. The guest runs with a context made once per
// instance that carries the call state: without termination checks wazero
// never looks at its deadline, so none is built per call.
type worker struct {
	start   chan struct{} // one per call; closed when the instance goes
	done    chan error    // the finished call's error (buffered)
	ctx     context.Context
	timer   *time.Timer
	stopped bool // start is closed (guarded by the pool's mu)

	claim   sync.Mutex // whoever takes it first decides: the caller, or the call that ended
	claimed bool
	onEnd   func() // set with claimed by a caller that abandons the call: run when it ends
}

// abandonedEnded, when set (by tests), is called by a worker whose
// abandoned call has returned, before the instance is closed and the
// call's server is let through again: it holds an overrun episode open.
var abandonedEnded atomic.Pointer[func()]

// startWorker starts in's goroutine if it has none yet.
func (p *pool) startWorker(in *instance) {
	if in.w != nil {
		return
	}
	w := &worker{
		start: make(chan struct{}, 1),
		done:  make(chan error, 1),
		ctx:   context.WithValue(context.Background(), stateKey{}, &in.state),
		timer: time.NewTimer(time.Hour),
	}
	w.timer.Stop()
	in.w = w
	go p.serve(in, w)
}

// serve is an instance's worker goroutine.
func (p *pool) serve(in *instance, w *worker) {
	for range w.start {
		err := in.filter.CallWithStack(w.ctx, in.stack)
		w.claim.Lock()
		abandoned, onEnd := w.claimed, w.onEnd
		w.claimed = true
		w.claim.Unlock()
		if abandoned {
			if hook := abandonedEnded.Load(); hook != nil {
				(*hook)()
			}
			p.ended(in)
			if onEnd != nil {
				onEnd()
			}
			p.h.inflight.Done()
			return
		}
		w.done <- err
		p.h.inflight.Done()
	}
}

// stopWorker ends in's goroutine (once it is idle). Called with p.mu held.
func (in *instance) stopWorkerLocked() {
	if in.w != nil && !in.w.stopped {
		in.w.stopped = true
		close(in.w.start)
	}
}
