package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestLimits(t *testing.T) {
	cases := []struct {
		name    string
		lim     Limits
		src     string
		limit   string
		message string
	}{
		{"steps", Limits{MaxSteps: 10_000}, "n = 0\nwhile True:\n    n += 1\n", LimitSteps, "maxSteps 10000"},
		{"steps default", Limits{}, "n = 0\nwhile True:\n    n += 1\n", LimitSteps, "maxSteps 10000000"},
		{"time", Limits{Timeout: 50 * time.Millisecond, MaxSteps: 1 << 62}, "n = 0\nwhile True:\n    n += 1\n", LimitTime, "longer than 50ms"},
		{"time during a call", Limits{Timeout: 50 * time.Millisecond}, "r = fs.slow(n=1)\nr = fs.slow(n=1)\nr = fs.slow(n=1)\n", LimitTime, "timeoutMs 50"},
		{"calls", Limits{MaxCalls: 3}, "for i in range(10):\n    fs.list()\n", LimitCalls, "maxCalls 3"},
		{"calls via parallel", Limits{MaxCalls: 5}, `r = parallel([("fs__list", None)] * 6)`, LimitCalls, "6 more requested"},
		{"result bytes", Limits{MaxResultBytes: 1000}, "r = fs.big(n=5000)\n", LimitResultBytes, "over maxResultBytes"},
		{"output bytes", Limits{MaxOutputBytes: 100}, `result = "x" * 200`, LimitOutputBytes, "maxOutputBytes"},
		{"depth", Limits{}, "def f(n):\n    return f(n + 1)\nf(0)\n", LimitDepth, "maxDepth 64"},
		{"depth small", Limits{MaxDepth: 10}, "def f(n):\n    return 0 if n == 0 else f(n - 1)\nresult = f(20)\n", LimitDepth, "maxDepth 10"},
		{"depth at the ceiling", Limits{MaxDepth: 1 << 30}, "def f(n):\n    return f(n + 1)\nf(0)\n", LimitDepth, "maxDepth 10000"},
		{"depth through builtins", Limits{MaxDepth: 20}, "def f(x):\n    return sorted([1, 2], key=f)\nf(0)\n", LimitDepth, "maxDepth 20"},
		{"int size", Limits{}, "x = 3\nfor i in range(40):\n    x = x * x\n", LimitMemory, "more than 524288 bits"},
		{"memory", Limits{MaxMemoryBytes: 16 << 20}, "s = 'x' * 1000000\nfor i in range(40):\n    s = s + s\n", LimitMemory, "maxMemoryBytes 16.0 MiB"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost()
			h.latency = 40 * time.Millisecond
			r := Run(context.Background(), h, "lim.star", tc.src, &tc.lim)
			if r.Error == nil {
				t.Fatalf("no error; result %s", r.Result)
			}
			if r.Error.Kind != KindLimit || r.Error.Limit != tc.limit {
				t.Fatalf("got %s/%s %q, want limit/%s", r.Error.Kind, r.Error.Limit, r.Error.Message, tc.limit)
			}
			if !strings.Contains(r.Error.Message, tc.message) {
				t.Errorf("message %q does not contain %q", r.Error.Message, tc.message)
			}
			if r.Error.Remedy == "" {
				t.Errorf("no remedy for %s", tc.limit)
			}
			if r.Error.Line == 0 && tc.limit != LimitOutputBytes {
				t.Errorf("no line for %s", tc.limit)
			}
			if !errors.Is(r.Error, ErrLimit) {
				t.Errorf("errors.Is(ErrLimit) = false")
			}
		})
	}
}

func TestDepthWithinLimitPasses(t *testing.T) {
	src := "def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\nresult = f(50)\n"
	r := Run(context.Background(), newFakeHost(), "d.star", src, nil)
	if r.Error != nil || string(r.Result) != "50" {
		t.Fatalf("got %s, %v", r.Result, r.Error)
	}
	if r.Stats.MaxDepth < 50 {
		t.Errorf("stats.maxDepth = %d, want >= 50", r.Stats.MaxDepth)
	}
}

