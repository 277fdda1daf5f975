package sandbox

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"go.starlark.net/starlark"
)

// trivialHost answers every call at once with a small text result.
type trivialHost struct{ latency time.Duration }

var trivialResult = json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`)

func (trivialHost) Servers() []Server {
	return []Server{{ID: "t", Tools: []Tool{{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"i":{"type":"integer"}},"required":["i"]}`)}}}}
}
func (trivialHost) Admit(string) error        { return nil }
func (trivialHost) MaxConcurrency(string) int { return 8 }
func (h trivialHost) Call(ctx context.Context, _ string, _ json.RawMessage) (CallResult, error) {
	if h.latency > 0 {
		select {
		case <-time.After(h.latency):
		case <-ctx.Done():
			return CallResult{}, ctx.Err()
		}
	}
	return CallResult{Raw: trivialResult}, nil
}

// BenchmarkCalls: 1,000 sequential tool calls from a script vs 1,000 direct
// Host.Call calls with the same arguments; reports the per-call overhead
// ratio.
func BenchmarkCalls(b *testing.B) {
	h := trivialHost{}
	src := "n = 0\nfor i in range(1000):\n    if t.echo(i=i) == 'ok':\n        n += 1\nresult = n\n"
	lim := &Limits{MaxCalls: 1000}
	ctx := context.Background()
	var direct, script time.Duration
	for b.Loop() {
		t0 := time.Now()
		for i := 0; i < 1000; i++ {
			args, _ := json.Marshal(map[string]int{"i": i})
			if _, err := h.Call(ctx, "t__echo", args); err != nil {
				b.Fatal(err)
			}
		}
		direct += time.Since(t0)
		t0 = time.Now()
		r := Run(ctx, h, "bench.star", src, lim)
		script += time.Since(t0)
		if r.Error != nil || string(r.Result) != "1000" {
			b.Fatalf("%v %s", r.Error, r.Result)
		}
	}
	n := float64(b.N) * 1000
	b.ReportMetric(float64(script.Nanoseconds())/n, "script-ns/call")
	b.ReportMetric(float64(direct.Nanoseconds())/n, "direct-ns/call")
	b.ReportMetric(float64(script)/float64(direct), "script/direct")
}

// BenchmarkParallel: 50 calls to a tool with 20 ms latency, parallel()
// with limit 8 vs a sequential loop in the same run; reports the speed-up.
func BenchmarkParallel(b *testing.B) {
	h := trivialHost{latency: 20 * time.Millisecond}
	par := "r = parallel([('t__echo', {'i': i}) for i in range(50)], limit=8)\nresult = len([x for x in r if x.ok])\n"
	seq := "r = [t.echo(i=i) for i in range(50)]\nresult = len(r)\n"
	ctx := context.Background()
	var tp, ts time.Duration
	for b.Loop() {
		t0 := time.Now()
		r := Run(ctx, h, "seq.star", seq, nil)
		ts += time.Since(t0)
		if r.Error != nil || string(r.Result) != "50" {
			b.Fatalf("%v %s", r.Error, r.Result)
		}
		t0 = time.Now()
		r = Run(ctx, h, "par.star", par, nil)
		tp += time.Since(t0)
		if r.Error != nil || string(r.Result) != "50" {
			b.Fatalf("%v %s", r.Error, r.Result)
		}
	}
	b.ReportMetric(float64(tp.Milliseconds())/float64(b.N), "parallel-ms/run")
	b.ReportMetric(float64(ts.Milliseconds())/float64(b.N), "sequential-ms/run")
	b.ReportMetric(float64(ts)/float64(tp), "speedup")
}

// BenchmarkCheckedOperators: the cost of the memory checks (rewritten
// operators and methods, step hook, heap sampler) on an operator-heavy
// script, against the same script on a bare Starlark thread.
func BenchmarkCheckedOperators(b *testing.B) {
	src := `
def work():
    n = 0
    for i in range(100000):
        a = "k" + "v"
        b = [i] * 2
        c = "%d" % i
        d = ",".join([a, c])
        n = n + len(a) + len(b) + len(c) + len(d)
    return n
result = work()
`
	ctx := context.Background()
	var checked, bare time.Duration
	for b.Loop() {
		t0 := time.Now()
		th := &starlark.Thread{}
		th.SetMaxExecutionSteps(1 << 40)
		if _, err := starlark.ExecFileOptions(fileOptions, th, "bare.star", src, nil); err != nil {
			b.Fatal(err)
		}
		bare += time.Since(t0)
		t0 = time.Now()
		r := Run(ctx, trivialHost{}, "checked.star", src, nil)
		checked += time.Since(t0)
		if r.Error != nil {
			b.Fatal(r.Error)
		}
	}
	b.ReportMetric(float64(checked.Microseconds())/float64(b.N), "checked-µs/run")
	b.ReportMetric(float64(bare.Microseconds())/float64(b.N), "bare-µs/run")
	b.ReportMetric(float64(checked)/float64(bare), "checked/bare")
}

// BenchmarkCheckedComparisons: a loop made of comparisons and indexing
// with variables on both sides, which go through <cmp> and <key>.
func BenchmarkCheckedComparisons(b *testing.B) {
	src := `
def work():
    d = {"k%d" % i: i for i in range(100)}
    keys = list(d.keys())
    rows = [{"id": i, "tags": ["a", "b"]} for i in range(100)]
    n = 0
    lim = 50
    for i in range(100000):
        k = keys[i % 100]
        r = rows[i % 100]
        if d[k] < lim and k in d and r["tags"] == rows[0]["tags"]:
            n = n + 1
    return n
result = work()
`
	ctx := context.Background()
	var checked, bare time.Duration
	for b.Loop() {
		t0 := time.Now()
		th := &starlark.Thread{}
		th.SetMaxExecutionSteps(1 << 40)
		if _, err := starlark.ExecFileOptions(fileOptions, th, "bare.star", src, nil); err != nil {
			b.Fatal(err)
		}
		bare += time.Since(t0)
		t0 = time.Now()
		r := Run(ctx, trivialHost{}, "checked.star", src, nil)
		checked += time.Since(t0)
		if r.Error != nil {
			b.Fatal(r.Error)
		}
	}
	b.ReportMetric(float64(checked.Microseconds())/float64(b.N), "checked-µs/run")
	b.ReportMetric(float64(bare.Microseconds())/float64(b.N), "bare-µs/run")
	b.ReportMetric(float64(checked)/float64(bare), "checked/bare")
}
