//go:build !unix

package threads

import "time"

// processCPU: not read on this platform (the monitor does not start).
func processCPU() (time.Duration, bool) { return 0, false }