func TestLogLimit(t *testing.T) {
	r := Run(context.Background(), newFakeHost(), "log.star", "for i in range(1000):\n    print('line', i, 'x' * 50)\nprint([['y' * 1000] * 1000] * 1000)\nresult = 1\n", &Limits{MaxLogBytes: 1000})
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if !r.LogsTruncated {
		t.Fatal("logs not marked truncated")
	}
	total := 0
	for _, l := range r.Logs[:len(r.Logs)-1] {
		total += len(l)
	}
	if total > 1000 {
		t.Errorf("kept %d log bytes, limit 1000", total)
	}
	if last := r.Logs[len(r.Logs)-1]; !strings.Contains(last, "maxLogBytes 1000") {
		t.Errorf("last log line %q does not name the limit", last)
	}
}

func TestErrorKinds(t *testing.T) {
	cases := []struct {
		name, src  string
		kind       Kind
		capability string
		message    string
		line       int
	}{
		{"syntax", "x = (\n", KindSyntax, "", "got end of file", 2},
		{"undefined", "y = nope + 1\n", KindSyntax, "", "undefined: nope", 1},
		{"runtime", "x = 1\ny = x + 'a'\n", KindRuntime, "", "unknown binary op: int + string", 2},
		{"fail", "fail('boom')\n", KindRuntime, "", "boom", 1},
		{"bad argument type", "v = 1\ndb.query(sql=v)\n", KindRuntime, "db__query", "argument 'sql' must be string", 2},
		{"bad literal argument type", "db.query(sql=1)\n", KindSyntax, "", "argument 'sql' must be string", 1},
		{"tool", "x = 1\nfs.fail()\n", KindTool, "fs__fail", "no such file", 2},
		{"transport", "fs.broken()\n", KindTool, "fs__broken", "server exited", 1},
		{"admission up front", "print('before')\nfs.write(path='a')\n", KindAdmission, "fs__write", "needs approval", 0},
		{"admission dynamic", "c = 'fs__' + 'write'\nr = call(c, {})\nresult = r\nfs.read_text_file(path=r.error)\n", KindTool, "", "", 0},
		{"load", "load('x.star', 'y')\n", KindSyntax, "", "load", 1},
		{"admission at call time", "f = getattr(fs, 'wr' + 'ite')\nf(path='a')\n", KindAdmission, "fs__write", "needs approval", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost()
			r := Run(context.Background(), h, "k.star", tc.src, nil)
			if tc.name == "admission dynamic" {
				// call() returns the refusal as a value, never raises
				if r.Error != nil {
					t.Fatalf("unexpected error %v", r.Error)
				}
				var v map[string]any
				_ = json.Unmarshal(r.Result, &v)
				if v["ok"] != false || v["kind"] != "admission" || !strings.Contains(fmt.Sprint(v["error"]), "needs approval") {
					t.Fatalf("result %s", r.Result)
				}
				return
			}
			if r.Error == nil {
				t.Fatalf("no error, result %s", r.Result)
			}
			if r.Error.Kind != tc.kind || !strings.Contains(r.Error.Message, tc.message) || r.Error.Capability != tc.capability {
				t.Fatalf("got %+v, want kind %s capability %q message containing %q", r.Error, tc.kind, tc.capability, tc.message)
			}
			if tc.line != 0 && r.Error.Line != tc.line {
				t.Errorf("line %d, want %d", r.Error.Line, tc.line)
			}
			if tc.name == "admission up front" {
				if r.Error.Remedy == "" || len(r.Logs) != 0 || len(h.calls) != 0 {
					t.Errorf("admission: remedy %q, logs %v, calls %v (want remedy, nothing run)", r.Error.Remedy, r.Logs, h.calls)
				}
			}
			if tc.kind == KindRuntime || tc.kind == KindTool {
				if len(r.Error.Backtrace) == 0 {
					t.Errorf("no backtrace")
				}
				for _, f := range r.Error.Backtrace {
					if strings.Contains(f, "<op") || strings.Contains(f, ".go:") {
						t.Errorf("backtrace leaks internals: %q", f)
					}
				}
			}
		})
	}
}

