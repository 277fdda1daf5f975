package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// recordCatalog launches server id once through a scoped refresh, so later
// gateways answer from the recorded catalog, then closes everything.
func recordCatalog(t *testing.T, w *world, ids ...string) {
	t.Helper()
	g := w.open()
	for _, id := range ids {
		if _, err := g.Find(ctx(t), FindRequest{Server: id, Refresh: true}); err != nil {
			t.Fatal(err)
		}
	}
	if bad := g.Close(); len(bad) > 0 {
		t.Fatal(bad)
	}
	waitNoChildren(t)
}

func execute(t *testing.T, g *Gateway, script string) *ExecuteResult {
	t.Helper()
	res, err := g.Execute(ctx(t), ExecuteRequest{Script: script, Filename: "t.star"})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func mustOK(t *testing.T, res *ExecuteResult) {
	t.Helper()
	if res.Error != nil {
		b, _ := json.MarshalIndent(res, "", "  ")
		t.Fatalf("run failed: %s", b)
	}
}

func TestExecuteCallsSeveralToolsAndLaunchesOnlyWhatItNames(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx") + fixture(t, "other"))
	g := w.open()
	// No catalog is recorded: the script names fx, so fx (only) is
	// launched once to list its tools; "other" never starts.
	res := execute(t, g, `
e = fx.echo(text="hello")
s = fx.add(a=12345678901234567890, b=0.5)
w = fx.structured()
print("echo said", e)
result = {"echo": e, "sum": s["sum"], "city": w["city"], "temp": w["temperature"]}
`)
	mustOK(t, res)
	var got map[string]json.RawMessage
	if err := json.Unmarshal(res.Result, &got); err != nil {
		t.Fatalf("result %s: %v", res.Result, err)
	}
	if string(got["echo"]) != `"hello"` || string(got["sum"]) != "12345678901234567890.5" || string(got["city"]) != `"Oslo"` || string(got["temp"]) != "-3.5" {
		t.Fatalf("result %s", res.Result)
	}
	if len(res.Calls) != 3 || res.Calls[0].Capability != "fx__echo" || !res.Calls[2].OK || res.Stats.Calls != 3 {
		t.Fatalf("calls %+v stats %+v", res.Calls, res.Stats)
	}
	if len(res.Logs) != 1 || res.Logs[0] != "echo said hello" {
		t.Fatalf("logs %q", res.Logs)
	}
	if len(res.Notes) == 0 || !strings.Contains(res.Notes[0], "server fx had no recorded catalog") {
		t.Fatalf("the launch for the catalog must be noted: %q", res.Notes)
	}
	if res.ResultBytes != len(res.Result) || res.ResultFiltered {
		t.Fatalf("pass-through filters: bytes %d filtered %v", res.ResultBytes, res.ResultFiltered)
	}
	if n := children(); n != 1 {
		t.Fatalf("%d servers running, want only fx", n)
	}
	// A script that names no server launches nothing more.
	res = execute(t, g, `result = sorted([3, 1, 2])`)
	mustOK(t, res)
	if string(res.Result) != "[1,2,3]" && string(res.Result) != "[1, 2, 3]" {
		t.Fatalf("result %s", res.Result)
	}
	if n := children(); n != 1 {
		t.Fatalf("%d servers running", n)
	}
}

func TestExecuteErrorsAsValuesAndParallel(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx") + "approve: [\"fx__fail\"]\n")
	g := w.open()
	res := execute(t, g, `
r = call("fx__fail")
ok = call(fx.echo, text="fine")
outs = parallel([("fx__slow", {"ms": 20, "steps": 1}) for i in range(6)] + [("fx__echo", {"text": "last"})], limit=4)
result = {
    "failed": [r.ok, r.kind, "on purpose" in r.error],
    "ok": [ok.ok, ok.value],
    "parallel": [o.ok for o in outs],
    "last": outs[-1].value,
}
`)
	mustOK(t, res)
	var got struct {
		Failed   []any  `json:"failed"`
		OK       []any  `json:"ok"`
		Parallel []bool `json:"parallel"`
		Last     string `json:"last"`
	}
	if err := json.Unmarshal(res.Result, &got); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Failed) != "[false tool true]" || fmt.Sprint(got.OK) != "[true fine]" || len(got.Parallel) != 7 || got.Last != "last" {
		t.Fatalf("result %s", res.Result)
	}
	for _, p := range got.Parallel {
		if !p {
			t.Fatalf("parallel %s", res.Result)
		}
	}
	if len(res.Calls) != 9 || res.Calls[0].OK {
		t.Fatalf("calls %+v", res.Calls)
	}
	// A failing tool called directly raises an error of kind tool.
	res = execute(t, g, "x = fx.fail()\nresult = 1\n")
	if res.Error == nil || res.Error.Kind != RunTool || res.Error.Capability != "fx__fail" || res.Error.Line != 1 || string(res.Result) != "null" {
		t.Fatalf("direct failure: %+v", res.Error)
	}
	// A capability computed at run time that needs approval comes back
	// as a refusal value: Call admits it with no approver.
	res = execute(t, g, `
name = "fx__" + "list_changed"
r = call(name)
result = [r.ok, r.kind]
`)
	mustOK(t, res)
	if string(res.Result) != `[false,"admission"]` {
		t.Fatalf("dynamic refusal: %s", res.Result)
	}
}

