package wasm

import (
	"errors"
	"testing"
	"time"
)

// TestRenameRetrying drives the retry loop of a stored result's rename
// on a fake clock: a busy file is retried until the rename goes through,
// another error is returned at once, and a file that stays busy is given
// up on once the budget is spent.
func TestRenameRetrying(t *testing.T) {
	errBusy := errors.New("busy")
	errOther := errors.New("no such directory")
	busy := func(err error) bool { return errors.Is(err, errBusy) }
	type clock struct {
		now    time.Time
		sleeps []time.Duration
	}
	newClock := func() *clock { return &clock{now: time.Unix(1_000_000, 0)} }
	for _, tc := range []struct {
		name     string
		results  []error // what each attempt returns; past the end: errBusy
		budget   time.Duration
		want     error
		attempts int
		slept    time.Duration // total time slept
	}{
		{"first attempt", []error{nil}, time.Second, nil, 1, 0},
		{"busy twice", []error{errBusy, errBusy, nil}, time.Second, nil, 3, 3 * time.Millisecond},
		{"another error is not retried", []error{errOther}, time.Second, errOther, 1, 0},
		{"busy then another error", []error{errBusy, errOther}, time.Second, errOther, 2, time.Millisecond},
		// 1+2+4+8+16+32 = 63 ms, then 50 ms steps: past 200 ms after
		// 63+50+50+50 = 213 ms, so the tenth attempt is the last.
		{"busy for good", nil, 200 * time.Millisecond, errBusy, 10, 213 * time.Millisecond},
		{"no budget", nil, 0, errBusy, 2, time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			attempts := 0
			rename := func(from, to string) error {
				if from != "tmp" || to != "r-1.result" {
					t.Fatalf("rename(%q, %q)", from, to)
				}
				attempts++
				if attempts <= len(tc.results) {
					return tc.results[attempts-1]
				}
				return errBusy
			}
			start := c.now
			err := renameRetrying(rename, busy, "tmp", "r-1.result", tc.budget,
				func() time.Time { return c.now },
				func(d time.Duration) { c.sleeps = append(c.sleeps, d); c.now = c.now.Add(d) })
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if attempts != tc.attempts {
				t.Fatalf("%d attempts, want %d (sleeps %v)", attempts, tc.attempts, c.sleeps)
			}
			if got := c.now.Sub(start); got != tc.slept {
				t.Fatalf("slept %v, want %v (%v)", got, tc.slept, c.sleeps)
			}
			for _, d := range c.sleeps {
				if d > 50*time.Millisecond {
					t.Fatalf("a sleep of %v: the step is capped at 50ms", d)
				}
			}
		})
	}
}
