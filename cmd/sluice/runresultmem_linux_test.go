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
// The process runs with its collector off (GOGC=off, no GOMEMLIMIT), so
// its peak is everything it allocated, whenever a collection would have
// run: the measure does not depend on how much CPU the collector got on
// a loaded machine.
func TestRunOversizedResultStaysInMemory(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers: {}\n")
	cmd := exec.Command(sluiceBin, "run", "-")
	cmd.Stdin = strings.NewReader("x = \"a\" * 100000000\nresult = x\n")
	cmd.Env = append(os.Environ(), "GOGC=off", "GOMEMLIMIT=off")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitFailure || !strings.Contains(string(out), "larger than maxOutputBytes") {
		t.Fatalf("err %v, output:\n%s", err, out)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	// Nothing collected: the string once (95 MiB) and the rest of the
	// run's allocations came to 115 MiB; copying the string into the JSON
	// encoding first came to 371 MiB. Under two copies of the string tells
	// the two apart.
	if peak := ru.Maxrss << 10; peak > 200<<20 {
		t.Fatalf("sluice run peaked at %d MiB for a 100 MB result refused by the output cap", peak>>20)
	}
}