func TestExecuteRefusesApprovalUpFrontAndLaunchesNothing(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	recordCatalog(t, w, "fx")
	g := w.open()
	res := execute(t, g, `
a = fx.echo(text="side effect first?")
b = fx.fail()
result = [a, b]
`)
	if res.Error == nil || res.Error.Kind != RunAdmission || res.Error.Capability != "fx__fail" {
		t.Fatalf("want an admission error for fx__fail, got %+v", res.Error)
	}
	if !strings.Contains(res.Error.Remedy, "approve:") || strings.Contains(res.Error.Remedy, "--yes") {
		t.Fatalf("remedy %q", res.Error.Remedy)
	}
	if len(res.Calls) != 0 {
		t.Fatalf("nothing may run before admission: %+v", res.Calls)
	}
	if n := children(); n != 0 {
		t.Fatalf("a refused script launched %d servers", n)
	}
}

// The canary, for scripts: an untrusted (then stale) project server is not
// a module, a script naming it fails with the trust remedy, and its command
// never runs.
func TestExecuteCanaryUntrustedNeverLaunches(t *testing.T) {
	w := newWorld(t)
	marker := filepath.Join(t.TempDir(), "launched")
	decl := fmt.Sprintf("servers:\n  canary:\n    command: touch\n    args: [%q]\n", marker)
	w.writeProject(decl)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	g := w.open()
	check := func(stage string) {
		t.Helper()
		for _, script := range []string{
			"result = canary.x()",
			`result = call("canary__x")`,
			`result = parallel([("canary__x", {})])`,
			"result = fx.echo(text='a')\nresult = canary",
		} {
			res := execute(t, g, script)
			if res.Error == nil || res.Error.Kind != RunAdmission || !strings.Contains(res.Error.Remedy, "sluice trust canary") || !strings.Contains(res.Error.Message, stage) {
				t.Fatalf("%s: %q: want an admission error with the trust remedy, got %+v", stage, script, res.Error)
			}
			if len(res.Calls) != 0 {
				t.Fatalf("%s: calls %+v", stage, res.Calls)
			}
		}
		// A name computed at run time reaches Call, which refuses it.
		res := execute(t, g, `r = call("canary" + "__x")`+"\nresult = [r.ok, r.kind]")
		if res.Error != nil || !strings.HasPrefix(string(res.Result), `[false,`) {
			t.Fatalf("%s: dynamic %s %+v", stage, res.Result, res.Error)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s: the canary was launched", stage)
		}
		if n := children(); n != 0 {
			t.Fatalf("%s: %d processes", stage, n)
		}
	}
	check("untrusted")
	plan, err := g.PlanTrust("canary", "read")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Trust(plan); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	w.writeProject(decl + "    timeoutMs: 1000\n")
	check("stale")
}

