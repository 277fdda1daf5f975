package threads

import (
	"runtime"
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
