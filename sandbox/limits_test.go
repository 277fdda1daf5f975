package sandbox

import (
	"context"
	"errors"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// peakHeap samples the process heap every 100µs while f runs and returns
// the largest growth seen (bytes above the value at the start).
func peakHeap(f func()) int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(s)
	base := s[0].Value.Uint64()
	var peak atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		ss := []metrics.Sample{{Name: heapMetric}}
		for {
			select {
			case <-stop:
				return
			default:
			}
			metrics.Read(ss)
			if g := int64(ss[0].Value.Uint64()) - int64(base); g > peak.Load() {
				peak.Store(g)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	f()
	close(stop)
	<-done
	return peak.Load()
}

func TestMemoryLimit(t *testing.T) {
	cases := []struct {
		name  string
		limit int64 // 0 = default 256 MiB
		src   string
	}{
		{"string doubling", 0, `
s = "x" * 1000000
for i in range(40):
    s = s + s
result = len(s)`},
		{"string doubling augmented", 64 << 20, `
s = "x" * 1000000
for i in range(40):
    s += s
result = len(s)`},
		{"string repeat", 64 << 20, `s = "x" * 1000000
t = s * 500
result = len(t)`},
		{"list doubling", 64 << 20, `
l = ["x"]
for i in range(40):
    l = l + l
result = len(l)`},
		{"list extend doubling", 64 << 20, `
l = ["x"]
for i in range(40):
    l.extend(l)
result = len(l)`},
		{"list append growth", 32 << 20, `
l = []
for i in range(5000000):
    l.append("abcdefgh" * 8)
result = len(l)`},
		{"dict growth", 32 << 20, `
d = {}
for i in range(5000000):
    d[i] = "v"
result = len(d)`},
		{"join explosion", 64 << 20, `
s = "x" * 1000000
result = len(",".join([s] * 1000))`},
		{"str of shared structure", 64 << 20, `
l = ["x" * 1000]
for i in range(30):
    l = [l, l]
result = len(str(l))`},
		{"format explosion", 64 << 20, `
s = "y" * 1000000
l = [s] * 1000
result = len("%s" % (l,))`},
		{"format reusing an argument", 64 << 20, `
s = "x" * 1000000
f = "{0}" * 300
result = len(f.format(s))`},
		{"percent reusing a named argument", 64 << 20, `
s = "x" * 1000000
f = "%(a)s" * 300
result = len(f % {"a": s})`},
		{"replace explosion", 64 << 20, `
s = "a" * 10000000
result = len(s.replace("a", "bbbbbbbbbbbbbbbbbbbb"))`},
		{"codepoints materialized", 64 << 20, `
s = "é" * 3000000
result = len(list(s.codepoints()))`},
		{"json encode explosion", 64 << 20, `
l = ["x" * 1000]
for i in range(30):
    l = [l, l]
result = len(json.encode(l))`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r *Result
			peak := peakHeap(func() {
				r = Run(context.Background(), newFakeHost(), "mem.star", tc.src, &Limits{MaxMemoryBytes: tc.limit, MaxSteps: 100_000_000})
			})
			if r.Error == nil || r.Error.Kind != KindLimit || r.Error.Limit != LimitMemory {
				t.Fatalf("want limit/memory error, got %+v (result %s)", r.Error, r.Result)
			}
			if !errors.Is(r.Error, ErrLimit) {
				t.Errorf("errors.Is(ErrLimit) false for %v", r.Error)
			}
			limit := tc.limit
			if limit == 0 {
				limit = DefaultMaxMemoryBytes
			}
			t.Logf("%s: stopped at line %d: %s; peak heap growth %s (limit %s)", tc.name, r.Error.Line, r.Error.Message, fmtBytes(peak), fmtBytes(limit))
			// Hang/OOM guard, not a timing assertion: the process must
			// stay within a small multiple of the limit.
			if peak > 4*limit+64<<20 {
				t.Errorf("peak heap growth %s, more than 4x the limit %s", fmtBytes(peak), fmtBytes(limit))
			}
		})
	}
}

func TestMemoryLegitimateWorkPasses(t *testing.T) {
	src := `
out = ""
for i in range(5000):
    out = out + "line %d\n" % i
parts = out.split("\n")
d = {p: len(p) for p in parts}
big = "y" * 1000000
auto = ("{} " * 300).format(big, *([1] * 299))
pct = ("%s " * 300) % tuple([big] + [1] * 299)
result = [len(out), len(parts), len(d), len(auto), len(pct)]`
	r := Run(context.Background(), newFakeHost(), "ok.star", src, &Limits{MaxMemoryBytes: 64 << 20})
	if r.Error != nil {
		t.Fatalf("unexpected error: %v", r.Error)
	}
	if !strings.HasPrefix(string(r.Result), "[") {
		t.Fatalf("result %s", r.Result)
	}
}
