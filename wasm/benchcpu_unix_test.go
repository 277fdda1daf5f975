//go:build unix

package wasm

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used so far (every thread:
// the caller's, a worker's, the garbage collector's), or 0 if unknown.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
