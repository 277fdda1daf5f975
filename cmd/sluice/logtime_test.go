package main

import (
	"math/rand"
	"testing"
	"time"
)

// appendLogTime writes what AppendFormat writes for a record's time, across
// seconds, locations (the second's text is kept from one call to the next),
// fractions with and without trailing zeros, and years before 1970.
func TestAppendLogTimeMatchesAppendFormat(t *testing.T) {
	locs := []*time.Location{time.UTC, time.Local, time.FixedZone("x", 5*3600+30*60), time.FixedZone("y", -8*3600), time.FixedZone("z", 0)}
	if ny, err := time.LoadLocation("America/New_York"); err == nil {
		locs = append(locs, ny)
	}
	rng := rand.New(rand.NewSource(7))
	base := time.Date(2026, 3, 8, 6, 59, 58, 0, time.UTC) // around a DST change in New York
	nanos := []int{0, 1, 10, 100000000, 120000000, 999999999, 500, 123456789}
	for i := 0; i < 20000; i++ {
		var tm time.Time
		switch rng.Intn(4) {
		case 0:
			tm = base.Add(time.Duration(rng.Intn(4)) * time.Second)
		case 1:
			tm = time.Unix(rng.Int63n(1<<34)-1<<33, 0)
		case 2:
			tm = time.Now()
		default:
			tm = time.Date(rng.Intn(10000), time.Month(1+rng.Intn(12)), 1+rng.Intn(28), rng.Intn(24), rng.Intn(60), rng.Intn(60), 0, time.UTC)
		}
		tm = tm.Truncate(time.Second).Add(time.Duration(nanos[rng.Intn(len(nanos))])).In(locs[rng.Intn(len(locs))])
		if y := tm.Year(); y < 0 || y >= 10000 {
			continue // Handle leaves those to slog
		}
		want := tm.AppendFormat(nil, "2006-01-02T15:04:05.999999999Z07:00")
		if got := appendLogTime([]byte("x"), tm); string(got) != "x"+string(want) {
			t.Fatalf("%v: %s, want %s", tm, got[1:], want)
		}
	}
}
