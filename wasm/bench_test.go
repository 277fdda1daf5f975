package wasm

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"sluice/wasm/guest"
)

// proseResult is a CallToolResult of about n bytes: one text item of prose
// and log-like lines (newlines, some quotes, non-ASCII), the common shape of
// large tool output.
func proseResult(n int) []byte {
	line := `2026-11-30T03:58:25Z INFO fetched "page" 17 of 40 — naïve café résumé; status=ok bytes=65536` + "\n"
	text := strings.Repeat(line, n/len(line)+1)[:n]
	j, _ := json.Marshal(text)
	return []byte(`{"content":[{"type":"text","text":` + string(j) + `}],"isError":false}`)
}

func nopOffload([]byte) (string, error) { return "r-0123456789abcdef", nil }

// nopHostOffload is nopOffload as an Options.Offload.
func nopHostOffload(_ context.Context, b []byte) (string, error) { return nopOffload(b) }

// nsPerOp times fn over at least 200ms and 10 runs (testing.Benchmark
// cannot be nested inside a running benchmark) and returns the median of 5
// such batches' per-op times.
func nsPerOp(fn func()) float64 {
	fn() // warm
	var res []float64
	for batch := 0; batch < 5; batch++ {
		n := 0
		start := time.Now()
		for n < 10 || time.Since(start) < 40*time.Millisecond {
			fn()
			n++
		}
		res = append(res, float64(time.Since(start).Nanoseconds())/float64(n))
	}
	sort.Float64s(res)
	return res[len(res)/2]
}

// BenchmarkShape: the built-in shape filter, pooled, deadlines on, against
// the same code (guest.Shaper) run natively, the two calls alternating so
// both see the same machine load. x-native = wasm median / native median.
// The caller releases each output (Output.Release, where the package has
// it), except in the -kept case, where every output is left to the garbage
// collector. x-native-cpu compares the process CPU time used while each
// side's calls ran (the steadier figure on a loaded machine).
func BenchmarkShape(b *testing.B) {
	h := newTestHost(b, &Options{Offload: nopHostOffload, Timeout: 10 * time.Second, PoolSize: 1})
	f := mustLoad(b, h, Spec{Builtin: "shape"})
	ctx := context.Background()
	// The gateway vouches for its input (Meta.ValidInput: every upstream
	// message is validated by its framing); the -full cases leave it out,
	// so the whole output is validated.
	valid := Meta{ValidInput: true}
	for _, c := range []struct {
		name string
		in   []byte
		meta Meta
		keep bool // the caller keeps the output (no Release)
	}{
		{"4KiB-pass", proseResult(4 << 10), valid, false},
		{"64KiB", proseResult(64 << 10), valid, false},
		{"64KiB-kept", proseResult(64 << 10), valid, true},
		{"64KiB-full", proseResult(64 << 10), Meta{}, false},
		{"64KiB-json-in-text", mcpResult(64<<10, ""), valid, false},
		{"1MiB", proseResult(1 << 20), valid, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			native := &guest.Shaper{Offload: nopOffload}
			native.Shape(c.in)
			if _, err := f.Run(ctx, c.in, c.meta); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(c.in)))
			per := make([]time.Duration, 0, b.N)
			nat := make([]time.Duration, 0, b.N)
			var cpu, ncpu time.Duration
			b.ResetTimer()
			for b.Loop() {
				c0, start := processCPU(), time.Now()
				o, err := f.Run(ctx, c.in, c.meta)
				if err != nil {
					b.Fatal(err)
				}
				if r, ok := any(&o).(interface{ Release() }); ok && !c.keep {
					r.Release()
				}
				per = append(per, time.Since(start))
				c1 := processCPU()
				start = time.Now()
				native.Shape(c.in)
				nat = append(nat, time.Since(start))
				cpu, ncpu = cpu+c1-c0, ncpu+processCPU()-c1
			}
			p50, n50 := median(per), median(nat)
			b.ReportMetric(p50, "p50-ns/op")
			b.ReportMetric(n50, "native-ns/op")
			b.ReportMetric(p50/n50, "x-native")
			if ncpu > 0 {
				// Process CPU while each call ran (every thread: workers,
				// the garbage collector), summed per side.
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(len(per)), "cpu-ns/op")
				b.ReportMetric(float64(ncpu.Nanoseconds())/float64(len(nat)), "native-cpu-ns/op")
				b.ReportMetric(float64(cpu)/float64(ncpu), "x-native-cpu")
			}
		})
	}
}

