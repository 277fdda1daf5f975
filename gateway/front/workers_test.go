package front

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// goid is the running goroutine's number.
func goid() uint64 {
	var buf [64]byte
	b := bytes.TrimPrefix(buf[:runtime.Stack(buf[:], false)], []byte("goroutine "))
	n, _ := strconv.ParseUint(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return n
}

// goroutineLives reports whether goroutine id is still running.
func goroutineLives(id uint64) bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Contains(buf[:n], fmt.Appendf(nil, "goroutine %d [", id))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// runOn runs fn on w and returns the worker goroutine that ran it.
func runOn(w *workers, fn func()) uint64 {
	got := make(chan uint64, 1)
	w.run(func() { fn(); got <- goid() })
	return <-got
}

// A worker whose calls span its idle period is kept for the next call: the
// period in which a call ran arms the next one. The test ends the periods
// itself, so no wall-clock window decides it.
func TestWorkerKeptAfterACallLongerThanItsPeriod(t *testing.T) {
	tick := make(chan time.Time)
	w := newWorkers()
	w.idle, w.tick = time.Hour, tick
	defer w.close()
	release, ticked := make(chan struct{}), make(chan struct{})
	got := make(chan uint64, 1)
	w.run(func() {
		go func() { tick <- time.Now(); close(ticked) }() // the period ends during the call
		<-release
		got <- goid()
	})
	close(release)
	first := <-got
	<-ticked // the worker took the period's end after its call: it is kept
	// Handed straight to a waiting worker (run would start a new one when
	// none waits yet): only the first one can take it.
	select {
	case w.ch <- func() { got <- goid() }:
	case <-time.After(30 * time.Second):
		t.Fatal("no worker waits for a call after a long one: the worker ended though it ran a call in its period")
	}
	if second := <-got; second != first {
		t.Fatalf("the call after a long one ran on goroutine %d, not the worker %d", second, first)
	}
	// A period with a call keeps it; the next one, with none, ends it.
	tick <- time.Now()
	tick <- time.Now()
	deadline := time.Now().Add(30 * time.Second)
	for goroutineLives(first) {
		if time.Now().After(deadline) {
			t.Fatalf("worker goroutine %d still runs after a whole period without a call", first)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Sequential calls reuse one worker, and a worker that runs no call for a
// whole period ends.
func TestIdleWorkerEnds(t *testing.T) {
	w := newWorkers()
	w.idle = 20 * time.Millisecond
	defer w.close()
	id := runOn(w, func() {})
	for range 3 {
		if again := runOn(w, func() {}); again != id {
			// The machine may have stalled for a whole period between two
			// calls; the new worker is the one to watch.
			id = again
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for goroutineLives(id) {
		if time.Now().After(deadline) {
			t.Fatalf("worker goroutine %d still runs 30 s after its last call (idle period %v)", id, w.idle)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// close ends an idle worker at once, whatever its period.
func TestCloseEndsIdleWorker(t *testing.T) {
	w := newWorkers()
	w.idle = time.Hour
	id := runOn(w, func() {})
	w.close()
	deadline := time.Now().Add(30 * time.Second)
	for goroutineLives(id) {
		if time.Now().After(deadline) {
			t.Fatalf("worker goroutine %d still runs 30 s after close", id)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
