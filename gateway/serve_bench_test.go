package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sluice/gateway/front"
	"sluice/gateway/mcp"
	"sluice/gateway/mcp/mcptest"
	"sluice/gateway/proc"
)

// benchDirect starts the fixture with the native client: the baseline a
// call through sluice serve is compared with.
func benchDirect(b *testing.B) *mcp.Client {
	b.Helper()
	exe, argv, err := mcptest.Command()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := mcp.Start(ctx, proc.Spec{Server: "direct", Command: exe, Args: argv, KillGrace: 300 * time.Millisecond, StdinGrace: 100 * time.Millisecond}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func benchServeCall(b *testing.B, a *agent) {
	raw := a.call("tools/call", `{"name":"fx__echo","arguments":{"text":"bench"}}`)
	if !strings.Contains(string(raw), `"text":"bench"`) {
		b.Fatalf("serve call: %s", raw)
	}
}

func benchDirectCall(b *testing.B, c *mcp.Client) {
	raw, err := c.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"bench"}`), nil)
	if err != nil || !strings.Contains(string(raw), `"text":"bench"`) {
		b.Fatalf("direct call: %v %s", err, raw)
	}
}

// BenchmarkServeStdioCall: one tools/call through sluice serve (front over
// stdio pipes, a real gateway, flat mode, the fixture as a real process)
// against the same call made directly with the native client, interleaved
// in one run. Reports both latencies, the latency sluice serve adds and
// the ratio.
func BenchmarkServeStdioCall(b *testing.B) {
	g := benchGateway(b, "")
	a := serveAgent(b, g, true, `{}`, nil)
	c := benchDirect(b)
	benchServeCall(b, a) // warm both paths
	benchDirectCall(b, c)
	var direct, served time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		benchDirectCall(b, c)
		t1 := time.Now()
		benchServeCall(b, a)
		direct += t1.Sub(t0)
		served += time.Since(t1)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(direct.Microseconds())/n, "direct-µs/call")
	b.ReportMetric(float64(served.Microseconds())/n, "serve-µs/call")
	b.ReportMetric(float64((served-direct).Microseconds())/n, "added-µs/call")
	b.ReportMetric(float64(served)/float64(direct), "serve/direct")
}

// BenchmarkServeStdioCall16: calls per second with 16 in flight, through
// sluice serve and directly, in one run; reports both rates and the ratio.
func BenchmarkServeStdioCall16(b *testing.B) {
	g := benchGateway(b, "")
	a := serveAgent(b, g, true, `{}`, nil)
	c := benchDirect(b)
	benchServeCall(b, a)
	benchDirectCall(b, c)
	const inflight = 16
	run := func(call func()) time.Duration {
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range inflight {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(b.N) {
					call()
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	b.ResetTimer()
	direct := run(func() { benchDirectCall(b, c) })
	served := run(func() { benchServeCall(b, a) })
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(n/direct.Seconds(), "direct-calls/s")
	b.ReportMetric(n/served.Seconds(), "serve-calls/s")
	b.ReportMetric((n/served.Seconds())/(n/direct.Seconds()), "serve/direct-throughput")
}

// benchCore runs call and direct in interleaved blocks of the same size
// (b.N calls each in all) and reports both latencies, what call adds, and
// this process's CPU per call on each side (where the platform reports
// it): the difference is what the gateway core costs per call, beside
// the client's own work and syscalls, which both sides share.
func benchCore(b *testing.B, direct, call func()) {
	call() // warm both paths
	direct()
	var dWall, cWall, dCPU, cCPU time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(500, b.N-done)
		c0, t0 := processCPU(), time.Now()
		for range n {
			direct()
		}
		c1, t1 := processCPU(), time.Now()
		for range n {
			call()
		}
		c2, t2 := processCPU(), time.Now()
		dWall += t1.Sub(t0)
		cWall += t2.Sub(t1)
		dCPU += c1 - c0
		cCPU += c2 - c1
		done += n
	}
	b.StopTimer()
	n := float64(b.N)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / n }
	b.ReportMetric(us(dWall), "direct-µs/call")
	b.ReportMetric(us(cWall), "gateway-µs/call")
	b.ReportMetric(us(cWall-dWall), "added-µs/call")
	if cCPU > 0 {
		b.ReportMetric(us(dCPU), "direct-cpu-µs/call")
		b.ReportMetric(us(cCPU), "gateway-cpu-µs/call")
		b.ReportMetric(us(cCPU-dCPU), "core-cpu-µs/call")
	}
}

// BenchmarkGatewayCall: Gateway.Call of the fixture's echo (a running
// server, no filters declared but the default shape, no dashboard, no
// tracer), as the CLI calls it, against the same call made directly with
// the native client.
func BenchmarkGatewayCall(b *testing.B) {
	g := benchGateway(b, "")
	c := benchDirect(b)
	ctx := context.Background()
	req := CallRequest{Capability: "fx__echo", Arguments: json.RawMessage(`{"text":"bench"}`)}
	benchCore(b, func() { benchDirectCall(b, c) }, func() {
		res, err := g.Call(ctx, req)
		if err != nil || !strings.Contains(string(res.Result), `"text":"bench"`) {
			b.Fatalf("gateway call: %v %+v", err, res)
		}
	})
}

// benchPeer is an agent request as the fronts hand it to the backend:
// no progress token, no elicitation.
type benchPeer struct{}

func (benchPeer) RequestID() string                   { return "r1" }
func (benchPeer) SessionID() string                   { return "" }
func (benchPeer) Conn() string                        { return "c1" }
func (benchPeer) ClientName() string                  { return "bench" }
func (benchPeer) ClientCapabilities() json.RawMessage { return json.RawMessage(`{}`) }
func (benchPeer) Supports(string) bool                { return false }
func (benchPeer) Progress(context.Context, float64, float64, string) error {
	return nil
}
func (benchPeer) Log(context.Context, string, string, json.RawMessage) error { return nil }
func (benchPeer) Elicit(context.Context, string, json.RawMessage) (bool, error) {
	return false, front.ErrUnsupported
}
func (benchPeer) Request(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, front.ErrUnsupported
}

// BenchmarkFrontendCall: what both fronts' fast paths run for one
// tools/call (the backend's Call with an agent's peer) against the same
// call made directly with the native client: "stdio" as sluice serve over
// stdio runs it, "http" with the metrics sluice serve --http records.
func BenchmarkFrontendCall(b *testing.B) {
	for _, metrics := range []bool{false, true} {
		name := "stdio"
		if metrics {
			name = "http"
		}
		b.Run(name, func(b *testing.B) {
			g := benchGateway(b, "")
			var m *front.Metrics
			if metrics {
				m = front.NewMetrics(nil)
				g.setMetrics(m)
			}
			fe := newFrontend(g, &frontendOptions{Flat: true, Metrics: m})
			b.Cleanup(func() { fe.Close() })
			c := benchDirect(b)
			ctx := context.Background()
			req := front.CallRequest{Capability: "fx__echo", Arguments: json.RawMessage(`{"text":"bench"}`)}
			benchCore(b, func() { benchDirectCall(b, c) }, func() {
				res, err := fe.Call(ctx, req, benchPeer{})
				if err != nil || !strings.Contains(string(res), `"text":"bench"`) {
					b.Fatalf("frontend call: %v %s", err, res)
				}
			})
		})
	}
}
