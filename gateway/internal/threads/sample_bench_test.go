package threads

import (
	"runtime/metrics"
	"testing"
)

// BenchmarkSample: what one sample costs the monitor (the process CPU
// time and the scheduler's latency histogram), taken ten times a second
// while the process is active.
func BenchmarkSample(b *testing.B) {
	ms := []metrics.Sample{{Name: latencies}}
	for b.Loop() {
		processCPU()
		metrics.Read(ms)
	}
}
