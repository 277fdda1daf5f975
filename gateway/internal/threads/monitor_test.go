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