func TestExecuteLimitsFromConfig(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx") + "sandbox: {maxCalls: 2, maxLogBytes: 2048, timeoutMs: 60000}\n")
	recordCatalog(t, w, "fx")
	g := w.open()
	res := execute(t, g, `
for i in range(3):
    fx.echo(text=str(i))
`)
	if res.Error == nil || res.Error.Kind != RunLimit || res.Error.Limit != "calls" || len(res.Calls) != 2 {
		t.Fatalf("want a calls limit after 2 calls, got %+v calls %+v", res.Error, res.Calls)
	}
	res = execute(t, g, `
for i in range(100):
    print("x" * 100)
result = "done"
`)
	mustOK(t, res)
	if !res.LogsTruncated {
		t.Fatalf("maxLogBytes 2048 was not applied: %d log lines", len(res.Logs))
	}
	// The surface's timeout caps the configured 60 s wall time.
	start := time.Now()
	res, err := g.Execute(ctx(t), ExecuteRequest{Script: "fx.slow(ms=20000, steps=1)", Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error == nil || res.Error.Kind != RunLimit || res.Error.Limit != "time" {
		t.Fatalf("want a time limit, got %+v", res.Error)
	}
	if el := time.Since(start); el > 15*time.Second {
		t.Fatalf("the run was not cut by the request's timeout (hang guard): %s", el)
	}
}

func TestScriptLimits(t *testing.T) {
	w := newWorld(t)
	w.writeUser("sandbox: {maxSteps: 5, timeoutMs: 2000, maxCalls: 3, maxResultBytes: 4, maxLogBytes: 5, maxOutputBytes: 6, maxMemoryBytes: 7, maxConcurrency: 2, maxDepth: 9}\n")
	g := w.open()
	for _, tc := range []struct {
		surface time.Duration
		want    time.Duration
	}{
		{0, 2 * time.Second},
		{time.Second, time.Second},
		{time.Minute, 2 * time.Second},
	} {
		l := g.scriptLimits(tc.surface)
		if l.Timeout != tc.want || l.MaxSteps != 5 || l.MaxCalls != 3 || l.MaxResultBytes != 4 || l.MaxLogBytes != 5 ||
			l.MaxOutputBytes != 6 || l.MaxMemoryBytes != 7 || l.MaxConcurrency != 2 || l.MaxDepth != 9 {
			t.Fatalf("surface %s: %+v", tc.surface, l)
		}
	}
	w.writeUser("servers: {}\n")
	time.Sleep(10 * time.Millisecond)
	l := g.scriptLimits(0)
	if l.Timeout != 30*time.Second || l.MaxSteps != 0 || l.MaxConcurrency != 8 {
		t.Fatalf("defaults: %+v", l)
	}
}

func TestExecuteSyntaxAndRuntimeErrors(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	recordCatalog(t, w, "fx")
	g := w.open()
	res := execute(t, g, "x = fx.ecko(text='a')\ny = fx.echo(txt='b')\n")
	if res.Error == nil || res.Error.Kind != RunSyntax || len(res.Error.Problems) < 2 || !strings.Contains(res.Error.Problems[0].Message, "did you mean fx.echo") {
		t.Fatalf("pre-flight: %+v", res.Error)
	}
	res = execute(t, g, "def f():\n    fail('boom')\nf()\n")
	if res.Error == nil || res.Error.Kind != RunRuntime || res.Error.Line == 0 || len(res.Error.Backtrace) == 0 {
		t.Fatalf("runtime: %+v", res.Error)
	}
	if n := children(); n != 0 {
		t.Fatalf("%d processes", n)
	}
}

func TestExecuteBigNumbersKeepTheirText(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	g := w.open()
	res := execute(t, g, `
s = fx.add(a=12345678901234567890, b=0.5)
again = fx.add(a=s["sum"], b=1)
big = fx.add(a=123456789012345678901234567890, b=1)
result = {"s": s["sum"], "again": again["sum"], "big": big["sum"], "literal": s["sum"]["$literal"]}
`)
	mustOK(t, res)
	want := `{"s":12345678901234567890.5,"again":12345678901234567891.5,"big":123456789012345678901234567891,"literal":"12345678901234567890.5"}`
	if string(res.Result) != want {
		t.Fatalf("numbers re-encoded: %s", res.Result)
	}
}

func TestDescribeAndDocsCarryCodeModeNames(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx") + fixture(t, "my-db") + fixture(t, "my_db"))
	g := w.open()
	if _, err := g.Docs(ctx(t), "fx"); KindOf(err) != KindMissing || !strings.Contains(err.Error(), "sluice find --server fx --refresh") {
		t.Fatalf("docs without a catalog: %v", err)
	}
	if _, err := g.Docs(ctx(t), "nope"); KindOf(err) != KindUnknown {
		t.Fatalf("docs of an unknown server: %v", err)
	}
	if n := children(); n != 0 {
		t.Fatalf("docs launched %d", n)
	}
	for _, id := range []string{"fx", "my_db"} {
		if _, err := g.Find(ctx(t), FindRequest{Server: id, Refresh: true}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := g.Describe(ctx(t), "fx__add")
	if err != nil {
		t.Fatal(err)
	}
	if d.Module != "fx" || !strings.HasPrefix(d.Signature, "def add(a: ") || !strings.Contains(d.Signature, "-> dict") {
		t.Fatalf("describe: module %q signature %q", d.Module, d.Signature)
	}
	// my-db and my_db collide: byte order gives my-db the base name.
	d, err = g.Describe(ctx(t), "my_db__echo")
	if err != nil {
		t.Fatal(err)
	}
	if d.Module != "my_db_2" {
		t.Fatalf("collision: module %q", d.Module)
	}
	docs, err := g.Docs(ctx(t), "my_db")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(docs, "# module my_db_2: server \"my_db\"") || !strings.Contains(docs, "def echo(text: str)") {
		t.Fatalf("docs:\n%s", docs)
	}
	// Scripts see the same names.
	res := execute(t, g, `result = my_db_2.echo(text="same names")`)
	mustOK(t, res)
	if string(res.Result) != `"same names"` {
		t.Fatalf("result %s", res.Result)
	}
}

func TestWrapAndUnwrapResult(t *testing.T) {
	for _, v := range []string{`null`, `1e400`, `{"a": [1, 2.50, "x\"y"]}`, `"<tag>&"`, `[]`} {
		w := wrapResult(json.RawMessage(v))
		if !json.Valid(w) {
			t.Fatalf("%s: wrapped is invalid: %s", v, w)
		}
		got, ok := unwrapResult(w)
		if !ok {
			t.Fatalf("%s: not unwrapped from %s", v, w)
		}
		var want bytes.Buffer
		if err := json.Compact(&want, []byte(v)); err != nil {
			t.Fatal(err)
		}
		if string(got) != want.String() {
			t.Fatalf("%s: round trip gave %s", v, got)
		}
	}
	for _, filtered := range []string{
		`{"content":[{"type":"text","text":"{\"a\":"},{"type":"text","text":"[cut: 10 bytes; full result in r-1]"}]}`,
		`{"content":[{"type":"text","text":"not json"}]}`,
		`{"content":[{"type":"text","text":"1"}],"isError":true}`,
		`[1]`,
	} {
		if v, ok := unwrapResult(json.RawMessage(filtered)); ok {
			t.Fatalf("%s must stay a CallToolResult, got %s", filtered, v)
		}
	}
}

func TestExecuteOnClosedGateway(t *testing.T) {
	w := newWorld(t)
	g := w.open()
	g.Close()
	if _, err := g.Execute(context.Background(), ExecuteRequest{Script: "result = 1"}); err != ErrClosed {
		t.Fatalf("closed: %v", err)
	}
}

func TestExecuteServerThatCannotStart(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "bad", "-mode", "exit-at-start") + fixture(t, "fx"))
	g := w.open()
	// Not named: never launched, the run does not depend on it.
	res := execute(t, g, "result = 'fine'")
	mustOK(t, res)
	res = execute(t, g, "result = bad.echo(text='x')")
	if res.Error == nil || res.Error.Kind != RunTool || !strings.Contains(res.Error.Message, "server bad has no recorded catalog and could not be launched") ||
		!strings.Contains(res.Error.Remedy, "sluice find --server bad --refresh") || len(res.Calls) != 0 {
		t.Fatalf("want a tool error naming the launch failure, got %+v", res.Error)
	}
	if strings.Contains(res.Error.Message, "stderr") {
		t.Fatalf("server stderr must not reach the script: %q", res.Error.Message)
	}
}

// FuzzWrapResult: any script result survives the wrapping unchanged (up to
// whitespace), and unwrapResult never panics or returns invalid JSON on
// whatever a filter hands back.
func FuzzWrapResult(f *testing.F) {
	for _, s := range []string{`null`, `{"a":[1,2.50,"x"]}`, `12345678901234567890.5`, `"\u2028<>&"`, `{"content":[{"type":"text","text":"1"}]}`, `[`, ``, "{\"\xfc\":[]}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, ok := unwrapResult(b); ok && !json.Valid(v) {
			t.Fatalf("unwrapped invalid JSON %q from %q", v, b)
		}
		if !json.Valid(b) || !utf8.Valid(b) {
			return // the sandbox only produces valid UTF-8 JSON
		}
		w := wrapResult(b)
		got, ok := unwrapResult(w)
		var want bytes.Buffer
		_ = json.Compact(&want, b)
		if !ok || !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("round trip of %q: %q %v", b, got, ok)
		}
	})
}

