package gateway

// This file is developer tooling for filter authors, outside any gateway:
// 'sluice filter test' and 'sluice filter bench' run one module over a
// given input with the host the gateway would use, and CompileCacheDir
// names the compilation cache they share with it.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"sluice/gateway/config"
	"sluice/gateway/proc"
	"sluice/wasm"
)

// CompileCacheDir is where filter hosts keep wazero's compilation cache for
// the environment getenv describes ("" when no cache directory is known).
func CompileCacheDir(getenv func(string) string) string {
	d, err := config.CacheDir(getenv)
	if err != nil || d == "" {
		return ""
	}
	return filepath.Join(d, "wazero")
}

// FilterTestRequest describes one filter run outside the gateway (sluice
// filter test and bench).
type FilterTestRequest struct {
	Module   string          // builtin:NAME or a path to a .wasm file
	SHA256   string          // optional pin of a path module
	Config   json.RawMessage // the filter's config (JSON); nil = none
	Input    []byte          // a CallToolResult JSON, or plain text (then wrapped as one text item)
	Stage    string          // "result" or "context"; "" = the built-in's stage, else "result"
	Mode     string          // "text" or "result-json"; "" = the built-in's mode, else "text"
	CacheDir string          // wazero compilation cache; "" = compile in memory
	Timeout  time.Duration   // per-call deadline; 0 = the gateway's (wasm.DefaultTimeout)
}

// FilterTestResult is the outcome of FilterTest.
type FilterTestResult struct {
	Name        string          `json:"name"`
	Stage       string          `json:"stage"`
	Mode        string          `json:"mode"`
	Status      string          `json:"status"` // replaced, pass, blocked or failed
	Reason      string          `json:"reason,omitempty"`
	Error       string          `json:"error,omitempty"`
	Wrapped     bool            `json:"wrapped,omitempty"` // the input was text, wrapped as a result
	Output      json.RawMessage `json:"output,omitempty"`  // the result that goes on (nil when blocked or failed)
	InputBytes  int             `json:"inputBytes"`
	OutputBytes int             `json:"outputBytes"`
	Offloads    int             `json:"offloads"`       // offload_put calls (kept in memory only)
	Offloaded   int             `json:"offloadedBytes"` // bytes handed to offload_put
	LoadTime    time.Duration   `json:"loadNs"`
	CallTime    time.Duration   `json:"callNs"`
}

// FilterTest loads one filter on a private host and runs it once over the
// input. Offloaded bytes are counted and dropped (their handles cannot be
// read back). The error is for what prevents the run (bad request, module
// that does not load); a failing call is reported in the result.
func FilterTest(ctx context.Context, req FilterTestRequest) (*FilterTestResult, error) {
	t, err := newFilterTester(ctx, req)
	if err != nil {
		return nil, err
	}
	defer t.close()
	res := &FilterTestResult{Name: t.name, Stage: t.meta.Stage, Mode: string(t.f.Mode()), Wrapped: t.wrapped, InputBytes: len(t.input), LoadTime: t.loadTime}
	start := time.Now()
	out, err := t.f.Apply(ctx, t.input, t.meta)
	res.CallTime = time.Since(start)
	res.Offloads, res.Offloaded = int(t.offloads.Load()), int(t.offloaded.Load())
	switch {
	case err != nil:
		res.Status, res.Error = "failed", err.Error()
	case out.Status == wasm.StatusBlocked:
		res.Status, res.Reason = "blocked", out.Reason
	default:
		res.Status = statusName(out.Status)
		res.Output = json.RawMessage(out.Data)
		res.OutputBytes = len(out.Data)
	}
	return res, nil
}

// FilterBenchRequest describes a benchmark of one filter.
type FilterBenchRequest struct {
	FilterTestRequest
	N int // measured calls of each (filter and baseline); default 200
}

