//go:build race

package guest

// raceEnabled: the race detector slows the differential tests ~10x; they
// then sample fewer inputs (the fuzz target covers more).
const raceEnabled = true
