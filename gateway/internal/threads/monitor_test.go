package threads

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestArmWake: a garbage collection after armWake is what wakes a
// sleeping monitor.
func TestArmWake(t *testing.T) {
	wake := make(chan struct{}, 1)
	armWake(wake)
	deadline := time.Now().Add(30 * time.Second)
	for {
		runtime.GC()
		select {
		case <-wake:
			return
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no wake after garbage collections")
		}
	}
}

// TestStartStop: Start runs the process at one thread (when the default
// is more) and Stop ends the monitor; where there is no process CPU clock
// it refuses and changes nothing.
func TestStartStop(t *testing.T) {
	def := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(def)
	m, err := Start(Options{})
	if _, ok := processCPU(); !ok {
		if err != ErrNoProcessCPU || runtime.GOMAXPROCS(0) != def {
			t.Fatalf("without a CPU clock: err %v, GOMAXPROCS %d (was %d)", err, runtime.GOMAXPROCS(0), def)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if def > 1 && runtime.GOMAXPROCS(0) != 1 {
		t.Errorf("GOMAXPROCS = %d after Start, want 1", runtime.GOMAXPROCS(0))
	}
	m.Stop()
	m.Stop() // twice is fine
}

// TestTrim: with more than TrimBytes of the heap free, trim hands it
// back to the OS; with little free it does nothing.
func TestTrim(t *testing.T) {
	garbage := make([][]byte, 0, 64)
	for range 64 {
		garbage = append(garbage, make([]byte, 64<<10))
	}
	garbage = nil
	runtime.GC()
	_ = garbage
	released := func() uint64 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapIdle - ms.HeapReleased
	}
	if !trim() {
		t.Fatalf("trim did nothing with %d bytes free and resident", released())
	}
	if got := released(); got >= TrimBytes {
		t.Fatalf("%d bytes free and resident after trim, want under %d", got, TrimBytes)
	}
	if trim() {
		t.Fatal("trim ran again with nothing to hand back")
	}
}

// TestRuntimeSamplerSeesTheQueue: the process's own readings see its
// load. With four goroutines that never block on one thread, three wait
// for it at any moment, whether or not the machine gives the thread a
// core (the runtime counts that wait too), so the sample's mean queue is
// well over HotQueue however loaded the machine is; its CPU time is what
// the process used. (Whether that CPU share is enough to raise is the
// policy's, TestPolicyRaise.) The runtime records the wait of one
// scheduling in trackingPeriod, per goroutine: goroutines preempted only
// every 10 ms give a few dozen recorded waits in half a second, too few
// for a stable mean (a quiet machine measured 1.30), so the spinners
// yield often and the sample holds thousands.
func TestRuntimeSamplerSeesTheQueue(t *testing.T) {
	if _, ok := processCPU(); !ok {
		t.Skip("no process CPU clock on this platform: the monitor does not start")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var stop atomic.Bool
	var spin atomic.Int64
	var wg sync.WaitGroup
	defer func() { stop.Store(true); wg.Wait() }()
	r := newRuntimeSampler()
	start, _ := processCPU()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				for n := 0; n < 2000; n++ {
					spin.Add(1)
				}
				runtime.Gosched()
			}
		}()
	}
	// Enough work for the scheduler to have switched between them many
	// times (it preempts each after 10 ms), however long it takes.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if now, _ := processCPU(); now-start >= 500*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("four spinning goroutines used under half a second of CPU in two minutes") // hang guard only
		}
	}
	s, ok := r.next()
	if !ok || s.Wall <= 0 || s.CPU < 500*time.Millisecond {
		t.Fatalf("sample %+v (ok %v); want the half second of CPU used", s, ok)
	}
	q := float64(s.Waiting) / float64(s.Wall)
	t.Logf("%v of CPU over %v, mean queue %.2f", s.CPU, s.Wall, q)
	if q < 2*HotQueue {
		t.Errorf("mean queue %.2f with three goroutines always waiting for the one thread; want at least %v", q, 2*HotQueue)
	}
}