func TestExecuteResultToolResult(t *testing.T) {
	ok := &ExecuteResult{Result: json.RawMessage(`{"n":12345678901234567890.5,"s":"<a>"}`), Logs: []string{}, Calls: []CallRecord{{Capability: "fx__echo", OK: true, Bytes: 10}}}
	bad := &ExecuteResult{Result: json.RawMessage(`null`), Logs: []string{}, Calls: []CallRecord{}, Error: &RunError{Kind: RunLimit, Limit: "calls", Message: "too many"}}
	for _, tc := range []struct {
		r       *ExecuteResult
		isError bool
		frag    string
	}{
		{ok, false, `"result":{"n":12345678901234567890.5,"s":"<a>"}`},
		{bad, true, `"error":{"kind":"limit","limit":"calls","message":"too many"}`},
	} {
		raw, err := tc.r.ToolResult()
		if err != nil {
			t.Fatal(err)
		}
		var tr struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		}
		if err := json.Unmarshal(raw, &tr); err != nil || len(tr.Content) != 1 || tr.Content[0].Type != "text" || tr.IsError != tc.isError {
			t.Fatalf("%s: %v", raw, err)
		}
		if !strings.Contains(tr.Content[0].Text, tc.frag) || !json.Valid([]byte(tr.Content[0].Text)) {
			t.Fatalf("text %s lacks %s", tr.Content[0].Text, tc.frag)
		}
	}
}

