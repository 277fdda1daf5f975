package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sluice/gateway/mcp/mcptest"
)

func init() { mcptest.RunIfReexec() }

// world is an isolated sluice home, cache, state and project for one test.
type world struct {
	t       *testing.T
	home    string
	cache   string
	state   string
	project string
	env     map[string]string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	root := t.TempDir()
	w := &world{t: t, home: filepath.Join(root, "home"), cache: filepath.Join(root, "cache"), state: filepath.Join(root, "state"), project: filepath.Join(root, "project")}
	for _, d := range []string{w.home, w.cache, w.state, filepath.Join(w.project, ".sluice")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	w.env = map[string]string{
		"SLUICE_HOME":      w.home,
		"SLUICE_CACHE_DIR": w.cache,
		"XDG_STATE_HOME":   w.state,
		"PATH":             os.Getenv("PATH"),
		"HOME":             root,
	}
	return w
}

func (w *world) getenv(k string) string { return w.env[k] }

// fixture returns a YAML server declaration running the fixture with args.
func fixture(t *testing.T, id string, args ...string) string {
	t.Helper()
	exe, argv, err := mcptest.Command(args...)
	if err != nil {
		t.Fatal(err)
	}
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = strconv.Quote(a)
	}
	return fmt.Sprintf("  %s:\n    command: %s\n    args: [%s]\n", id, strconv.Quote(exe), strings.Join(q, ", "))
}

// writeUser replaces the user file atomically, as an editor that saves by
// rename does: a reload never sees it half written.
func (w *world) writeUser(body string) {
	w.t.Helper()
	tmp := filepath.Join(w.home, ".mcp.yaml.tmp")
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(w.home, "mcp.yaml")); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) writeProject(body string) {
	w.t.Helper()
	if err := os.WriteFile(filepath.Join(w.project, ".sluice", "mcp.yaml"), []byte(body), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) open(mut ...func(*Options)) *Gateway {
	w.t.Helper()
	warmAll()
	// killBound is generous: a SIGKILLed fixture built with -race unmaps
	// its shadow memory on exit, which on a loaded machine takes longer
	// than the 2 s a release build allows; the bound reports a group that
	// outlived SIGKILL, and such a fixture has not.
	o := &Options{Cwd: w.project, Getenv: w.getenv, testKnobs: testKnobs{killGrace: 300 * time.Millisecond, stdinGrace: 100 * time.Millisecond, killBound: 20 * time.Second, restartBackoff: 10 * time.Millisecond}}
	for _, m := range mut {
		m(o)
	}
	g, err := Open(o)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() {
		if bad := g.Close(); len(bad) > 0 {
			w.t.Errorf("incomplete teardown: %+v", bad)
		}
		waitNoChildren(w.t)
	})
	return g
}

// children counts running servers: process groups of live children.
func children() int { return mcptest.ChildGroups() }

