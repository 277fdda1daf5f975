package front

import (
	"encoding/json"
	"testing"
	"time"
)

// An answer handed over to the SDK that its handler never takes (the SDK
// refused the rebuilt request first) does not stay for the life of the
// process: it expires, and the stash never holds more than stashMax.
func TestStashIsBounded(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	s := &stash{now: func() time.Time { return clock }}
	first := s.put(json.RawMessage(`{"n":0}`))
	for i := 1; i < stashMax+100; i++ {
		s.put(json.RawMessage(`{"n":1}`))
		clock = clock.Add(time.Millisecond)
	}
	if n := s.len(); n != stashMax {
		t.Fatalf("stash holds %d answers, want at most %d", n, stashMax)
	}
	if _, ok := s.take(first); ok {
		t.Fatal("the oldest answer was kept past the cap")
	}
	tok := s.put(json.RawMessage(`{"kept":true}`))
	if raw, ok := s.take(tok); !ok || string(raw) != `{"kept":true}` {
		t.Fatalf("a fresh answer: %s %v", raw, ok)
	}
	if _, ok := s.take(tok); ok {
		t.Fatal("an answer was taken twice")
	}
	clock = clock.Add(stashTTL)
	s.put(json.RawMessage(`{}`))
	if n := s.len(); n != 1 {
		t.Fatalf("after stashTTL %d answers are held, want only the new one", n)
	}
}