// Tool results inside a script skip the context stage (the script sees all
// 100,000 bytes); the script's final value goes through it (the default
// shape filter keeps what reaches the model within its budget).
func TestExecuteContextStageAppliesToTheFinalValueOnly(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	g := w.open()
	direct, err := g.Call(ctx(t), CallRequest{Capability: "fx__huge", Arguments: json.RawMessage(`{"bytes":100000}`)})
	if err != nil {
		t.Fatal(err)
	}
	shaping := len(direct.Result) < direct.RawBytes
	res := execute(t, g, `
h = fx.huge(bytes=100000)
result = {"len": len(h)}
`)
	mustOK(t, res)
	if string(res.Result) != `{"len":100000}` || res.ResultFiltered {
		t.Fatalf("the script must see the whole tool result and a small value passes unchanged: %s", res.Result)
	}
	res = execute(t, g, `result = fx.huge(bytes=100000)`)
	mustOK(t, res)
	if res.ResultBytes != 100002 {
		t.Fatalf("result bytes %d", res.ResultBytes)
	}
	t.Logf("direct call %d -> %d bytes; script value %d -> %d bytes", direct.RawBytes, len(direct.Result), res.ResultBytes, len(res.Result))
	if !shaping {
		// No context filter shortens results in this build: the value
		// must come back whole.
		if len(res.Result) != 100002 || res.ResultFiltered {
			t.Fatalf("unfiltered result changed: %d bytes", len(res.Result))
		}
		return
	}
	if !res.ResultFiltered || len(res.Result) >= 20000 || !json.Valid(res.Result) {
		t.Fatalf("the final value must be shaped like a direct call (%d -> %d bytes): filtered %v, %d bytes", direct.RawBytes, len(direct.Result), res.ResultFiltered, len(res.Result))
	}
	var tr struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(res.Result, &tr); err != nil || len(tr.Content) < 2 {
		t.Fatalf("a shaped value is a CallToolResult with a note: %s", res.Result[:min(len(res.Result), 400)])
	}
}

