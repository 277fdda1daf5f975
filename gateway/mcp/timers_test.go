package mcp

import (
	"testing"
	"time"
)

// A response timer that expired without being read and went back to the
// pool delivers nothing to the next request that takes it.
func TestReusedTimerDeliversNothingStale(t *testing.T) {
	tm := getTimer(time.Nanosecond)
	time.Sleep(5 * time.Millisecond) // expired, its tick never read
	putTimer(tm)
	for range 4 { // whichever pooled timer comes back
		next := getTimer(time.Hour)
		select {
		case <-next.C:
			t.Fatal("a reused timer delivered a stale tick")
		default:
		}
		defer putTimer(next)
	}
}