func TestPreflight(t *testing.T) {
	h := newFakeHost()
	src := `rows = db.qeury(sql="x")
r = db.query(sql="x", limt=3)
r = db.query(limit=3)
p = fs.read_text_file(path="a", headd=1)
c = call("db__quer", {})
d = call("db__query", {"sq": 1})
e = db.query({"sql": "x", "limt": 1})
f = db.query(sql=1, mode="slow", limit=-5)
g = fs.read_text_file(path="a", tags=["x", 2])
`
	r := Run(context.Background(), h, "p.star", src, nil)
	if r.Error == nil || r.Error.Kind != KindSyntax {
		t.Fatalf("want syntax error, got %+v", r.Error)
	}
	want := []struct {
		line int
		text string
	}{
		{1, "did you mean db.query"},
		{2, `no argument "limt" (did you mean "limit"?)`},
		{3, "missing required argument 'sql'"},
		{4, `no argument "headd" (did you mean "head"?)`},
		{5, `unknown tool "db__quer" (did you mean "db__query"?)`},
		{6, `no argument "sq"`},
		{7, `no argument "limt"`},
		{8, "argument 'sql' must be string, got integer"},
		{8, `argument 'mode' must be one of "fast", "exact", got "slow"`},
		{9, "argument 'tags'[1] must be string, got integer"},
	}
	if len(r.Error.Problems) != len(want) {
		t.Fatalf("problems %v, want %d", r.Error.Problems, len(want))
	}
	for i, w := range want {
		p := r.Error.Problems[i]
		if p.Line != w.line || !strings.Contains(p.Message, w.text) {
			t.Errorf("problem %d = %v, want line %d containing %q", i, p, w.line, w.text)
		}
	}
	if len(h.calls) != 0 || len(h.admitted) != 0 {
		t.Errorf("pre-flight failure still called %v / admitted %v", h.calls, h.admitted)
	}

	// An unknown module does not hide the other problems.
	_, err := Check("mixed.star", `x = dbb.query(sql="x")
r = db.query(sql="x", limt=3)
y = undefined_name + 1
c = call("db__quer", {})
`, h.Servers())
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindSyntax {
		t.Fatalf("mixed: %v", err)
	}
	mixed := []struct {
		line int
		text string
	}{
		{1, "undefined: dbb (did you mean server module db?)"},
		{2, `no argument "limt"`},
		{3, "undefined: undefined_name"},
		{4, `unknown tool "db__quer"`},
	}
	if len(e.Problems) != len(mixed) || e.Line != 1 {
		t.Fatalf("mixed: problems %v (line %d), want %d", e.Problems, e.Line, len(mixed))
	}
	for i, w := range mixed {
		if p := e.Problems[i]; p.Line != w.line || p.Column == 0 || !strings.Contains(p.Message, w.text) {
			t.Errorf("mixed problem %d = %v, want line %d containing %q", i, p, w.line, w.text)
		}
	}

	pf, err := Check("ok.star", `a = db.query(sql="x")
b = call("fs__list")
c = parallel([("fs__slow", {"n": 1}), {"tool": fs.image}])
f = fs.read_text_file
`, h.Servers())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(pf.Capabilities, ","); got != "db__query,fs__image,fs__list,fs__read_text_file,fs__slow" || pf.Dynamic {
		t.Errorf("capabilities %s dynamic %v", got, pf.Dynamic)
	}
	pf, err = Check("dyn.star", "t = 'fs__list'\nr = call(t)\n", h.Servers())
	if err != nil || !pf.Dynamic {
		t.Errorf("dynamic call not flagged: %+v %v", pf, err)
	}
	// a global shadowing a module is not a tool reference
	if _, err := Check("shadow.star", "db = struct(nothing=1)\nx = db.nothing\n", h.Servers()); err != nil {
		t.Errorf("shadowed module reported: %v", err)
	}
	_, err = Check("u.star", "x = dbb.query(sql='1')\n", h.Servers())
	if err == nil || !strings.Contains(err.Error(), "did you mean server module db") {
		t.Errorf("unknown module: %v", err)
	}
}

