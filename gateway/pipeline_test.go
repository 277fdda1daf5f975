package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sluice/gateway/config"
	"sluice/wasm"
)

// Compiling a Go guest costs about a second (several under -race, more
// with other packages' tests competing for the CPUs), and every test world
// has its own cache directory. So the tests compile each built-in once per
// process into a scratch cache, keep the files in memory and seed each
// gateway's <cache>/wazero with them (prepareCompileCache).
func init() { prepareCompileCache = seedCompileDir }

var (
	warmMu    sync.Mutex
	warmFiles = map[string]map[string][]byte{} // builtin -> cache-relative path -> bytes
)

// warm compiles one built-in into a scratch cache once and returns the
// cache's files.
func warm(name string) (map[string][]byte, error) {
	return warmSpec(name, wasm.Spec{Builtin: name})
}

// checkedRedact is the key warmSpec keeps builtin:redact compiled with
// termination checks under: the variant a config with patterns loads.
const checkedRedact = "redact (checked)"

// warmSpec is warm for any spec, its files kept under key.
func warmSpec(key string, spec wasm.Spec) (map[string][]byte, error) {
	warmMu.Lock()
	defer warmMu.Unlock()
	if f, ok := warmFiles[key]; ok {
		return f, nil
	}
	dir, err := os.MkdirTemp("", "sluice-gateway-wazero-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	h, err := wasm.NewHost(ctx, &wasm.Options{CacheDir: dir})
	if err != nil {
		return nil, err
	}
	_, err = h.Load(ctx, spec)
	h.Close(ctx)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[rel] = b
		return err
	})
	if err != nil {
		return nil, err
	}
	warmFiles[key] = files
	return files, nil
}

// warmAll compiles every built-in filter once per test process, before a
// test opens its first gateway: the cost is paid outside every test's own
// deadline (a loaded machine makes the run slower, not a test fail), and
// only by tests that open a gateway.
func warmAll() {
	warmOnce.Do(func() {
		for _, name := range wasm.BuiltinNames() {
			if _, err := warm(name); err != nil {
				fmt.Fprintf(os.Stderr, "warming built-in filter %s: %v\n", name, err)
			}
		}
	})
}

var warmOnce sync.Once

func seedCompileDir(dir string, builtins []string) {
	for _, b := range builtins {
		var files map[string][]byte
		var err error
		if b == checkedRedact {
			files, err = warmSpec(b, wasm.Spec{Builtin: "redact", Config: []byte(`{"patterns":["x"]}`)})
		} else {
			files, err = warm(b)
		}
		if err != nil {
			continue // the host compiles it itself and reports what fails
		}
		for rel, data := range files {
			p := filepath.Join(dir, rel)
			if _, err := os.Stat(p); err == nil {
				continue
			}
			if os.MkdirAll(filepath.Dir(p), 0o700) == nil {
				_ = os.WriteFile(p, data, 0o600)
			}
		}
	}
}

func seedCompileCache(t *testing.T, w *world) {
	t.Helper()
	seedCompileDir(filepath.Join(w.cache, "wazero"), wasm.BuiltinNames())
}

var handleRe = regexp.MustCompile(`r-[0-9a-f]{32}`)

// filterWorld is a world with the fixture server fx, the given filters
// setting and a seeded compile cache.
func filterWorld(t *testing.T, filters string) (*world, *Gateway) {
	t.Helper()
	w := newWorld(t)
	seedCompileCache(t, w)
	w.writeUser("servers:\n" + fixture(t, "fx") + filters)
	return w, w.open()
}

type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

func decodeResult(t *testing.T, raw json.RawMessage) toolResult {
	t.Helper()
	var r toolResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("result is not a CallToolResult: %v: %.300s", err, raw)
	}
	return r
}

func resultFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestShapeByDefaultTrimsOffloadsAndPagesBack(t *testing.T) {
	w, g := filterWorld(t, "")
	dir := filepath.Join(w.state, "sluice", "results")
	if st := g.FilterStatuses(); len(st) != 1 || !st[0].Default || st[0].Module != "builtin:shape" || st[0].Stage != "context" || st[0].OnError != "fail-open" {
		t.Fatalf("default filters: %+v", st)
	}

	// A small result passes unchanged and nothing is stored.
	small, err := g.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: json.RawMessage(`{"text":"hello"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if r := decodeResult(t, small.Result); len(r.Content) != 1 || r.Content[0].Text != "hello" {
		t.Fatalf("small result changed: %s", small.Result)
	}
	if f := resultFiles(t, dir); len(f) != 0 {
		t.Fatalf("a small result was offloaded: %v", f)
	}

	// The unfiltered result, as a script sees it (no context stage).
	raw, err := g.Call(ctx(t), CallRequest{Capability: "fx__huge", Arguments: json.RawMessage(`{"bytes": 62000}`), Raw: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(raw.Result) < 62000 {
		t.Fatalf("raw call was shaped: %d bytes", len(raw.Result))
	}
	res, err := g.Call(ctx(t), CallRequest{Capability: "fx__huge", Arguments: json.RawMessage(`{"bytes": 62000}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Result) > DefaultShapeBudget {
		t.Fatalf("shaped result is %d bytes, over the %d budget", len(res.Result), DefaultShapeBudget)
	}
	if res.RawBytes != len(raw.Result) {
		t.Fatalf("RawBytes %d, want %d", res.RawBytes, len(raw.Result))
	}
	r := decodeResult(t, res.Result)
	last := r.Content[len(r.Content)-2].Text // then a resource_link to the stored result
	handle := handleRe.FindString(last)
	if handle == "" || !strings.Contains(last, "bytes were omitted") || !strings.Contains(last, "16384-byte context budget") {
		t.Fatalf("marker does not name the omitted size and a handle: %q", last)
	}

	// Paging the handle gives back the full original, byte for byte.
	var got strings.Builder
	var off int64
	for i := 0; ; i++ {
		p, err := g.ReadResult(handle, off, 5000)
		if err != nil {
			t.Fatal(err)
		}
		if p.Offset != off || p.Total != int64(len(raw.Result)) || p.Length != int64(len(p.Data)) || p.Next != off+p.Length {
			t.Fatalf("page %d: %+v", i, p)
		}
		got.WriteString(p.Data)
		off = p.Next
		if p.EOF {
			break
		}
		if i > 100 {
			t.Fatal("paging does not end")
		}
	}
	if got.String() != string(raw.Result) {
		t.Fatalf("paged result differs from the original (%d vs %d bytes)", got.Len(), len(raw.Result))
	}

	// Store modes: 0700 directory, 0600 files.
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Fatalf("results dir mode %v", fi.Mode().Perm())
	}
	files := resultFiles(t, dir)
	if len(files) != 1 {
		t.Fatalf("want one stored result, got %v", files)
	}
	fi, err = os.Stat(filepath.Join(dir, files[0]))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("result file mode %v", fi.Mode().Perm())
	}

	// A script's final value meets the context stage as ExecuteCapability.
	big := `{"content":[{"type":"text","text":"` + strings.Repeat("b", 40000) + `"}]}`
	out, _, err := g.filterResult(ctx(t), ExecuteCapability, json.RawMessage(big), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > DefaultShapeBudget || !handleRe.Match(out) {
		t.Fatalf("script value not shaped: %d bytes", len(out))
	}
	st := g.FilterStatuses()
	if st[0].State != FilterActive || st[0].Calls < 2 || st[0].Failures != 0 {
		t.Fatalf("status after use: %+v", st[0])
	}
}