// FilterBenchResult reports per-call cost against a pass-through guest in
// the same mode on the same pooled host: the ratio is what the filter's own
// work costs over the ABI's floor.
type FilterBenchResult struct {
	Name           string        `json:"name"`
	Mode           string        `json:"mode"`
	N              int           `json:"n"`
	InputBytes     int           `json:"inputBytes"`
	Status         string        `json:"status"`
	Median         time.Duration `json:"medianNs"`
	P90            time.Duration `json:"p90Ns"`
	BaselineMedian time.Duration `json:"baselineMedianNs"`
	BaselineP90    time.Duration `json:"baselineP90Ns"`
	Ratio          float64       `json:"ratio"` // Median / BaselineMedian
	LoadTime       time.Duration `json:"loadNs"`
}

// DefaultBenchCalls is FilterBench's default number of measured calls.
const DefaultBenchCalls = 200

// FilterBench measures a filter's per-call cost (pooled instances, after a
// warm-up) against a pass-through baseline, alternating the two.
func FilterBench(ctx context.Context, req FilterBenchRequest) (*FilterBenchResult, error) {
	n := req.N
	if n <= 0 {
		n = DefaultBenchCalls
	}
	t, err := newFilterTester(ctx, req.FilterTestRequest)
	if err != nil {
		return nil, err
	}
	defer t.close()
	base, err := t.host.Load(ctx, wasm.Spec{Name: "pass-through baseline", Module: passThroughModule, Mode: t.f.Mode(), OnError: wasm.FailOpen})
	if err != nil {
		return nil, &Error{Kind: KindGateway, Message: "loading the pass-through baseline: " + err.Error(), Err: err}
	}
	defer base.Close(ctx)
	res := &FilterBenchResult{Name: t.name, Mode: string(t.f.Mode()), N: n, InputBytes: len(t.input), LoadTime: t.loadTime}
	ft := make([]time.Duration, 0, n)
	bt := make([]time.Duration, 0, n)
	const warm = 5
	for i := 0; i < n+warm; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s := time.Now()
		out, err := t.f.Apply(ctx, t.input, t.meta)
		d := time.Since(s)
		if err != nil {
			return nil, &Error{Kind: KindFilter, Message: fmt.Sprintf("filter %s failed during the benchmark (call %d): %v", t.name, i+1, err), Err: err}
		}
		res.Status = statusName(out.Status)
		s = time.Now()
		if _, err := base.Apply(ctx, t.input, t.meta); err != nil {
			return nil, &Error{Kind: KindGateway, Message: "the pass-through baseline failed: " + err.Error(), Err: err}
		}
		b := time.Since(s)
		if i >= warm {
			ft, bt = append(ft, d), append(bt, b)
		}
	}
	slices.Sort(ft)
	slices.Sort(bt)
	res.Median, res.P90 = quantile(ft, 0.5), quantile(ft, 0.9)
	res.BaselineMedian, res.BaselineP90 = quantile(bt, 0.5), quantile(bt, 0.9)
	if res.BaselineMedian > 0 {
		res.Ratio = float64(res.Median) / float64(res.BaselineMedian)
	}
	return res, nil
}

func statusName(s wasm.Status) string {
	switch s {
	case wasm.StatusPass:
		return "pass"
	case wasm.StatusBlocked:
		return "blocked"
	}
	return "replaced"
}

// quantile of sorted durations (nearest rank).
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := int(q*float64(len(d))+0.5) - 1
	return d[max(0, min(len(d)-1, i))]
}

// filterTester is one filter loaded on a private host for test and bench.
type filterTester struct {
	host      *wasm.Host
	f         *wasm.Filter
	name      string
	input     []byte
	wrapped   bool
	meta      wasm.Meta
	loadTime  time.Duration
	offloads  atomic.Int64
	offloaded atomic.Int64
}

