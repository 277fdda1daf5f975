package main

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestRunOversizedResultStaysInMemory: a script whose `result` is a
// 100 MB string fails on maxOutputBytes without sluice copying the string
// into its JSON encoding first: the process peaks near what the script
// itself held (the memory limit's business), not at several times it.
//
// The processes run with their collector off (GOGC=off, no GOMEMLIMIT),
// so a peak is everything the process allocated, whenever a collection
// would have run: the measure does not depend on how much CPU the
// collector got on a loaded machine. The oversized run is compared with
// a run of the same binary that builds the same string and returns its
// length, so what the build adds to every page (the race detector's
// shadow memory) is in both.
func TestRunOversizedResultStaysInMemory(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers: {}\n")
	peak := func(script string, code int, says string) int64 {
		t.Helper()
		cmd := exec.Command(sluiceBin, "run", "-")
		cmd.Stdin = strings.NewReader(script)
		cmd.Env = append(os.Environ(), "GOGC=off", "GOMEMLIMIT=off")
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != code || !strings.Contains(string(out), says) {
			t.Fatalf("sluice run of %q: err %v, want exit %d and %q, output:\n%s", script, err, code, says, out)
		}
		return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	}
	base := peak("x = \"a\" * 100000000\nresult = len(x)\n", exitOK, "100000000")
	over := peak("x = \"a\" * 100000000\nresult = x\n", exitFailure, "larger than maxOutputBytes")
	// Refusing the result costs next to nothing beside the string (114
	// MiB both); copying the string into the JSON encoding first cost
	// two more copies of it (371 MiB against 115). Both bounds must be
	// passed to fail: more than one more copy (95 MiB) than the base run,
	// and more than 300 MiB, above the 246 MiB one run of the whole suite
	// once peaked at with the fix in.
	if over-base > 95<<20 && over > 300<<20 {
		t.Fatalf("sluice run peaked at %d MiB for a 100 MB result refused by the output cap, %d MiB for the same string returned as its length", over>>20, base>>20)
	}
}