func waitNoChildren(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for children() > 0 {
		if time.Now().After(deadline) {
			t.Errorf("%d child processes still alive", children())
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// compileCtx is ctx for work that compiles a filter module into a cold
// cache: under -race on a busy 2-core machine that alone can take minutes,
// and the deadline is not what such a test is about.
func compileCtx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	return c
}

func TestFindNeverLaunchesAndReportsMissing(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	g := w.open()
	res, err := g.Find(ctx(t), FindRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Servers) != 1 || res.Servers[0].Provenance != ProvMissing || res.Servers[0].Trust != "trusted" {
		t.Fatalf("want one trusted server with a missing catalog, got %+v", res.Servers)
	}
	if !strings.Contains(res.Servers[0].Remedy, "sluice find --server fx --refresh") {
		t.Fatalf("remedy %q", res.Servers[0].Remedy)
	}
	if n := children(); n != 0 {
		t.Fatalf("find launched %d processes", n)
	}
	if _, err := g.Describe(ctx(t), "fx__echo"); KindOf(err) != KindMissing {
		t.Fatalf("describe without a catalog: %v", err)
	}
	if n := children(); n != 0 {
		t.Fatalf("describe launched %d processes", n)
	}
}

func TestScopedRefreshLaunchesExactlyOneThenCacheAnswers(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "a") + fixture(t, "b", "-tools", "3"))
	g := w.open()
	if _, err := g.Find(ctx(t), FindRequest{Refresh: true}); KindOf(err) != KindBadInput {
		t.Fatalf("unscoped refresh must be refused, got %v", err)
	}
	res, err := g.Find(ctx(t), FindRequest{Server: "b", Refresh: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := children(); n != 1 {
		t.Fatalf("scoped refresh: %d processes, want exactly 1", n)
	}
	if res.Servers[0].Provenance != ProvLive || res.Servers[0].Tools < 3 {
		t.Fatalf("refresh result %+v", res.Servers)
	}
	if bad := g.Close(); len(bad) > 0 {
		t.Fatal(bad)
	}
	waitNoChildren(t)

	// A new gateway answers from the recorded catalog without launching.
	g2 := w.open()
	res, err = g2.Find(ctx(t), FindRequest{Query: "generated tool"})
	if err != nil {
		t.Fatal(err)
	}
	if n := children(); n != 0 {
		t.Fatalf("cached find launched %d processes", n)
	}
	var b FindServer
	for _, s := range res.Servers {
		if s.ID == "b" {
			b = s
		}
	}
	if b.Provenance != ProvCached || len(res.Tools) != 3 {
		t.Fatalf("cached: %+v tools %+v", b, res.Tools)
	}
	d, err := g2.Describe(ctx(t), "b__echo")
	if err != nil {
		t.Fatal(err)
	}
	if d.Provenance != ProvCached || !strings.Contains(string(d.InputSchema), `"text"`) || d.Admission != "run" {
		t.Fatalf("describe from cache: %+v", d)
	}
	if n := children(); n != 0 {
		t.Fatalf("cached describe launched %d processes", n)
	}
}

func TestCallLaunchesLazilyAndPreservesResults(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx") + "approve: [\"fx__bad_iserror\", \"fx__fail\"]\n")
	g := w.open()
	if n := children(); n != 0 {
		t.Fatalf("open launched %d", n)
	}
	r, err := g.Call(ctx(t), CallRequest{Capability: "fx__add", Arguments: json.RawMessage(`{"a": 12345678901234567890, "b": 0.5}`)})
	if err != nil {
		t.Fatal(err)
	}
	if n := children(); n != 1 {
		t.Fatalf("call: %d processes, want 1", n)
	}
	if !strings.Contains(string(r.Result), "12345678901234567890.5") {
		t.Fatalf("number re-encoded: %s", r.Result)
	}
	r, err = g.Call(ctx(t), CallRequest{Capability: "fx__structured"})
	if err != nil {
		t.Fatal(err)
	}
	var sr struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent"`
	}
	if err := json.Unmarshal(r.Result, &sr); err != nil || len(sr.StructuredContent) == 0 || len(sr.Content) != 0 {
		t.Fatalf("structured-only result lost: %s", r.Result)
	}
	if _, err := g.Call(ctx(t), CallRequest{Capability: "fx__bad_iserror"}); KindOf(err) != KindUpstream {
		t.Fatalf("a non-boolean isError must make the call unsuccessful, got %v", err)
	}
	r, err = g.Call(ctx(t), CallRequest{Capability: "fx__fail"})
	if err != nil || !r.IsError {
		t.Fatalf("tool error: %+v %v", r, err)
	}
	if _, err := g.Call(ctx(t), CallRequest{Capability: "fx__nope"}); KindOf(err) != KindUnknown {
		t.Fatalf("unknown tool: %v", err)
	}
	if _, err := g.Call(ctx(t), CallRequest{Capability: "fx_echo"}); KindOf(err) != KindBadInput {
		t.Fatalf("bad capability: %v", err)
	}
	if _, err := g.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: json.RawMessage(`[1]`)}); KindOf(err) != KindBadInput {
		t.Fatalf("bad args: %v", err)
	}
	if n := children(); n != 1 {
		t.Fatalf("one live client per server: %d processes", n)
	}
	if bad := g.Close(); len(bad) > 0 {
		t.Fatal(bad)
	}
	waitNoChildren(t)
}

