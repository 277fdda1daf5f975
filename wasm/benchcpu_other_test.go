//go:build !unix

package wasm

import "time"

// processCPU is unknown here: the benchmarks report no CPU per call.
func processCPU() time.Duration { return 0 }