func TestUserShapeReplacesDefault(t *testing.T) {
	_, g := filterWorld(t, "filters:\n  - module: builtin:shape\n    stage: context\n    config: {budgetBytes: 2048}\n")
	st := g.FilterStatuses()
	if len(st) != 1 || st[0].Default || st[0].Index != 0 || st[0].OnError != "fail-closed" {
		t.Fatalf("statuses: %+v", st)
	}
	res, err := g.Call(ctx(t), CallRequest{Capability: "fx__huge", Arguments: json.RawMessage(`{"bytes": 5000}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Result) > 2048 || !handleRe.Match(res.Result) {
		t.Fatalf("user budget not applied: %d bytes: %.200s", len(res.Result), res.Result)
	}
}

func TestShapeOffWithNoCapabilities(t *testing.T) {
	_, g := filterWorld(t, "filters:\n  - module: builtin:shape\n    stage: context\n    capabilities: []\n")
	res, err := g.Call(ctx(t), CallRequest{Capability: "fx__huge", Arguments: json.RawMessage(`{"bytes": 30000}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Result) < 30000 {
		t.Fatalf("shape ran although it matches nothing: %d bytes", len(res.Result))
	}
	if st := g.FilterStatuses(); len(st) != 1 || st[0].State != FilterInactive {
		t.Fatalf("statuses: %+v", st)
	}
}

const (
	awsKey  = "AKIAIOSFODNN7EXAMPLE"
	ghToken = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
	// A generous deadline: redaction is tested here, not the deadline
	// (TestFilterTimeoutMs is about that).
	redactUp = "filters:\n  - module: builtin:redact\n    timeoutMs: 30000\n"
)

func TestRedactMasksTextAndStructuredContent(t *testing.T) {
	_, g := filterWorld(t, redactUp)
	text := "aws " + awsKey + " and github " + ghToken + " done"
	for _, raw := range []bool{false, true} { // a script's call (Raw) is filtered too
		res, err := g.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: json.RawMessage(`{"text":"` + text + `"}`), Raw: raw})
		if err != nil {
			t.Fatal(err)
		}
		s := string(res.Result)
		if strings.Contains(s, awsKey) || strings.Contains(s, ghToken) || !strings.Contains(s, "[REDACTED:aws-access-key-id]") || !strings.Contains(s, "[REDACTED:github-token]") || !strings.Contains(s, " done") {
			t.Fatalf("raw=%v: not redacted: %s", raw, s)
		}
	}
	// structuredContent: the meta tool echoes the request's _meta there.
	res, err := g.Call(ctx(t), CallRequest{Capability: "fx__meta", Meta: json.RawMessage(`{"token":"` + ghToken + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	r := decodeResult(t, res.Result)
	if strings.Contains(string(res.Result), ghToken) || !strings.Contains(string(r.StructuredContent), "[REDACTED:github-token]") {
		t.Fatalf("structuredContent not redacted: %s", res.Result)
	}
}

func TestFailClosedFilterWithholdsAndDisables(t *testing.T) {
	trap, err := filepath.Abs("../testdata/filters/trap.wasm")
	if err != nil {
		t.Fatal(err)
	}
	_, g := filterWorld(t, "filters:\n  - module: "+trap+"\n")
	secret := "unfiltered-" + ghToken
	for i := 0; i < wasm.DefaultDisableAfter+1; i++ {
		res, err := g.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: json.RawMessage(`{"text":"` + secret + `"}`)})
		if KindOf(err) != KindFilter || res != nil {
			t.Fatalf("call %d: want a filter error, got %v, %+v", i, err, res)
		}
		msg := err.Error()
		if strings.Contains(msg, secret) || !strings.Contains(msg, trap) || !strings.Contains(msg, "withheld") {
			t.Fatalf("call %d: error %q", i, msg)
		}
		want := "trapped"
		if i == wasm.DefaultDisableAfter {
			want = "is disabled for this server's results after 5 consecutive failures"
		}
		if !strings.Contains(msg, want) {
			t.Fatalf("call %d: error %q does not say %q", i, msg, want)
		}
	}
	st := g.FilterStatuses()
	if st[0].State != FilterDisabled || st[0].ConsecutiveFailures < wasm.DefaultDisableAfter || st[0].DisabledAt.IsZero() || len(st[0].DisabledFor) != 1 || st[0].DisabledFor[0] != "fx" {
		t.Fatalf("status: %+v", st[0])
	}
}

// TestFilterTimeoutMs: a filter's timeoutMs becomes its per-call deadline
// (a spinning guest is stopped at it); without one the host's default
// applies.
func TestFilterTimeoutMs(t *testing.T) {
	loop, err := filepath.Abs("../testdata/filters/loop.wasm")
	if err != nil {
		t.Fatal(err)
	}
	es, err := buildEntries([]config.Filter{{Module: "builtin:redact", Builtin: "redact", TimeoutMs: 2500}, {Module: "builtin:shape", Builtin: "shape"}})
	if err != nil {
		t.Fatal(err)
	}
	if es[0].spec.Timeout != 2500*time.Millisecond || es[1].spec.Timeout != 0 {
		t.Fatalf("spec timeouts %v, %v; want 2.5s and 0 (the host's default)", es[0].spec.Timeout, es[1].spec.Timeout)
	}
	_, g := filterWorld(t, "filters:\n  - module: "+loop+"\n    timeoutMs: 30\n")
	res, err := g.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: json.RawMessage(`{"text":"hi"}`)})
	if KindOf(err) != KindFilter || res != nil {
		t.Fatalf("want a filter error, got %v, %+v", err, res)
	}
	if msg := err.Error(); !strings.Contains(msg, "30ms deadline") {
		t.Fatalf("error %q does not name the 30ms deadline", msg)
	}
}