func newFilterTester(ctx context.Context, req FilterTestRequest) (*filterTester, error) {
	spec := wasm.Spec{Name: req.Module, Config: req.Config, SHA256: req.SHA256, Mode: wasm.Mode(req.Mode), Timeout: req.Timeout}
	stage := req.Stage
	if name, ok := strings.CutPrefix(req.Module, config.BuiltinPrefix); ok {
		if _, ok := wasm.Builtin(name); !ok {
			return nil, &Error{Kind: KindBadInput, Message: fmt.Sprintf("unknown built-in filter %q (known: %s)", name, strings.Join(wasm.BuiltinNames(), ", "))}
		}
		spec.Builtin = name
		if stage == "" && name == "shape" {
			stage = config.StageContext
		}
	} else {
		if req.Module == "" {
			return nil, &Error{Kind: KindBadInput, Message: "no filter module given", Remedy: fixText("pass builtin:NAME or a path to a .wasm file")}
		}
		b, err := readModule(req.Module)
		if err != nil {
			return nil, &Error{Kind: KindBadInput, Message: fmt.Sprintf("cannot read filter module %s: %v", req.Module, err), Err: err}
		}
		spec.Module = b
	}
	if stage == "" {
		stage = config.StageResult
	}
	if stage != config.StageResult && stage != config.StageContext {
		return nil, &Error{Kind: KindBadInput, Message: fmt.Sprintf("stage %q is not result or context", stage)}
	}
	if req.Mode != "" && req.Mode != string(wasm.ModeText) && req.Mode != string(wasm.ModeResultJSON) {
		return nil, &Error{Kind: KindBadInput, Message: fmt.Sprintf("mode %q is not text or result-json", req.Mode)}
	}
	if len(req.Config) > 0 && !json.Valid(req.Config) {
		return nil, &Error{Kind: KindBadInput, Message: "the filter config is not valid JSON"}
	}
	t := &filterTester{name: req.Module, meta: wasm.Meta{Server: "test", Tool: "tool", Stage: stage, RequestID: "test"}}
	t.input, t.wrapped = asResult(req.Input)
	cache := req.CacheDir
	if cache != "" {
		if err := proc.MkdirPrivate(cache); err != nil {
			cache = ""
		}
	}
	start := time.Now()
	h, err := wasm.NewHost(ctx, &wasm.Options{CacheDir: cache, Offload: func(_ context.Context, data []byte) (string, error) {
		n := t.offloads.Add(1)
		t.offloaded.Add(int64(len(data)))
		return fmt.Sprintf("test-offload-%d", n), nil
	}})
	if err != nil {
		return nil, &Error{Kind: KindGateway, Message: "cannot start the filter host: " + err.Error(), Err: err}
	}
	f, err := h.Load(ctx, spec)
	if err != nil {
		h.Close(ctx)
		return nil, &Error{Kind: KindFilter, Message: fmt.Sprintf("filter %s failed to load: %v", req.Module, err), Err: err}
	}
	t.host, t.f, t.loadTime = h, f, time.Since(start)
	return t, nil
}

func (t *filterTester) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t.f.Close(ctx)
	t.host.Close(ctx)
}

// asResult returns input when it is a JSON object (a CallToolResult), else
// wraps it as a result with one text item.
func asResult(in []byte) ([]byte, bool) {
	t := bytes.TrimSpace(in)
	if len(t) > 0 && t[0] == '{' && json.Valid(t) {
		return t, false
	}
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": string(in)}}})
	return b, true
}

// passThroughModule is the benchmark baseline: a minimal mcpf v1 guest whose
// mcpf_filter returns status 1 (pass). Hand-assembled:
//
//	(module (memory (export "memory") 1)
//	  (func (export "mcpf_abi_v1") (result i32) (i32.const 1))
//	  (func (export "mcpf_filter") (result i32) (i32.const 1)))
var passThroughModule = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
	0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7f, // type: () -> i32
	0x03, 0x03, 0x02, 0x00, 0x00, // two functions of type 0
	0x05, 0x03, 0x01, 0x00, 0x01, // one memory, min 1 page
	0x07, 0x26, 0x03, // three exports
	0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00,
	0x0b, 'm', 'c', 'p', 'f', '_', 'a', 'b', 'i', '_', 'v', '1', 0x00, 0x00,
	0x0b, 'm', 'c', 'p', 'f', '_', 'f', 'i', 'l', 't', 'e', 'r', 0x00, 0x01,
	0x0a, 0x0b, 0x02, // code: two bodies
	0x04, 0x00, 0x41, 0x01, 0x0b,
	0x04, 0x00, 0x41, 0x01, 0x0b,
}