// BenchmarkInstance: a fresh instance per call (instantiate + _initialize +
// mcpf_init + call + close) against a pooled instance, for the Go shape guest
// and the WAT upper guest. x-pooled = fresh / pooled.
func BenchmarkInstance(b *testing.B) {
	h := newTestHost(b, &Options{Offload: nopHostOffload, Timeout: 10 * time.Second, PoolSize: 2}) // one pooled instance + one fresh slot
	ctx := context.Background()
	for _, c := range []struct {
		name string
		spec Spec
		in   []byte
	}{
		{"go-shape-64KiB", Spec{Builtin: "shape"}, proseResult(64 << 10)},
		{"wat-upper-4KiB", Spec{Name: "upper", Module: testGuest(b, "upper")}, []byte(strings.Repeat("abc ", 1024))},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := mustLoad(b, h, c.spec)
			pooled := nsPerOp(func() { f.Run(ctx, c.in, Meta{}) })
			b.ResetTimer()
			for b.Loop() {
				in, err := f.pool.instantiate(ctx, f.name)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := f.call(ctx, in, c.in, &Meta{}); err != nil {
					b.Fatal(err)
				}
				f.pool.discard(ctx, in)
			}
			fresh := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(pooled, "pooled-ns/op")
			b.ReportMetric(fresh/pooled, "x-pooled")
		})
	}
}

// BenchmarkCompile: compiling the shape module with an empty cache (cold)
// against a new Host reusing a warm on-disk cache (a restart). x-cached =
// cold / cached.
func BenchmarkCompile(b *testing.B) {
	mod, _ := Builtin("shape")
	ctx := context.Background()
	compileOnce := func(dir string) time.Duration {
		h, err := NewHost(ctx, &Options{CacheDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close(ctx)
		start := time.Now()
		cm, err := h.compile(ctx, "shape", mod, [32]byte{}, true, 0) // a built-in
		if err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		h.release(ctx, cm)
		return d
	}
	warm := b.TempDir()
	compileOnce(warm)
	var cold time.Duration
	const coldRuns = 2
	for i := 0; i < coldRuns; i++ {
		dir, err := os.MkdirTemp(b.TempDir(), "cold")
		if err != nil {
			b.Fatal(err)
		}
		cold += compileOnce(dir)
	}
	b.ResetTimer()
	var cached time.Duration
	for b.Loop() {
		cached += compileOnce(warm)
	}
	perCached := float64(cached.Nanoseconds()) / float64(b.N)
	perCold := float64(cold.Nanoseconds()) / coldRuns
	b.ReportMetric(perCached/1e6, "cached-ms")
	b.ReportMetric(perCold/1e6, "cold-ms")
	b.ReportMetric(perCold/perCached, "x-cached")
}

// secretResult is proseResult(n) with a few secrets of different kinds
// spread through the text (one every ~8 KiB), so a redaction has work to do
// but most of the text is clean, the common case.
func secretResult(n int) []byte { return secretResultEvery(n, 80) }

// secretResultEvery is secretResult with a secret after every lines lines.
func secretResultEvery(n, lines int) []byte {
	secrets := []string{
		"AKIAIOSFODNN7EXAMPLE",
		"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		"ghp_" + strings.Repeat("a1B2", 9),
		"Authorization: Bearer abcdef0123456789.xyz",
		"xoxb-1234567890-abcdefghij",
	}
	line := `2026-11-30T03:58:25Z INFO fetched "page" 17 of 40 — naïve café résumé; status=ok bytes=65536` + "\n"
	var sb strings.Builder
	for i := 0; sb.Len() < n; i++ {
		sb.WriteString(line)
		if i%lines == lines/2 {
			sb.WriteString(secrets[(i/lines)%len(secrets)] + "\n")
		}
	}
	text := sb.String()[:n]
	j, _ := json.Marshal(text)
	head, _ := json.Marshal(text[:min(len(text), 1024)])
	return []byte(`{"content":[{"type":"text","text":` + string(j) + `}],"structuredContent":{"log":` + string(head) + `},"isError":false}`)
}

// BenchmarkRedact: the built-in redact filter, pooled, deadlines on,
// against the same code (guest.Redactor) run natively, the two calls
// alternating so both see the same machine load. x-native = wasm median /
// native median. The checked-* cases compile the built-in with the
// termination checks configured modules get (Options.CheckBuiltins).
func BenchmarkRedact(b *testing.B) {
	ctx := context.Background()
	fast := mustLoad(b, newTestHost(b, &Options{Timeout: 60 * time.Second, PoolSize: 1}), Spec{Builtin: "redact"})
	checked := mustLoad(b, newTestHost(b, &Options{Timeout: 60 * time.Second, PoolSize: 1, CheckBuiltins: true}), Spec{Builtin: "redact"})
	for _, c := range []struct {
		name string
		in   []byte
		f    *Filter
	}{
		{"4KiB", secretResult(4 << 10), fast},
		{"64KiB", secretResult(64 << 10), fast},
		{"64KiB-clean", proseResult(64 << 10), fast},
		{"64KiB-dense", secretResultEvery(64<<10, 1), fast}, // a secret on every line
		{"1MiB", secretResult(1 << 20), fast},
		{"checked-64KiB", secretResult(64 << 10), checked},
		{"checked-1MiB", secretResult(1 << 20), checked},
	} {
		f := c.f
		b.Run(c.name, func(b *testing.B) {
			native, err := guest.NewRedactor(nil)
			if err != nil {
				b.Fatal(err)
			}
			native.RedactResult(c.in)
			if _, err := f.Run(ctx, c.in, Meta{}); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(c.in)))
			var per, nat []time.Duration
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				if _, err := f.Run(ctx, c.in, Meta{}); err != nil {
					b.Fatal(err)
				}
				per = append(per, time.Since(start))
				start = time.Now()
				native.RedactResult(c.in)
				nat = append(nat, time.Since(start))
			}
			p50, n50 := median(per), median(nat)
			b.ReportMetric(p50, "p50-ns/op")
			b.ReportMetric(n50, "native-ns/op")
			b.ReportMetric(p50/n50, "x-native")
		})
	}
}

