package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"sluice/wasm/guest"
)

// pipeProse is a CallToolResult of about n bytes of prose and log lines.
func pipeProse(n int) []byte {
	line := `2026-11-30T03:58:25Z INFO fetched "page" 17 of 40 — naïve café résumé; status=ok bytes=65536` + "\n"
	text := strings.Repeat(line, n/len(line)+1)[:n]
	j, _ := json.Marshal(text)
	return []byte(`{"content":[{"type":"text","text":` + string(j) + `}],"isError":false}`)
}

// pipelineShape runs raw through the pipeline as Gateway.call does; done
// gives the result back, as the fronts do once their answer is encoded.
func pipelineShape(g *Gateway, ctx context.Context, raw []byte) (json.RawMessage, func()) {
	out, held, err := g.filterResult(ctx, "fx__echo", raw, true)
	if err != nil {
		panic(err)
	}
	return out, held.Release
}

// BenchmarkPipelineShape: a 64 KiB result through the gateway's result
// pipeline (the default shape filter, the wasm built-in, offloading to the
// results store) as a tool call's result reaches the fronts, the result
// given back once used where the gateway does so, against guest.Shaper
// run natively with the same store; the two alternate. x-native: p50
// ratio; x-native-cpu: process CPU while each side ran.
func BenchmarkPipelineShape(b *testing.B) {
	g := benchGateway(b, "")
	ctx := context.Background()
	raw := pipeProse(64 << 10)
	native := &guest.Shaper{Offload: g.pipeline.store.Put}
	if out, done := pipelineShape(g, ctx, raw); len(out) == 0 || len(out) > DefaultShapeBudget {
		b.Fatalf("not shaped: %d bytes", len(out))
	} else {
		done()
	}
	var per, nat []time.Duration
	var cpu, ncpu time.Duration
	for b.Loop() {
		c0, t0 := processCPU(), time.Now()
		out, done := pipelineShape(g, ctx, raw)
		if len(out) == 0 {
			b.Fatal("no result")
		}
		done()
		per = append(per, time.Since(t0))
		c1, t1 := processCPU(), time.Now()
		if _, _, err := native.Shape(raw); err != nil {
			b.Fatal(err)
		}
		nat = append(nat, time.Since(t1))
		cpu, ncpu = cpu+c1-c0, ncpu+processCPU()-c1
	}
	p50 := func(d []time.Duration) float64 { d = slices.Clone(d); slices.Sort(d); return float64(d[len(d)/2]) }
	b.ReportMetric(p50(per), "p50-ns/op")
	b.ReportMetric(p50(nat), "native-ns/op")
	b.ReportMetric(p50(per)/p50(nat), "x-native")
	if ncpu > 0 {
		b.ReportMetric(float64(cpu)/float64(len(per)), "cpu-ns/op")
		b.ReportMetric(float64(ncpu)/float64(len(nat)), "native-cpu-ns/op")
		b.ReportMetric(float64(cpu)/float64(ncpu), "x-native-cpu")
	}
}