func TestParallelOrderAndBounds(t *testing.T) {
	h := newFakeHost()
	h.maxConc["fs"] = 4
	src := `res = parallel([{"tool": "fs__slow", "args": {"n": i}} for i in range(50)], limit=8)
result = [r.value["n"] for r in res]`
	r := Run(context.Background(), h, "par.star", src, nil)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	var got []int
	if err := json.Unmarshal(r.Result, &got); err != nil || len(got) != 50 {
		t.Fatalf("result %s", r.Result)
	}
	for i, n := range got {
		if n != i {
			t.Fatalf("result %d is %d: not in input order", i, n)
		}
	}
	if h.peak["fs"] > 4 || h.peak["fs"] < 2 {
		t.Errorf("peak in flight for fs = %d, want 2..4 (server max 4)", h.peak["fs"])
	}
	if len(r.Calls) != 50 || r.Stats.Calls != 50 {
		t.Errorf("calls recorded %d, stats %d", len(r.Calls), r.Stats.Calls)
	}

	// limit bounds it when the server allows more
	h = newFakeHost()
	h.maxConc["fs"] = 100
	r = Run(context.Background(), h, "par.star", src, nil)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if h.peak["fs"] > 8 {
		t.Errorf("peak %d > limit 8", h.peak["fs"])
	}
	// and Limits.MaxConcurrency caps limit=
	h = newFakeHost()
	h.maxConc["fs"] = 100
	r = Run(context.Background(), h, "par.star", src, &Limits{MaxConcurrency: 3})
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if h.peak["fs"] > 3 {
		t.Errorf("peak %d > MaxConcurrency 3", h.peak["fs"])
	}
	// a server that allows one call at a time gets one
	h = newFakeHost()
	h.maxConc["fs"] = 0
	r = Run(context.Background(), h, "par.star", `r = parallel([("fs__slow", {"n": i}) for i in range(6)])`, nil)
	if r.Error != nil || h.peak["fs"] != 1 {
		t.Errorf("server max 0 (=1): peak %d, err %v", h.peak["fs"], r.Error)
	}
}

func TestCancelStopsInFlightCalls(t *testing.T) {
	for _, src := range []string{
		"r = fs.slow(n=1)\n",
		"r = parallel([('fs__slow', {'n': i}) for i in range(20)])\n",
		"n = 0\nwhile True:\n    n += 1\n",
	} {
		h := newFakeHost()
		h.latency = time.Hour
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(30*time.Millisecond, cancel)
		done := make(chan *Result, 1)
		go func() { done <- Run(ctx, h, "c.star", src, &Limits{MaxSteps: 1 << 62}) }()
		select {
		case r := <-done:
			if r.Error == nil || r.Error.Kind != KindCancelled || !errors.Is(r.Error, ErrCancelled) {
				t.Errorf("%q: got %+v, want cancelled", src, r.Error)
			}
		case <-time.After(5 * time.Second): // hang guard
			t.Fatalf("%q: run did not stop after cancel", src)
		}
	}
}

func TestResultShapes(t *testing.T) {
	cases := []struct{ src, want string }{
		{"x = 1\n", "null"},
		{"result = None\n", "null"},
		{"result = {'a': [1, 2.5, True, None, 'é'], 'b': (1,)}\n", `{"a":[1,2.5,true,null,"é"],"b":[1]}`},
		{"result = call('fs__list')\n", `{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"error":null,"kind":null,"ok":true,"value":["a","b"]}`},
		{"result = json.decode('[1e400]')\n", `[1e400]`},
	}
	for _, tc := range cases {
		r := Run(context.Background(), newFakeHost(), "r.star", tc.src, nil)
		if r.Error != nil || string(r.Result) != tc.want {
			t.Errorf("%q: got %s %v, want %s", tc.src, r.Result, r.Error, tc.want)
		}
	}
	r := Run(context.Background(), newFakeHost(), "r.star", "x = 1\n", nil)
	if b, _ := json.Marshal(r); !strings.Contains(string(b), `"logs":[],"calls":[]`) {
		t.Errorf("empty logs/calls not encoded as []: %s", b)
	}
	if len(r.Notes) == 0 {
		t.Errorf("no note about the missing result")
	}
	r = Run(context.Background(), newFakeHost(), "r.star", "result = {1: 2}\n", nil)
	if r.Error == nil || r.Error.Kind != KindRuntime {
		t.Errorf("unencodable result: %+v", r.Error)
	}
	if r := Run(context.Background(), nil, "r.star", "result = 1", nil); r.Error == nil {
		t.Errorf("nil host accepted")
	}
}

type panicHost struct{ trivialHost }

func (panicHost) Call(context.Context, string, json.RawMessage) (CallResult, error) {
	panic("boom")
}

func TestHostPanicIsAToolError(t *testing.T) {
	for _, src := range []string{"t.echo(i=1)\n", "r = parallel([('t__echo', {'i': 1})])\nresult = r[0].error\n"} {
		r := Run(context.Background(), panicHost{}, "p.star", src, nil)
		if r.Error != nil {
			if r.Error.Kind != KindTool || !strings.Contains(r.Error.Message, "the host panicked") {
				t.Errorf("%q: %+v", src, r.Error)
			}
		} else if !strings.Contains(string(r.Result), "the host panicked") {
			t.Errorf("%q: result %s", src, r.Result)
		}
	}
}