func TestAdmission(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx") + fixture(t, "rd") + "    actionClass: read\napprove: [\"fx__list_*\"]\n")
	g := w.open()
	// readOnlyHint counts as read on a trusted server.
	if _, err := g.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: json.RawMessage(`{"text":"hi"}`)}); err != nil {
		t.Fatal(err)
	}
	// No annotation, no class: unknown, refused with the remedy.
	_, err := g.Call(ctx(t), CallRequest{Capability: "fx__fail"})
	if KindOf(err) != KindRefused || !strings.Contains(err.Error(), "--yes") || !strings.Contains(err.Error(), "approve:") {
		t.Fatalf("want a refusal naming the remedies, got %v", err)
	}
	// --yes approves.
	if _, err := g.Call(ctx(t), CallRequest{Capability: "fx__fail", Yes: true}); err != nil {
		t.Fatal(err)
	}
	// A prompt that declines.
	asked := 0
	_, err = g.Call(ctx(t), CallRequest{Capability: "fx__fail", Approve: func(context.Context, ApprovalRequest) (bool, error) { asked++; return false, nil }})
	if KindOf(err) != KindRefused || asked != 1 {
		t.Fatalf("declined: %v asked=%d", err, asked)
	}
	// approve glob.
	if _, err := g.Call(ctx(t), CallRequest{Capability: "fx__list_changed"}); err != nil {
		t.Fatal(err)
	}
	// declared class read.
	if _, err := g.Call(ctx(t), CallRequest{Capability: "rd__fail"}); err != nil {
		t.Fatal(err)
	}
}

// The canary: a project declaration whose command would create a marker
// file is never launched while untrusted or stale, through every path.
func TestCanaryUntrustedAndStaleNeverLaunch(t *testing.T) {
	w := newWorld(t)
	marker := filepath.Join(t.TempDir(), "launched")
	decl := fmt.Sprintf("servers:\n  canary:\n    command: touch\n    args: [%q]\n", marker)
	w.writeProject(decl)
	g := w.open()
	check := func(stage string) {
		t.Helper()
		res, err := g.Find(ctx(t), FindRequest{Query: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Servers) != 1 || res.Servers[0].Trust != stage || !strings.Contains(res.Servers[0].Remedy, "sluice trust canary") {
			t.Fatalf("%s: find %+v", stage, res.Servers)
		}
		if _, err := g.Find(ctx(t), FindRequest{Server: "canary", Refresh: true}); KindOf(err) != KindUntrusted {
			t.Fatalf("%s: refresh %v", stage, err)
		}
		if _, err := g.Describe(ctx(t), "canary__x"); KindOf(err) != KindUntrusted {
			t.Fatalf("%s: describe %v", stage, err)
		}
		if _, err := g.Call(ctx(t), CallRequest{Capability: "canary__x", Yes: true}); KindOf(err) != KindUntrusted || !strings.Contains(err.Error(), "sluice trust canary") {
			t.Fatalf("%s: call %v", stage, err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s: the canary was launched", stage)
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
	if v, _ := g.server("canary"); !v.Trusted() || v.ActionClass != "read" {
		t.Fatalf("after trust: %+v", v)
	}
	// Change a digest field: the record goes stale.
	time.Sleep(10 * time.Millisecond)
	w.writeProject(decl + "    timeoutMs: 1000\n")
	check("stale")
	v, _ := g.server("canary")
	if len(v.Changed) != 1 || v.Changed[0] != "timeoutMs" {
		t.Fatalf("stale must name the changed field: %+v", v.Changed)
	}
}

func TestCrashLoopAndRecovery(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "bad", "-mode", "exit-at-start") + fixture(t, "good"))
	g := w.open(func(o *Options) { o.crashLoopLimit = 3 })
	var last error
	for i := 0; i < 3; i++ {
		_, last = g.Call(ctx(t), CallRequest{Capability: "bad__echo", Arguments: json.RawMessage(`{"text":"x"}`)})
		if KindOf(last) != KindUpstream {
			t.Fatalf("attempt %d: %v", i, last)
		}
	}
	_, err := g.Call(ctx(t), CallRequest{Capability: "bad__echo", Arguments: json.RawMessage(`{"text":"x"}`)})
	if KindOf(err) != KindCrashLoop || !strings.Contains(err.Error(), "--refresh") {
		t.Fatalf("want crash-loop, got %v", err)
	}
	// One failing server never breaks find or calls to others.
	if _, err := g.Find(ctx(t), FindRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Call(ctx(t), CallRequest{Capability: "good__echo", Arguments: json.RawMessage(`{"text":"x"}`)}); err != nil {
		t.Fatal(err)
	}
	rep := g.Servers()
	for _, s := range rep.Servers {
		if s.ID == "bad" && s.Run != RunCrashLoop {
			t.Fatalf("bad run state %s", s.Run)
		}
	}
}

func TestDeadServerRelaunchesOnNextCall(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx") + "    actionClass: execute\napprove: [\"*\"]\n")
	g := w.open()
	if _, err := g.Call(ctx(t), CallRequest{Capability: "fx__crash"}); KindOf(err) != KindUpstream {
		t.Fatalf("crash mid-call: %v", err)
	}
	r, err := g.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: json.RawMessage(`{"text":"again"}`)})
	if err != nil || !strings.Contains(string(r.Result), "again") {
		t.Fatalf("relaunch: %v %+v", err, r)
	}
}

func TestListChangedRefreshesCatalog(t *testing.T) {
	w := newWorld(t)
	// onToolChange: accept, so the added tool is not held for review
	// (hold_test.go and the CLI tests cover holding).
	w.writeUser("servers:\n" + fixture(t, "fx") + "    onToolChange: accept\napprove: [\"*\"]\n")
	g := w.open()
	var mu sync.Mutex
	fired := 0
	g.Subscribe(func() { mu.Lock(); fired++; mu.Unlock() })
	if _, err := g.Call(ctx(t), CallRequest{Capability: "fx__list_changed"}); err != nil {
		t.Fatal(err)
	}
	// The relist updates the listing, records the catalog, then tells the
	// watchers; wait for all three.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := g.Describe(ctx(t), "fx__late_tool")
		mu.Lock()
		n := fired
		mu.Unlock()
		if err == nil && n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after tools/list_changed: describe late_tool: %v; watchers fired %d times", err, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestIdleServersAreReaped(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	g := w.open(func(o *Options) { o.IdleTimeout = 100 * time.Millisecond })
	if _, err := g.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: json.RawMessage(`{"text":"x"}`)}); err != nil {
		t.Fatal(err)
	}
	waitNoChildren(t)
	// The next call relaunches.
	if _, err := g.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: json.RawMessage(`{"text":"x"}`)}); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentCallsShareOneClient(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	g := w.open()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			text := fmt.Sprintf("m%d", i)
			r, err := g.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: json.RawMessage(`{"text":"` + text + `"}`)})
			if err == nil && !strings.Contains(string(r.Result), text) {
				err = fmt.Errorf("mismatched result %s for %s", r.Result, text)
			}
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := children(); n != 1 {
		t.Fatalf("%d processes for one server", n)
	}
}

