package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// startProfile starts a CPU profile into the file $SLUICE_CPUPROFILE names
// and returns the function that ends it; with the variable unset it does
// nothing. It is a debugging aid for measuring a whole process under load
// (see BENCHMARKS.md); the file is written when the command returns.
func startProfile(stderr io.Writer) func() {
	path := os.Getenv("SLUICE_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		fmt.Fprintf(stderr, "sluice: SLUICE_CPUPROFILE: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(stderr, "sluice: SLUICE_CPUPROFILE: %v\n", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