// median of durations in ns.
func median(d []time.Duration) float64 {
	d = slices.Clone(d)
	slices.Sort(d)
	return float64(d[len(d)/2].Nanoseconds())
}

// BenchmarkSkipString: the host's skip (input_json_skip) of the text of
// a 64 KiB result, prose and escaped JSON.
func BenchmarkSkipString(b *testing.B) {
	for _, c := range []struct {
		name string
		in   []byte
	}{
		{"prose-64KiB", proseResult(64 << 10)},
		{"json-in-text-64KiB", mcpResult(64<<10, "")},
	} {
		b.Run(c.name, func(b *testing.B) {
			i := len(`{"content":[{"type":"text","text":`)
			if c.in[i] != '"' {
				b.Fatalf("no string at %d", i)
			}
			b.SetBytes(int64(len(c.in)))
			c0 := processCPU()
			for b.Loop() {
				if skipJSONString(c.in, i) < 0 {
					b.Fatal("no end")
				}
			}
			b.ReportMetric(float64(processCPU()-c0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkEntryChecks: what the termination check at the entry of every
// function (withEntryChecks) costs a Go guest compiled as a module from
// configuration gets it: the redactor and the shaper compiled with checks
// (Options.CheckBuiltins) from their rewrite against the same bytes
// without it, calls alternating so both see the same machine load.
// x-unrewritten = median with / median without.
func BenchmarkEntryChecks(b *testing.B) {
	ctx := context.Background()
	load := func(spec Spec, off bool) *Filter {
		noEntryChecks = off
		defer func() { noEntryChecks = false }()
		// A compilation cache of its own: wazero would find the other
		// side's code under the same digest otherwise.
		return mustLoad(b, newTestHost(b, &Options{CacheDir: b.TempDir(), Offload: nopHostOffload, Timeout: 60 * time.Second, PoolSize: 1, CheckBuiltins: true}), spec)
	}
	for _, c := range []struct {
		name string
		spec Spec
		in   []byte
	}{
		{"redact-4KiB", Spec{Builtin: "redact"}, secretResult(4 << 10)},
		{"redact-64KiB", Spec{Builtin: "redact"}, secretResult(64 << 10)},
		{"redact-1MiB", Spec{Builtin: "redact"}, secretResult(1 << 20)},
		{"shape-64KiB", Spec{Builtin: "shape"}, proseResult(64 << 10)},
	} {
		with, without := load(c.spec, false), load(c.spec, true)
		b.Run(c.name, func(b *testing.B) {
			for _, f := range []*Filter{with, without} {
				if _, err := f.Run(ctx, c.in, Meta{}); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(c.in)))
			var w, wo []time.Duration
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				out, err := with.Run(ctx, c.in, Meta{})
				if err != nil {
					b.Fatal(err)
				}
				w = append(w, time.Since(start))
				out.Release()
				start = time.Now()
				out, err = without.Run(ctx, c.in, Meta{})
				if err != nil {
					b.Fatal(err)
				}
				wo = append(wo, time.Since(start))
				out.Release()
			}
			p50, base := median(w), median(wo)
			b.ReportMetric(p50, "p50-ns/op")
			b.ReportMetric(base, "unrewritten-ns/op")
			b.ReportMetric(p50/base, "x-unrewritten")
		})
	}
}
