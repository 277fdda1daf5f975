package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sluice/gateway/mcp/mcptest"
)

// benchGateway opens a gateway over an isolated home whose user file
// declares the fixture as fx plus extra settings, with fx already running.
func benchGateway(b *testing.B, settings string) *Gateway {
	b.Helper()
	root := b.TempDir()
	env := map[string]string{
		"SLUICE_HOME":      filepath.Join(root, "home"),
		"SLUICE_CACHE_DIR": filepath.Join(root, "cache"),
		"XDG_STATE_HOME":   filepath.Join(root, "state"),
		"PATH":             os.Getenv("PATH"),
		"HOME":             root,
	}
	for _, d := range []string{env["SLUICE_HOME"], env["SLUICE_CACHE_DIR"], env["XDG_STATE_HOME"], filepath.Join(root, "project")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	exe, argv, err := mcptest.Command()
	if err != nil {
		b.Fatal(err)
	}
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = strconv.Quote(a)
	}
	decl := fmt.Sprintf("servers:\n  fx:\n    command: %s\n    args: [%s]\n%s", strconv.Quote(exe), strings.Join(q, ", "), settings)
	if err := os.WriteFile(filepath.Join(env["SLUICE_HOME"], "mcp.yaml"), []byte(decl), 0o600); err != nil {
		b.Fatal(err)
	}
	g, err := Open(&Options{Cwd: filepath.Join(root, "project"), Getenv: func(k string) string { return env[k] },
		testKnobs: testKnobs{killGrace: 300 * time.Millisecond, stdinGrace: 100 * time.Millisecond}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if bad := g.Close(); len(bad) > 0 {
			b.Errorf("incomplete teardown: %+v", bad)
		}
		deadline := time.Now().Add(10 * time.Second)
		for children() > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := children(); n > 0 {
			b.Errorf("%d child processes still alive", n)
		}
	})
	// Launch fx and record its catalog before timing anything.
	if _, err := g.Find(context.Background(), FindRequest{Server: "fx", Refresh: true}); err != nil {
		b.Fatal(err)
	}
	return g
}

func benchExecute(b *testing.B, g *Gateway, script string) *ExecuteResult {
	b.Helper()
	res, err := g.Execute(context.Background(), ExecuteRequest{Script: script})
	if err != nil {
		b.Fatal(err)
	}
	if res.Error != nil {
		b.Fatalf("run failed: %+v", res.Error)
	}
	return res
}

// BenchmarkCodeModeSequentialCalls: 1,000 calls of fx__echo from one
// script against 1,000 direct Gateway.Call calls to the same running
// server, in the same iteration. script/direct is the cost of code mode
// per call (the Starlark thread, argument checks, result parsing).
func BenchmarkCodeModeSequentialCalls(b *testing.B) {
	const n = 1000
	g := benchGateway(b, "sandbox: {maxCalls: 1000}\n")
	script := fmt.Sprintf("for i in range(%d):\n    fx.echo(text='x')\n", n)
	args := json.RawMessage(`{"text":"x"}`)
	benchExecute(b, g, "fx.echo(text='warm')")
	var inScript, direct time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		res := benchExecute(b, g, script)
		inScript += time.Since(t0)
		if len(res.Calls) != n {
			b.Fatalf("%d calls", len(res.Calls))
		}
		t0 = time.Now()
		for j := 0; j < n; j++ {
			if _, err := g.Call(context.Background(), CallRequest{Capability: "fx__echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
		direct += time.Since(t0)
	}
	calls := float64(b.N * n)
	b.ReportMetric(float64(inScript.Nanoseconds())/calls, "script-ns/call")
	b.ReportMetric(float64(direct.Nanoseconds())/calls, "direct-ns/call")
	b.ReportMetric(float64(inScript)/float64(direct), "script/direct")
}

// BenchmarkCodeModeParallel: 50 calls of a tool that takes 20 ms, through
// parallel(limit=8) against a loop in the same kind of script. speedup is
// sequential time over parallel time (8 at once: about 7 rounds, not 50).
func BenchmarkCodeModeParallel(b *testing.B) {
	g := benchGateway(b, "")
	par := `outs = parallel([("fx__slow", {"ms": 20, "steps": 1}) for i in range(50)], limit=8)
result = len([o for o in outs if o.ok])`
	seq := `n = 0
for i in range(50):
    fx.slow(ms=20, steps=1)
    n += 1
result = n`
	benchExecute(b, g, "fx.slow(ms=1, steps=1)")
	var p, s time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		res := benchExecute(b, g, par)
		p += time.Since(t0)
		if string(res.Result) != "50" {
			b.Fatalf("parallel result %s", res.Result)
		}
		t0 = time.Now()
		benchExecute(b, g, seq)
		s += time.Since(t0)
	}
	b.ReportMetric(float64(p.Milliseconds())/float64(b.N), "parallel-ms/run")
	b.ReportMetric(float64(s.Milliseconds())/float64(b.N), "sequential-ms/run")
	b.ReportMetric(float64(s)/float64(p), "speedup")
}
