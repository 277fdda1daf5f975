//go:build !unix

package gateway

import "time"

// processCPU: not reported on this platform (benchmarks then report
// wall-clock figures only).
func processCPU() time.Duration { return 0 }