func TestExplicitClassBeatsAnnotations(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "ex") + "    actionClass: execute\n" + fixture(t, "un") + "    actionClass: unknown\n")
	g := w.open()
	// echo is annotated readOnlyHint: true, but the operator's class decides.
	for _, c := range []string{"ex__echo", "un__echo"} {
		_, err := g.Call(ctx(t), CallRequest{Capability: c, Arguments: json.RawMessage(`{"text":"x"}`)})
		if KindOf(err) != KindRefused {
			t.Fatalf("%s: an explicit class must beat readOnlyHint, got %v", c, err)
		}
	}
}

func TestProjectTrustWithoutClassLetsAnnotationsDecide(t *testing.T) {
	w := newWorld(t)
	w.writeProject("servers:\n" + fixture(t, "pj"))
	g := w.open()
	plan, err := g.PlanTrust("pj", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Trust(plan); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Call(ctx(t), CallRequest{Capability: "pj__echo", Arguments: json.RawMessage(`{"text":"x"}`)}); err != nil {
		t.Fatalf("read-only tool of a project server trusted without a class: %v", err)
	}
	if _, err := g.Call(ctx(t), CallRequest{Capability: "pj__fail"}); KindOf(err) != KindRefused {
		t.Fatalf("unannotated tool must need approval, got %v", err)
	}
	// Re-trusting with an explicit unknown makes every call ask.
	plan, _ = g.PlanTrust("pj", "unknown")
	if err := g.Trust(plan); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Call(ctx(t), CallRequest{Capability: "pj__echo", Arguments: json.RawMessage(`{"text":"x"}`)}); KindOf(err) != KindRefused {
		t.Fatalf("explicit unknown must ask, got %v", err)
	}
	// Re-trusting without a class keeps the recorded one.
	plan, _ = g.PlanTrust("pj", "")
	if plan.ActionClass != "unknown" {
		t.Fatalf("re-trust changed the class to %q", plan.ActionClass)
	}
}

func TestDeniedEnvIsADiagnosticBeforeLaunch(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "bad") + "    env: {LD_PRELOAD: /x.so, OK_NAME: fine}\n    passEnv: [NODE_OPTIONS]\n")
	g := w.open()
	rep := g.Servers()
	if !rep.Errors {
		t.Fatal("a denied env variable must make the report an error")
	}
	var got []string
	for _, d := range rep.Diagnostics {
		got = append(got, d.Field+": "+d.Message)
	}
	all := strings.Join(got, "\n")
	if !strings.Contains(all, "servers.bad.env.LD_PRELOAD") || !strings.Contains(all, "env-denied-loader") ||
		!strings.Contains(all, "servers.bad.passEnv") || !strings.Contains(all, "NODE_OPTIONS") || strings.Contains(all, "OK_NAME") {
		t.Fatalf("diagnostics:\n%s", all)
	}
	if strings.Contains(all, "/x.so") {
		t.Fatal("a diagnostic must never carry an env value")
	}
	_, err := g.Call(ctx(t), CallRequest{Capability: "bad__echo", Arguments: json.RawMessage(`{"text":"x"}`)})
	if KindOf(err) != KindUpstream || !strings.Contains(err.Error(), "env-denied-loader") || strings.Count(err.Error(), "bad") > 2 {
		t.Fatalf("spawn refusal: %v", err)
	}
}