func TestFailOpenFilterPassesResult(t *testing.T) {
	trap, _ := filepath.Abs("../testdata/filters/trap.wasm")
	_, g := filterWorld(t, "filters:\n  - module: "+trap+"\n    onError: fail-open\n")
	res, err := g.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: json.RawMessage(`{"text":"passes"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if r := decodeResult(t, res.Result); r.Content[0].Text != "passes" {
		t.Fatalf("result %s", res.Result)
	}
	if st := g.FilterStatuses(); st[0].Failures != 1 {
		t.Fatalf("failure not counted: %+v", st[0])
	}
}

func TestFilterBlockReplacesResult(t *testing.T) {
	echo, _ := filepath.Abs("../testdata/filters/echo.wasm")
	_, g := filterWorld(t, "filters:\n  - module: "+echo+"\n    capabilities: [\"fx__echo\"]\n")
	// The echo guest returns the first input byte as its status: 2 = block.
	res, err := g.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: json.RawMessage(`{"text":"\u0002not for you"}`)})
	if err != nil {
		t.Fatal(err)
	}
	r := decodeResult(t, res.Result)
	if !r.IsError || !strings.Contains(r.Content[0].Text, "withheld by filter "+echo+": not for you") {
		t.Fatalf("blocked result: %s", res.Result)
	}
	// Capabilities scope the filter: fx__meta is not matched.
	if _, err := g.Call(ctx(t), CallRequest{Capability: "fx__meta"}); err != nil {
		t.Fatal(err)
	}
	if st := g.FilterStatuses(); st[0].Calls != 1 {
		t.Fatalf("filter ran outside its capabilities: %+v", st[0])
	}
}

func TestOpenRefusesBadFilterConfig(t *testing.T) {
	trap, _ := filepath.Abs("../testdata/filters/trap.wasm")
	b, err := os.ReadFile(trap)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	good := hex.EncodeToString(sum[:])
	bad := strings.Repeat("0", 64)
	cases := []struct {
		name, filters, want string
	}{
		{"pin mismatch", "filters:\n  - module: " + trap + "\n    sha256: \"" + bad + "\"\n", "does not match its sha256 pin"},
		{"invalid setting", "filters:\n  - module: nope\n", "filters[0].module"},
		{"unknown key", "filters:\n  - module: builtin:redact\n    enabled: false\n", "filters[0].enabled"},
		{"unknown builtin", "filters:\n  - module: builtin:nosuch\n", "unknown built-in filter"},
		{"redact failing open", "filters:\n  - module: builtin:redact\n    onError: fail-open\n", "must be fail-closed"},
		{"duplicate key", "filters:\n  - module: builtin:redact\nfilters: []\n", "is invalid"},
		{"missing module file", "filters:\n  - module: " + filepath.Join(t.TempDir(), "gone.wasm") + "\n", "cannot read filter module"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			w.writeUser("servers:\n" + fixture(t, "fx") + c.filters)
			g, err := Open(&Options{Cwd: w.project, Getenv: w.getenv})
			if err == nil {
				g.Close()
				t.Fatal("Open accepted a bad filters setting")
			}
			if KindOf(err) != KindGateway || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q, want %q", err, c.want)
			}
		})
	}
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx") + "filters:\n  - module: " + trap + "\n    sha256: " + good + "\n")
	w.open()
}

func TestShapeBudget(t *testing.T) {
	cases := []struct {
		cfg  string
		want int
	}{
		{"", DefaultShapeBudget},
		{`{}`, DefaultShapeBudget},
		{`{"budgetBytes": 2048}`, 2048},
		{`{"budgetBytes": 100}`, 0},
		{`{"budgetBytes": "x"}`, 0},
		{`{"budgetBytes": 2048.5}`, 0},
		{`[1]`, 0},
	}
	for _, c := range cases {
		if got := shapeBudget(json.RawMessage(c.cfg)); got != c.want {
			t.Errorf("shapeBudget(%s) = %d, want %d", c.cfg, got, c.want)
		}
	}
}

func TestShapeNativeOverHostInputCap(t *testing.T) {
	w := newWorld(t)
	g := w.open()
	big := `{"content":[{"type":"text","text":"` + strings.Repeat("z", wasm.DefaultMaxInputBytes) + `"}],"isError":true}`
	out, _, err := g.filterResult(ctx(t), "fx__huge", json.RawMessage(big), true)
	if err != nil {
		t.Fatal(err)
	}
	r := decodeResult(t, out)
	h := handleRe.FindString(r.Content[0].Text)
	if len(out) > DefaultShapeBudget || !r.IsError || h == "" {
		t.Fatalf("oversized result: %.300s", out)
	}
	p, err := g.ReadResult(h, 0, MaxResultPage)
	if err != nil || p.Total != int64(len(big)) {
		t.Fatalf("stored: %+v %v", p, err)
	}
}

// TestFailingShapeKeepsTheBudget: a fail-open shape filter that fails
// (here its config is refused at load; a deadline on a loaded machine ends
// the same way) must not pass an over-budget result on whole.
func TestFailingShapeKeepsTheBudget(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx") + "filters:\n  - module: builtin:shape\n    stage: context\n    onError: fail-open\n    config: {budgetBytes: 10}\n")
	g := w.open()
	big := `{"content":[{"type":"text","text":"` + strings.Repeat("q", 3*DefaultShapeBudget) + `"}]}`
	out, _, err := g.filterResult(ctx(t), "fx__echo", json.RawMessage(big), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > DefaultShapeBudget {
		t.Fatalf("a failing shape passed %d bytes on, over the %d-byte budget", len(out), DefaultShapeBudget)
	}
	r := decodeResult(t, out)
	h := handleRe.FindString(r.Content[0].Text)
	if h == "" {
		t.Fatalf("no handle in the marker: %s", out)
	}
	p, err := g.ReadResult(h, 0, MaxResultPage)
	if err != nil || p.Total != int64(len(big)) {
		t.Fatalf("stored: %+v %v", p, err)
	}
	if st := g.FilterStatuses(); st[0].LastError == "" {
		t.Fatalf("the failure is not shown: %+v", st)
	}
}

func TestFilterTestAndBench(t *testing.T) {
	w := newWorld(t)
	seedCompileCache(t, w)
	cache := filepath.Join(w.cache, "wazero")
	res, err := FilterTest(compileCtx(t), FilterTestRequest{Module: "builtin:redact", Input: []byte("token " + ghToken), CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "replaced" || !res.Wrapped || res.Stage != "result" || res.Mode != "result-json" || strings.Contains(string(res.Output), ghToken) || !strings.Contains(string(res.Output), "[REDACTED:github-token]") {
		t.Fatalf("redact test: %+v %s", res, res.Output)
	}
	res, err = FilterTest(compileCtx(t), FilterTestRequest{Module: "builtin:shape", Config: json.RawMessage(`{"budgetBytes":1024}`), Input: []byte(strings.Repeat("q", 5000)), CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "replaced" || res.Stage != "context" || res.Offloads != 1 || res.OutputBytes > 1024 || res.Offloaded < 5000 {
		t.Fatalf("shape test: %+v", res)
	}
	trap, _ := filepath.Abs("../testdata/filters/trap.wasm")
	res, err = FilterTest(ctx(t), FilterTestRequest{Module: trap, Input: []byte(`{"content":[{"type":"text","text":"x"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "failed" || !strings.Contains(res.Error, "trapped") || res.Wrapped {
		t.Fatalf("trap test: %+v", res)
	}
	if _, err := FilterTest(ctx(t), FilterTestRequest{Module: "builtin:nosuch"}); KindOf(err) != KindBadInput {
		t.Fatalf("unknown builtin: %v", err)
	}
	if _, err := FilterTest(compileCtx(t), FilterTestRequest{Module: "builtin:shape", Config: json.RawMessage(`{"budgetBytes":1}`), CacheDir: cache}); KindOf(err) != KindFilter {
		t.Fatalf("rejected config: %v", err)
	}

	b, err := FilterBench(ctx(t), FilterBenchRequest{FilterTestRequest: FilterTestRequest{Module: "builtin:redact", Input: []byte("token " + ghToken), CacheDir: cache}, N: 20})
	if err != nil {
		t.Fatal(err)
	}
	if b.N != 20 || b.Median <= 0 || b.BaselineMedian <= 0 || b.P90 < b.Median || b.Ratio <= 0 || b.Status != "replaced" {
		t.Fatalf("bench: %+v", b)
	}
}

func TestPassThroughModuleLoads(t *testing.T) {
	ctx := ctx(t)
	h, err := wasm.NewHost(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	for _, mode := range []wasm.Mode{wasm.ModeText, wasm.ModeResultJSON} {
		f, err := h.Load(ctx, wasm.Spec{Name: "pass", Module: passThroughModule, Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		in := []byte(`{"content":[{"type":"text","text":"x"}]}`)
		out, err := f.Apply(ctx, in, wasm.Meta{})
		if err != nil || out.Status != wasm.StatusPass || string(out.Data) != string(in) {
			t.Fatalf("mode %s: %+v %v", mode, out, err)
		}
	}
}

func TestFilterChangesApplyWithoutRestart(t *testing.T) {
	w := newWorld(t)
	w.writeUser("idleTimeoutMs: 60000\n")
	g := w.open()
	secret := json.RawMessage(`{"content":[{"type":"text","text":"token ` + ghToken + `"}]}`)
	if out, _, err := g.filterResult(ctx(t), "fx__echo", secret, true); err != nil || string(out) != string(secret) {
		t.Fatalf("no filters: %s, %v", out, err)
	}
	// Editing elsewhere in the file keeps the filter set.
	before := g.pipeline.cur
	w.writeUser("idleTimeoutMs: 120000\napprove: [\"fx__*\"]\n")
	if _, _, err := g.filterResult(ctx(t), "fx__echo", secret, true); err != nil || g.pipeline.cur != before {
		t.Fatalf("unrelated edit: %v (set replaced: %v)", err, g.pipeline.cur != before)
	}
	// A filter added while running applies to the next result.
	w.writeUser("idleTimeoutMs: 120000\nfilters:\n  - module: builtin:redact\n")
	out, _, err := g.filterResult(ctx(t), "fx__echo", secret, true)
	if err != nil || strings.Contains(string(out), ghToken) || !strings.Contains(string(out), "[REDACTED:github-token]") {
		t.Fatalf("added redact: %s, %v", out, err)
	}
	if st := g.FilterStatuses(); len(st) != 2 || st[0].Module != "builtin:redact" || st[0].Calls != 1 {
		t.Fatalf("statuses after the change: %+v", st)
	}
	// A user file that contributes nothing: its filters are unknown.
	w.writeUser("filters: [\n")
	_, _, err = g.filterResult(ctx(t), "fx__echo", secret, true)
	if KindOf(err) != KindFilter || !strings.Contains(err.Error(), "cannot be used") || !strings.Contains(err.Error(), "sluice check") {
		t.Fatalf("broken user file: %v", err)
	}
	// Opening with the broken file works (find, check still answer) but
	// results are withheld.
	g2 := w.open()
	if _, _, err := g2.filterResult(ctx(t), "fx__echo", secret, true); KindOf(err) != KindFilter {
		t.Fatalf("broken at open: %v", err)
	}
	// An invalid filters setting while running: withheld, naming it.
	w.writeUser("filters:\n  - module: builtin:redact\n    onErr: x\n")
	if _, _, err := g.filterResult(ctx(t), "fx__echo", secret, true); KindOf(err) != KindFilter || !strings.Contains(err.Error(), "filters[0].onErr") {
		t.Fatalf("invalid while running: %v", err)
	}
	// Fixed: results flow again, through the configured filter.
	w.writeUser("filters:\n  - module: builtin:redact\n    onError: fail-closed\n")
	out, _, err = g.filterResult(ctx(t), "fx__echo", secret, true)
	if err != nil || strings.Contains(string(out), ghToken) {
		t.Fatalf("fixed: %s, %v", out, err)
	}
}

// BenchmarkFilterResult reports the default pipeline's cost on a 62 KB
// result (shape trims and offloads it) against the same result passing the
// pipeline with no filter to run (toModel false), as a ratio.
func BenchmarkFilterResult(b *testing.B) {
	root := b.TempDir()
	env := map[string]string{"SLUICE_HOME": filepath.Join(root, "home"), "SLUICE_CACHE_DIR": filepath.Join(root, "cache"), "XDG_STATE_HOME": filepath.Join(root, "state")}
	for _, d := range env {
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	g, err := Open(&Options{Cwd: root, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	if err := g.LoadFilters(context.Background()); err != nil {
		b.Fatal(err)
	}
	big := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("a", 62000) + `"}]}`)
	ctx := context.Background()
	var shaped, floor time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := time.Now()
		if _, _, err := g.filterResult(ctx, "fx__huge", big, false); err != nil {
			b.Fatal(err)
		}
		m := time.Now()
		if _, _, err := g.filterResult(ctx, "fx__huge", big, true); err != nil {
			b.Fatal(err)
		}
		floor += m.Sub(s)
		shaped += time.Since(m)
	}
	b.ReportMetric(float64(shaped)/float64(max(floor, 1)), "x-vs-unfiltered")
	b.ReportMetric(float64(shaped.Nanoseconds())/float64(b.N), "ns/shaped-op")
}

// Calls racing with filter changes each run through one whole set; every
// replaced set is closed by the time Close returns.
func TestFilterChangesUnderConcurrentCalls(t *testing.T) {
	w := newWorld(t)
	w.writeUser("filters:\n  - module: builtin:redact\n")
	g := w.open()
	secret := json.RawMessage(`{"content":[{"type":"text","text":"token ` + ghToken + `"}]}`)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				out, _, err := g.filterResult(ctx(t), "fx__echo", secret, true)
				if err == nil && strings.Contains(string(out), ghToken) {
					errs <- errors.New("a result passed unredacted: " + string(out))
					return
				}
			}
		}()
	}
	for i := 0; i < 6; i++ {
		// Always some redact entry, with a changing extra pattern.
		w.writeUser(fmt.Sprintf("filters:\n  - module: builtin:redact\n    config: {patterns: [\"x%dy\"]}\n", i) + strings.Repeat("#\n", i))
		time.Sleep(30 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	done := make(chan struct{})
	go func() { g.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Minute): // a set closes after its load, which may be compiling cold (slow under -race)
		t.Fatal("Close did not return: a filter set was never released")
	}
}