// A fail-closed context filter that fails withholds the final value; the
// run still reports the calls it made.
func TestExecuteFailClosedContextFilterWithholdsTheValue(t *testing.T) {
	w := newWorld(t)
	bad := filepath.Join(t.TempDir(), "broken.wasm")
	if err := os.WriteFile(bad, []byte("not wasm"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.writeUser("servers:\n" + fixture(t, "fx") + fmt.Sprintf("filters:\n  - module: %q\n    capabilities: [%q]\n    stage: context\n    onError: fail-closed\n", bad, ExecuteCapability))
	g := w.open()
	res := execute(t, g, `result = fx.echo(text="secret")`)
	if res.Error == nil || res.Error.Kind != RunFilter || string(res.Result) != "null" || len(res.Calls) != 1 || !res.Calls[0].OK {
		b, _ := json.Marshal(res)
		t.Fatalf("want the value withheld with a filter error and the call reported: %s", b)
	}
	if strings.Contains(res.Error.Message, "secret") {
		t.Fatalf("the withheld value leaked into the error: %q", res.Error.Message)
	}
	t.Logf("filter error: %s (fix: %s)", res.Error.Message, res.Error.Remedy)
	// Direct calls of other capabilities are not affected by that filter.
	if _, err := g.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: json.RawMessage(`{"text":"x"}`)}); err != nil {
		t.Fatal(err)
	}
}

// TestExecuteToolResultIsBounded: what the execute tool hands a model is
// bounded whatever the script printed or called: calls aggregated per
// capability, logs cut to their last MaxModelLogBytes with a note, the
// result as the context filters left it. The full run stays in the
// ExecuteResult (what 'sluice run --json' prints).
func TestExecuteToolResultIsBounded(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	g := w.open()
	res := execute(t, g, `
for i in range(2000):
    print("line %d: some words a model need not read in full" % i)
for i in range(150):
    fx.echo(text="x")
result = fx.huge(bytes=100000)
`)
	mustOK(t, res)
	full, _ := json.Marshal(res)
	if len(res.Logs) < 1000 || len(res.Calls) != 151 {
		t.Fatalf("the full run must keep every log line and call: %d logs, %d calls", len(res.Logs), len(res.Calls))
	}
	raw, err := res.ToolResult()
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(raw, &tr); err != nil || len(tr.Content) != 1 {
		t.Fatalf("%s: %v", raw, err)
	}
	var sum struct {
		Result   json.RawMessage `json:"result"`
		Logs     []string        `json:"logs"`
		LogsNote string          `json:"logsNote"`
		Calls    []callSummary   `json:"calls"`
	}
	if err := json.Unmarshal([]byte(tr.Content[0].Text), &sum); err != nil {
		t.Fatal(err)
	}
	overhead := len(tr.Content[0].Text) - len(sum.Result)
	t.Logf("full run %d bytes; model text %d bytes (%d besides the result)", len(full), len(tr.Content[0].Text), overhead)
	if overhead > MaxModelLogBytes+4096 {
		t.Fatalf("besides the result, the model text is %d bytes; want at most %d", overhead, MaxModelLogBytes+4096)
	}
	if last := sum.Logs[len(sum.Logs)-1]; last != res.Logs[len(res.Logs)-1] || !strings.Contains(sum.LogsNote, "bytes were dropped") {
		t.Fatalf("logs must keep the last lines and say what was dropped: last %q note %q", last, sum.LogsNote)
	}
	want := map[string]int{"fx__echo": 150, "fx__huge": 1}
	if len(sum.Calls) != len(want) {
		t.Fatalf("calls = %+v", sum.Calls)
	}
	for _, c := range sum.Calls {
		if want[c.Capability] != c.Count || c.OK != c.Count || c.Bytes <= 0 {
			t.Fatalf("call summary %+v, want count %d all ok", c, want[c.Capability])
		}
	}
}

func TestTailLogs(t *testing.T) {
	long := strings.Repeat("é", 3000) // 6000 bytes
	for _, tc := range []struct {
		name     string
		logs     []string
		wantKept []string
		wantNote bool
	}{
		{"none", nil, nil, false},
		{"fits", []string{"a", "b"}, []string{"a", "b"}, false},
		{"drops-first", []string{strings.Repeat("x", 4095), "b", "c"}, []string{"b", "c"}, true},
		{"long-last", []string{"a", long}, []string{"[...]" + strings.Repeat("é", 2048)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, note := tailLogs(tc.logs, MaxModelLogBytes)
			if !slices.Equal(kept, tc.wantKept) || (note != "") != tc.wantNote {
				t.Fatalf("kept %d lines %.40q, note %q", len(kept), kept, note)
			}
			for _, k := range kept {
				if !utf8.ValidString(k) {
					t.Fatalf("invalid UTF-8 kept: %q", k)
				}
			}
		})
	}
}