func TestStderrNeverInModelText(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "dies", "-mode", "exit-at-start"))
	g := w.open()
	_, err := g.Find(ctx(t), FindRequest{Server: "dies", Refresh: true})
	var ge *Error
	if !errors.As(err, &ge) || ge.Stderr == "" || !strings.Contains(ge.Stderr, "refusing to start") {
		t.Fatalf("the stderr tail must be kept for people: %#v", err)
	}
	if strings.Contains(err.Error(), "refusing to start") {
		t.Fatalf("stderr leaked into the message: %v", err)
	}
	res, _ := g.Find(ctx(t), FindRequest{})
	for _, s := range res.Servers {
		if strings.Contains(s.Error, "refusing to start") {
			t.Fatalf("stderr leaked into find: %+v", s)
		}
	}
}

func TestRefreshOfUntrustedServerIsRefused(t *testing.T) {
	w := newWorld(t)
	w.writeProject("servers:\n" + fixture(t, "pj"))
	g := w.open()
	if _, err := g.Find(ctx(t), FindRequest{Server: "pj", Refresh: true}); KindOf(err) != KindUntrusted {
		t.Fatalf("want an untrusted refusal, got %v", err)
	}
	if n := children(); n != 0 {
		t.Fatalf("launched %d", n)
	}
}

func TestAllowListWarningsAreDiagnostics(t *testing.T) {
	w := newWorld(t)
	w.env["SLUICE_ALLOW_COMMANDS"] = "node,*,/usr/bin/x"
	w.writeUser("servers:\n" + fixture(t, "fx"))
	g := w.open()
	rep := g.Servers()
	n := 0
	for _, d := range rep.Diagnostics {
		if d.File == "$SLUICE_ALLOW_COMMANDS" && d.Severity == "warning" {
			n++
		}
	}
	if n != 2 || rep.Errors {
		t.Fatalf("want two warnings and no error: %+v", rep.Diagnostics)
	}
	// The fixture is an absolute path: the allow-list covers bare names only.
	if _, err := g.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: json.RawMessage(`{"text":"x"}`)}); err != nil {
		t.Fatal(err)
	}
}

func TestEmptiedFileIsMidSaveForAMoment(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	// The reaper reads the clock too: guard it.
	var mu sync.Mutex
	now := time.Now()
	setNow := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	g := w.open(func(o *Options) {
		o.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	})
	if len(g.reload().Servers) != 1 {
		t.Fatal("want one server")
	}
	// An in-place save truncates first: for a moment the file is empty.
	if err := os.WriteFile(filepath.Join(w.home, "mcp.yaml"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	setNow(time.Now())
	if len(g.reload().Servers) != 1 {
		t.Fatal("an empty file seen right after it changed must not drop the declarations")
	}
	// Still empty well after the change: emptied on purpose.
	setNow(time.Now().Add(2 * saveWindow))
	if len(g.reload().Servers) != 0 {
		t.Fatal("a file that stays empty must take effect")
	}
}
