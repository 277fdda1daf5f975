//go:build sluicetest

package threads

import (
	"bytes"
	"fmt"
	"os"
	"time"
)

// Built only with the sluicetest tag, as the command tests build the
// binary they run (cmd/sluice's TestMain); a release build has none of
// it. With SLUICE_TESTHOOK_THREADS_SAMPLES=PATH in the environment, the
// monitor's samples are the lines a test appends to PATH instead of the
// process's own readings: "CPU QUEUE", the cores used and the mean number
// of goroutines waiting for a thread over one Interval, a line a tick (a
// tick with no new line is no sample). What the monitor decides and
// applies is then the test's to set, however loaded the machine is.
func init() {
	path := os.Getenv("SLUICE_TESTHOOK_THREADS_SAMPLES")
	if path == "" {
		return
	}
	testSampler = func() sampler { return &fileSampler{path: path} }
}

type fileSampler struct {
	path string
	off  int64 // where the next line starts
}

func (f *fileSampler) rebase() {}

func (f *fileSampler) next() (Sample, bool) {
	file, err := os.Open(f.path)
	if err != nil {
		return Sample{}, false
	}
	defer file.Close()
	buf := make([]byte, 256)
	n, _ := file.ReadAt(buf, f.off)
	line, _, ok := bytes.Cut(buf[:n], []byte("\n"))
	if !ok {
		return Sample{}, false
	}
	f.off += int64(len(line) + 1)
	var cpu, queue float64
	if _, err := fmt.Sscan(string(line), &cpu, &queue); err != nil {
		fmt.Fprintf(os.Stderr, "threads test hook: line %q: want CPU QUEUE: %v\n", line, err)
		return Sample{}, false
	}
	return Sample{Wall: Interval, CPU: time.Duration(cpu * float64(Interval)), Waiting: time.Duration(queue * float64(Interval))}, true
}