func TestLimitDefaults(t *testing.T) {
	got := (*Limits)(nil).withDefaults()
	want := Limits{MaxSteps: 10_000_000, Timeout: 30 * time.Second, MaxCalls: 200, MaxResultBytes: 1 << 20,
		MaxLogBytes: 64 << 10, MaxOutputBytes: 1 << 20, MaxMemoryBytes: 256 << 20, MaxConcurrency: 8, MaxDepth: 64}
	if got != want {
		t.Errorf("defaults\n got %+v\nwant %+v", got, want)
	}
	if z := (&Limits{}).withDefaults(); z != want {
		t.Errorf("zero Limits %+v", z)
	}
	custom := Limits{MaxSteps: 5, Timeout: time.Second, MaxCalls: 1, MaxResultBytes: 2, MaxLogBytes: 3, MaxOutputBytes: 4, MaxMemoryBytes: 5, MaxConcurrency: 6, MaxDepth: 7}
	if c := custom.withDefaults(); c != custom {
		t.Errorf("custom limits changed: %+v", c)
	}
	if d := (&Limits{MaxDepth: 1 << 30}).withDefaults(); d.MaxDepth != MaxDepthCeiling {
		t.Errorf("MaxDepth not capped: %d", d.MaxDepth)
	}
}

func TestCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h := newFakeHost()
	r := Run(ctx, h, "c.star", "fs.list()\nresult = 1\n", nil)
	if r.Error == nil || r.Error.Kind != KindCancelled || len(h.calls) != 0 {
		t.Fatalf("got %+v, calls %v", r.Error, h.calls)
	}
}

// TestNoGoroutineLeak: runs of every kind leave no goroutine behind.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	h := newFakeHost()
	h.latency = time.Millisecond
	for _, src := range []string{
		"result = 1\n",
		"r = parallel([('fs__slow', {'n': i}) for i in range(20)])\n",
		"while True:\n    pass\n",
		"fail('x')\n",
		"s = 'x' * 1000000\nfor i in range(40):\n    s = s + s\n",
	} {
		Run(context.Background(), h, "g.star", src, &Limits{MaxSteps: 100_000, MaxMemoryBytes: 16 << 20})
	}
	deadline := time.Now().Add(5 * time.Second) // hang guard
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines before, %d after", before, n)
	}
}

// TestParallelDictSpellings: parallel() takes the call tool's key names
// too, and says so when a dict mixes or misspells them.
func TestParallelDictSpellings(t *testing.T) {
	for _, tc := range []struct {
		name, src, wantResult, wantErr string
	}{
		{"tool/args", `r = parallel([{"tool": "fs__slow", "args": {"n": 1}}])`, `[1]`, ""},
		{"capability/arguments", `r = parallel([{"capability": "fs__slow", "arguments": {"n": 2}}])`, `[2]`, ""},
		{"mixed", `r = parallel([{"capability": fs.slow, "args": {"n": 3}}, {"tool": "fs__slow", "arguments": {"n": 4}}])`, `[3,4]`, ""},
		{"both", `r = parallel([{"tool": "fs__slow", "capability": "fs__slow"}])`, "", `both "tool" and "capability"`},
		{"unknown key", `r = parallel([{"tool": "fs__slow", "arg": {"n": 1}}])`, "", `unknown key "arg"`},
		{"no target", `r = parallel([{"args": {"n": 1}}])`, "", `neither "tool" nor "capability"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost()
			src := tc.src + "\nresult = [x.value[\"n\"] for x in r]\n"
			r := Run(context.Background(), h, "p.star", src, nil)
			if tc.wantErr != "" {
				if r.Error == nil || !strings.Contains(r.Error.Message, tc.wantErr) {
					t.Fatalf("error %+v, want one containing %q", r.Error, tc.wantErr)
				}
				return
			}
			if r.Error != nil || string(r.Result) != tc.wantResult {
				t.Fatalf("result %s error %+v, want %s", r.Result, r.Error, tc.wantResult)
			}
		})
	}
	// Pre-flight sees a literal target under either key.
	pf, err := Check("p.star", `r = parallel([{"capability": "fs__list"}, {"tool": "fs__slow"}])`, newFakeHost().Servers())
	if err != nil || strings.Join(pf.Capabilities, ",") != "fs__list,fs__slow" || pf.Dynamic {
		t.Fatalf("pre-flight %+v %v", pf, err)
	}
}
