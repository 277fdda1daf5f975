//go:build unix

package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"sluice/gateway/mcp"
	"sluice/gateway/mcp/mcptest"
	"sluice/gateway/proc"
)

// The test binary doubles as the fixture server: mcptest.Command re-executes
// it with mcptest.ReexecArg first, and this hook turns that process into the
// fixture before any test machinery starts.
func init() { mcptest.RunIfReexec() }

// hangGuard bounds every wait; it is never a timing assertion.
const hangGuard = 20 * time.Second

var fixtureSeq atomic.Int64

// fixtureSpec returns a spec that runs the fixture with args under a unique
// -name token (see leftovers) and short teardown graces.
func fixtureSpec(t testing.TB, server string, args ...string) (proc.Spec, string) {
	t.Helper()
	token := fmt.Sprintf("sluicefx%d-%d", os.Getpid(), fixtureSeq.Add(1))
	exe, argv, err := mcptest.Command(append([]string{"-name", token}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return proc.Spec{
		Server:     server,
		Command:    exe,
		Args:       argv,
		StdinGrace: 100 * time.Millisecond,
		KillGrace:  100 * time.Millisecond,
		KillBound:  5 * time.Second,
	}, token
}

type live struct{ pid, pgid int }

// leftovers lists live (not zombie) processes whose command line contains
// token. It only detects: cleanup is by process group.
func leftovers(token string) []live {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []live
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, []byte(token)) {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		pgid, _ := strconv.Atoi(f[2])
		out = append(out, live{pid, pgid})
	}
	return out
}

// requireGone fails the test if a process of the fixture run named token
// is alive, or if the group pgid (when > 0) does not disappear within the
// hang guard (zombies of orphaned grandchildren are reaped by pid 1 on its
// own schedule; proc.GroupAlive counts them, so it is polled). Survivors
// are killed by process group.
func requireGone(t testing.TB, token string, pgid int) {
	t.Helper()
	if l := leftovers(token); len(l) > 0 {
		for _, p := range l {
			_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		}
		t.Errorf("%d fixture process(es) still alive after teardown: %v", len(l), l)
	}
	if pgid <= 0 {
		return
	}
	deadline := time.Now().Add(hangGuard)
	for proc.GroupAlive(pgid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			t.Errorf("process group %d still exists after teardown", pgid)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitFor polls cond until it holds or the hang guard expires.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func countFDs(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("counting fds: %v", err)
	}
	return len(ents)
}

// leakCheck records goroutines and fds now; the returned func waits (hang
// guard) for both to come back to that level and fails otherwise.
func leakCheck(t *testing.T) func() {
	t.Helper()
	g0, f0 := runtime.NumGoroutine(), countFDs(t)
	return func() {
		t.Helper()
		deadline := time.Now().Add(hangGuard)
		for {
			g, f := runtime.NumGoroutine(), countFDs(t)
			if g <= g0 && f <= f0 {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("leak: goroutines %d -> %d, fds %d -> %d\n%s", g0, g, f0, f, buf)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// warmUp runs one fixture so that lazily started, long-lived helpers (the
// proc spawn thread, signal handling) exist before a leak baseline is taken.
func warmUp(t *testing.T) {
	t.Helper()
	spec, token := fixtureSpec(t, "warmup")
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	c, err := mcp.Start(ctx, spec, nil)
	if err != nil {
		t.Fatalf("warm-up fixture: %v", err)
	}
	out := c.Close()
	requireGone(t, token, out.Pgid)
}

// requireTyped checks that err is an *mcp.Error naming server with one of
// the accepted codes.
func requireTyped(t testing.TB, err error, server string, codes ...mcp.Code) *mcp.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one of %v", codes)
	}
	var e *mcp.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %q is not an *mcp.Error", err, err)
	}
	if !slices.Contains(codes, mcp.CodeOf(err)) {
		t.Fatalf("code %q (%v), want one of %v", mcp.CodeOf(err), err, codes)
	}
	if e.Server != server || !strings.Contains(err.Error(), strconv.Quote(server)) {
		t.Fatalf("error does not name server %q: Server=%q, %q", server, e.Server, err)
	}
	return e
}

func startFixture(t *testing.T, server string, opts *mcp.Options, args ...string) (*mcp.Client, string) {
	t.Helper()
	spec, token := fixtureSpec(t, server, args...)
	// A well-behaved fixture leaves on stdin EOF; a long grace keeps the
	// reported stage from depending on how loaded the machine is.
	spec.StdinGrace = hangGuard / 2
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	c, err := mcp.Start(ctx, spec, opts)
	if err != nil {
		requireGone(t, token, 0)
		t.Fatalf("starting the fixture %v: %v", args, err)
	}
	// Also on failure paths: Close is idempotent.
	t.Cleanup(func() { requireGone(t, token, c.Close().Pgid) })
	return c, token
}

func closeFixture(t *testing.T, c *mcp.Client, token string) proc.Outcome {
	t.Helper()
	out := c.Close()
	if !out.Complete {
		t.Errorf("teardown incomplete: %+v", out)
	}
	requireGone(t, token, out.Pgid)
	return out
}

func bg(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}

type callResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Structured json.RawMessage `json:"structuredContent"`
	IsError    bool            `json:"isError"`
	ResultType string          `json:"resultType"`
}

func decodeResult(t testing.TB, raw json.RawMessage) callResult {
	t.Helper()
	var r callResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("decoding result %.300s: %v", raw, err)
	}
	return r
}

// TestFixtureHappyPaths drives the well-behaved fixture, as a real process,
// through both eras and every feature the client has.
func TestFixtureHappyPaths(t *testing.T) {
	warmUp(t)
	defer leakCheck(t)()

	for _, tc := range []struct {
		name, era, wantEra, wantVersion string
		args                            []string
	}{
		{"auto dual-era", "", "modern", mcptest.ModernVersion, nil},
		{"forced legacy", "legacy", "legacy", mcptest.LatestLegacyVersion, nil},
		{"auto legacy-only", "", "legacy", mcptest.LatestLegacyVersion, []string{"-mode", "legacy-only"}},
		{"auto modern-only", "", "modern", mcptest.ModernVersion, []string{"-mode", "modern-only"}},
		{"forced modern", "modern", "modern", mcptest.ModernVersion, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var notes []string
			opts := &mcp.Options{Era: tc.era, OnNotification: func(method string, _ json.RawMessage) {
				mu.Lock()
				notes = append(notes, method)
				mu.Unlock()
			}}
			c, token := startFixture(t, "happy", opts, tc.args...)
			ctx := bg(t)
			if c.Era() != tc.wantEra || c.ProtocolVersion() != tc.wantVersion || c.State() != mcp.Ready {
				t.Fatalf("era %q version %q state %v", c.Era(), c.ProtocolVersion(), c.State())
			}
			if si := c.ServerInfo(); si.Name != token || !bytes.Contains(si.Capabilities, []byte("tools")) {
				t.Fatalf("server info %+v", si)
			}
			list, err := c.ListTools(ctx)
			if err != nil || len(list.Tools) != len(mcptest.BuiltinTools) || list.Truncated {
				t.Fatalf("ListTools: %v, %+v", err, list)
			}
			for _, tl := range list.Tools {
				if tl.Name == "echo" && !bytes.Contains(tl.Annotations, []byte(`"readOnlyHint":true`)) {
					t.Errorf("echo annotations %s", tl.Annotations)
				}
			}

			res, err := c.CallTool(ctx, "add", json.RawMessage(`{"a":12345678901234567890,"b":0.5}`), nil)
			if err != nil || !bytes.Contains(res, []byte(`"sum":12345678901234567890.5`)) {
				t.Fatalf("add: %v, %s", err, res)
			}

			res, err = c.CallTool(ctx, "meta", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := decodeResult(t, res)
			var m struct {
				Era  string
				Meta map[string]json.RawMessage
			}
			if err := json.Unmarshal(r.Structured, &m); err != nil || m.Era != tc.wantEra {
				t.Fatalf("meta tool: %v %s", err, r.Structured)
			}
			if tc.wantEra == "modern" {
				for _, k := range []string{mcptest.MetaProtocolVersion, mcptest.MetaClientCapabilities, mcptest.MetaClientInfo} {
					if m.Meta[k] == nil {
						t.Errorf("modern request lacks _meta[%q]: %s", k, r.Structured)
					}
				}
				if r.ResultType != "complete" {
					t.Errorf("resultType %q", r.ResultType)
				}
			}

			// Progress: three steps, in order.
			// Progress: three steps, in order. OnProgress runs on the
			// client's dispatch goroutine, possibly after CallTool returned.
			var progress []string
			res, err = c.CallTool(ctx, "slow", json.RawMessage(`{"ms":30,"steps":3}`), &mcp.CallOptions{
				OnProgress: func(p json.RawMessage) {
					mu.Lock()
					progress = append(progress, string(p))
					mu.Unlock()
				},
			})
			if err != nil {
				t.Fatalf("slow with progress: %v", err)
			}
			// All three preceded the result on the wire, so all three must
			// reach OnProgress (a client that skips callbacks still queued
			// when the call returns loses the last ones).
			waitFor(t, "three progress notifications that preceded the result", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(progress) == 3 && strings.Contains(progress[2], `"progress":3`)
			})

			// Tool errors are results, not Go errors.
			res, err = c.CallTool(ctx, "fail", nil, nil)
			if err != nil || !decodeResult(t, res).IsError {
				t.Fatalf("fail: %v %s", err, res)
			}
			res, err = c.CallTool(ctx, "structured", nil, nil)
			if r := decodeResult(t, res); err != nil || len(r.Content) != 0 || !bytes.Contains(r.Structured, []byte(`-3.5`)) {
				t.Fatalf("structured: %v %s", err, res)
			}
			// Unknown tool: a JSON-RPC error, CodeServer with the object kept.
			_, err = c.CallTool(ctx, "nope", nil, nil)
			if e := requireTyped(t, err, "happy", mcp.CodeServer); e.RPC == nil || e.RPC.Code != mcptest.CodeInvalidParams {
				t.Fatalf("unknown tool: %+v", e)
			}
			// A malformed isError is a protocol error; the client stays usable.
			_, err = c.CallTool(ctx, "bad_iserror", nil, nil)
			requireTyped(t, err, "happy", mcp.CodeProtocol)

			// list_changed reaches OnNotification; late_tool is then listed.
			if _, err := c.CallTool(ctx, "list_changed", nil, nil); err != nil {
				t.Fatal(err)
			}
			list, err = c.ListTools(ctx)
			if err != nil || list.Tools[len(list.Tools)-1].Name != "late_tool" {
				t.Fatalf("ListTools after list_changed: %v", err)
			}
			waitFor(t, "a list_changed notification", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return slices.Contains(notes, "notifications/tools/list_changed")
			})

			// Server->client roots/list (legacy only) gets the built-in answer.
			res, err = c.CallTool(ctx, "ask_roots", nil, nil)
			r = decodeResult(t, res)
			switch {
			case err != nil:
				t.Fatal(err)
			case tc.wantEra == "legacy" && (r.IsError || !bytes.Contains(r.Structured, []byte(`"roots":[]`))):
				t.Fatalf("ask_roots (legacy): %s", res)
			case tc.wantEra == "modern" && !r.IsError:
				t.Fatalf("ask_roots (modern) should be refused by the fixture: %s", res)
			}

			if c.State() != mcp.Ready {
				t.Fatalf("state %v after the tour", c.State())
			}
			out := closeFixture(t, c, token)
			if out.Stage != proc.StageExited {
				t.Errorf("a well-behaved fixture needed %q to stop", out.Stage)
			}
			if _, err := c.CallTool(ctx, "echo", json.RawMessage(`{"text":"x"}`), nil); err == nil {
				t.Fatal("call after Close succeeded")
			} else {
				requireTyped(t, err, "happy", mcp.CodeClosed)
			}
		})
	}
}

func TestFixturePagination(t *testing.T) {
	warmUp(t)
	defer leakCheck(t)()
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			c, token := startFixture(t, "pages", &mcp.Options{Era: era}, "-mode", "paginated", "-tools", "20", "-page", "3")
			list, err := c.ListTools(bg(t))
			want := len(mcptest.BuiltinTools) + 20
			if err != nil || len(list.Tools) != want || list.Truncated || list.Tools[want-1].Name != "tool_0020" {
				t.Fatalf("ListTools: %v, %d tools", err, len(list.Tools))
			}
			closeFixture(t, c, token)
		})
	}
	t.Run("truncated", func(t *testing.T) {
		c, token := startFixture(t, "many", nil, "-tools", "600", "-page", "50")
		list, err := c.ListTools(bg(t))
		if err != nil || !list.Truncated || len(list.Tools) != mcp.MaxTools {
			t.Fatalf("ListTools: %v, %d tools, truncated %v", err, len(list.Tools), list.Truncated)
		}
		closeFixture(t, c, token)
	})
	t.Run("cursor loop", func(t *testing.T) {
		c, token := startFixture(t, "loop", nil, "-mode", "cursor-loop")
		_, err := c.ListTools(bg(t))
		requireTyped(t, err, "loop", mcp.CodeProtocol)
		closeFixture(t, c, token)
	})
}

// TestFixtureConcurrentCalls: many calls in flight at once, answered out of
// order (slow ones overtaken by fast ones), each get their own result.
func TestFixtureConcurrentCalls(t *testing.T) {
	warmUp(t)
	defer leakCheck(t)()
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			c, token := startFixture(t, "concurrent", &mcp.Options{Era: era})
			ctx := bg(t)
			var wg sync.WaitGroup
			errs := make(chan error, 64)
			for i := 0; i < 32; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if i%4 == 0 {
						_, err := c.CallTool(ctx, "slow", json.RawMessage(fmt.Sprintf(`{"ms":%d,"steps":1}`, 10+i)), nil)
						errs <- err
						return
					}
					want := fmt.Sprintf("call %d", i)
					res, err := c.CallTool(ctx, "echo", json.RawMessage(fmt.Sprintf(`{"text":%q}`, want)), nil)
					if err == nil && !bytes.Contains(res, []byte(strconv.Quote(want))) {
						err = fmt.Errorf("call %d got %s", i, res)
					}
					errs <- err
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
			closeFixture(t, c, token)
		})
	}
}

// TestFixtureCallFaults: timeouts, aborts and Close during a call leave the
// client and the test process working.
func TestFixtureCallFaults(t *testing.T) {
	warmUp(t)
	defer leakCheck(t)()
	// Short graces (fixtureSpec's): at Close a call is still running, so the
	// fixture, which lets calls finish after stdin EOF, needs SIGTERM.
	spec, token := fixtureSpec(t, "calls")
	ctx := bg(t)
	c, err := mcp.Start(ctx, spec, nil)
	if err != nil {
		requireGone(t, token, 0)
		t.Fatal(err)
	}
	t.Cleanup(func() { requireGone(t, token, c.Close().Pgid) })

	_, err = c.CallTool(ctx, "slow", json.RawMessage(`{"ms":600000}`), &mcp.CallOptions{Timeout: 50 * time.Millisecond})
	requireTyped(t, err, "calls", mcp.CodeTimeout)

	actx, cancel := context.WithCancel(ctx)
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	_, err = c.CallTool(actx, "slow", json.RawMessage(`{"ms":600000}`), nil)
	requireTyped(t, err, "calls", mcp.CodeAborted)

	// Still usable; the fixture saw both cancellations (it logs them).
	res, err := c.CallTool(ctx, "echo", json.RawMessage(`{"text":"still here"}`), nil)
	if err != nil || decodeResult(t, res).Content[0].Text != "still here" {
		t.Fatalf("echo after faults: %v %s", err, res)
	}

	// Close while a call is in flight: the call fails as closed.
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "slow", json.RawMessage(`{"ms":600000}`), nil)
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	closeFixture(t, c, token)
	select {
	case err := <-errc:
		requireTyped(t, err, "calls", mcp.CodeClosed)
	case <-time.After(hangGuard):
		t.Fatal("in-flight call not failed by Close")
	}
}

type faultCase struct {
	name string
	args []string
	opts mcp.Options
	// startCodes, when set, means Start must fail with one of them.
	startCodes []mcp.Code
	// act provokes the fault on a started client; codes are accepted for
	// its error. act nil: the fault is in teardown (see stage).
	act   func(ctx context.Context, c *mcp.Client) error
	codes []mcp.Code
	// check inspects the typed error further.
	check func(t *testing.T, e *mcp.Error)
	// stage, when set, is the teardown stage Close must report.
	stage string
}

func callEcho(ctx context.Context, c *mcp.Client) error {
	_, err := c.CallTool(ctx, "echo", json.RawMessage(`{"text":"hi"}`), nil)
	return err
}

func mentions(subs ...string) func(t *testing.T, e *mcp.Error) {
	return func(t *testing.T, e *mcp.Error) {
		t.Helper()
		// The stderr tail may sit on a wrapped *mcp.Error (the client's
		// fatal error inside a call's error).
		text := e.Error()
		for err := error(e); err != nil; err = errors.Unwrap(err) {
			if me, ok := err.(*mcp.Error); ok {
				text += "\n" + me.StderrTail
			}
		}
		for _, s := range subs {
			if !strings.Contains(text, s) {
				t.Errorf("error and stderr tail %q do not mention %q", text, s)
			}
		}
	}
}

var faultCases = []faultCase{
	{name: "no-init", args: []string{"-mode", "no-init"},
		opts:       mcp.Options{InitializeTimeout: 400 * time.Millisecond, DiscoverTimeout: 100 * time.Millisecond},
		startCodes: []mcp.Code{mcp.CodeTimeout}},
	{name: "slow handshake", args: []string{"-mode", "slow", "-delay", "10m"},
		opts:       mcp.Options{InitializeTimeout: 300 * time.Millisecond, DiscoverTimeout: 100 * time.Millisecond},
		startCodes: []mcp.Code{mcp.CodeTimeout}},
	{name: "exit-at-start", args: []string{"-mode", "exit-at-start"},
		startCodes: []mcp.Code{mcp.CodeClosed}, check: mentions("refusing to start")},
	{name: "modern-only forced legacy", args: []string{"-mode", "modern-only"}, opts: mcp.Options{Era: "legacy"},
		startCodes: []mcp.Code{mcp.CodeProtocol, mcp.CodeServer}},
	{name: "legacy-only forced modern", args: []string{"-mode", "legacy-only"}, opts: mcp.Options{Era: "modern"},
		startCodes: []mcp.Code{mcp.CodeProtocol}},
	{name: "banner fatal", args: []string{"-mode", "banner"}, opts: mcp.Options{NoiseFatal: true},
		startCodes: []mcp.Code{mcp.CodeProtocol}, check: mentions("stdoutNoise")},
	{name: "flood during handshake", args: []string{"-mode", "flood,no-init"},
		opts:       mcp.Options{MaxLineBytes: 1 << 20},
		startCodes: []mcp.Code{mcp.CodeProtocol}, check: mentions("maxLineBytes", strconv.Itoa(1<<20))},
	{name: "crash mid-call", args: []string{"-mode", "crash"}, act: callEcho,
		codes: []mcp.Code{mcp.CodeClosed, mcp.CodeProtocol}, check: mentions("status 3")},
	{name: "crash tool", act: func(ctx context.Context, c *mcp.Client) error {
		_, err := c.CallTool(ctx, "crash", nil, nil)
		return err
	}, codes: []mcp.Code{mcp.CodeClosed, mcp.CodeProtocol}},
	{name: "huge result", args: []string{"-mode", "huge"}, act: callEcho,
		codes: []mcp.Code{mcp.CodeProtocol}, check: mentions("maxLineBytes", strconv.Itoa(mcp.DefaultMaxLineBytes))},
	{name: "huge tool over a small cap", opts: mcp.Options{MaxLineBytes: 64 << 10}, act: func(ctx context.Context, c *mcp.Client) error {
		_, err := c.CallTool(ctx, "huge", json.RawMessage(`{"bytes":100000}`), nil)
		return err
	}, codes: []mcp.Code{mcp.CodeProtocol}, check: mentions("maxLineBytes", "65536")},
	{name: "flood", args: []string{"-mode", "flood"}, opts: mcp.Options{MaxLineBytes: 1 << 20},
		act: func(ctx context.Context, c *mcp.Client) error {
			_, err := c.ListTools(ctx)
			return err
		}, codes: []mcp.Code{mcp.CodeProtocol}, check: mentions("maxLineBytes")},
	{name: "invalid utf-8", args: []string{"-mode", "invalid-utf8"}, act: callEcho,
		codes: []mcp.Code{mcp.CodeProtocol}, check: mentions("UTF-8")},
	{name: "stop-reading", args: []string{"-mode", "stop-reading"}, opts: mcp.Options{MaxOutboundBytes: 64 << 10},
		act: func(ctx context.Context, c *mcp.Client) error {
			// Calls with 32 KiB of arguments fill the pipe and then the
			// client's outbound queue; each one times out or is refused.
			arg := json.RawMessage(`{"text":"` + strings.Repeat("q", 32<<10) + `"}`)
			var last error
			for i := 0; i < 200; i++ {
				_, err := c.CallTool(ctx, "echo", arg, &mcp.CallOptions{Timeout: 20 * time.Millisecond})
				if err == nil {
					return errors.New("a call succeeded against a server that does not read")
				}
				if code := mcp.CodeOf(err); code != mcp.CodeTimeout {
					return err
				}
				last = err
			}
			return fmt.Errorf("outbound cap never reached: %w", last)
		}, codes: []mcp.Code{mcp.CodeOverload}, stage: proc.StageSigterm},
	{name: "message over the outbound cap", opts: mcp.Options{MaxOutboundBytes: 8 << 10},
		act: func(ctx context.Context, c *mcp.Client) error {
			_, err := c.CallTool(ctx, "echo", json.RawMessage(`{"text":"`+strings.Repeat("q", 16<<10)+`"}`), nil)
			return err
		}, codes: []mcp.Code{mcp.CodeOverload}},
	{name: "ignore-sigterm", args: []string{"-mode", "ignore-sigterm"}, stage: proc.StageSigkill},
	{name: "ignore-eof", args: []string{"-mode", "ignore-eof"}, stage: proc.StageSigterm},
	{name: "grandchild", args: []string{"-mode", "grandchild"}, stage: proc.StageSigkill},
	{name: "grandchild ignoring sigterm", args: []string{"-mode", "grandchild,ignore-sigterm"}, stage: proc.StageSigkill},
	{name: "grandchild tool", act: func(ctx context.Context, c *mcp.Client) error {
		res, err := c.CallTool(ctx, "grandchild", nil, nil)
		if err == nil && bytes.Contains(res, []byte(`"isError":true`)) {
			err = fmt.Errorf("grandchild tool failed: %s", res)
		}
		return err
	}, stage: proc.StageSigkill},
	{name: "stderr flood", args: []string{"-mode", "stderr-flood"}, act: func(ctx context.Context, c *mcp.Client) error {
		// Calls keep working while the server floods stderr: the tail
		// reader drains it and keeps only a bounded tail.
		for i := 0; i < 20; i++ {
			if err := callEcho(ctx, c); err != nil {
				return err
			}
		}
		return nil
	}},
	{name: "banner set aside", args: []string{"-mode", "banner"}, stage: proc.StageExited, act: func(ctx context.Context, c *mcp.Client) error {
		if err := callEcho(ctx, c); err != nil {
			return err
		}
		if n, recent := c.Noise(); n < 2 || !slices.Contains(recent, mcptest.BannerLine) {
			return fmt.Errorf("noise %d %q, want the banner and a noise line", n, recent)
		}
		return nil
	}},
}

// TestFixtureFaults runs every misbehaving mode through mcp.Start as a real
// process: each yields a typed error naming the server (or the teardown
// stage it needs), and leaves no process, fd or goroutine behind.
func TestFixtureFaults(t *testing.T) {
	warmUp(t)
	defer leakCheck(t)()
	for _, tc := range faultCases {
		t.Run(tc.name, func(t *testing.T) {
			server := "fault-" + strings.NewReplacer(" ", "-", "/", "-").Replace(tc.name)
			runFault(t, tc, server)
		})
	}
	// The test process is still fine: a fresh healthy fixture works.
	c, token := startFixture(t, "after", nil)
	if err := callEcho(bg(t), c); err != nil {
		t.Fatal(err)
	}
	closeFixture(t, c, token)
}

func runFault(t *testing.T, tc faultCase, server string) {
	t.Helper()
	spec, token := fixtureSpec(t, server, tc.args...)
	// Make the expected stage independent of machine load: the step before
	// the expected one gets a long grace only when the fixture must pass
	// through it (a SIGTERM-ignoring group always costs KillGrace).
	switch tc.stage {
	case proc.StageExited:
		spec.StdinGrace = hangGuard / 2
	case proc.StageSigterm:
		spec.KillGrace = hangGuard / 2
	}
	opts := tc.opts
	ctx := bg(t)
	c, err := mcp.Start(ctx, spec, &opts)
	if len(tc.startCodes) > 0 {
		if err == nil {
			out := c.Close()
			requireGone(t, token, out.Pgid)
			t.Fatalf("Start succeeded (era %s), want %v", c.Era(), tc.startCodes)
		}
		e := requireTyped(t, err, server, tc.startCodes...)
		if tc.check != nil {
			tc.check(t, e)
		}
		requireGone(t, token, 0)
		return
	}
	if err != nil {
		requireGone(t, token, 0)
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { requireGone(t, token, c.Close().Pgid) })
	if tc.act != nil {
		err := tc.act(ctx, c)
		if len(tc.codes) == 0 {
			if err != nil {
				t.Errorf("act: %v", err)
			}
		} else {
			e := requireTyped(t, err, server, tc.codes...)
			if tc.check != nil {
				tc.check(t, e)
			}
		}
	} else if err := callEcho(ctx, c); err != nil {
		t.Errorf("echo: %v", err)
	}
	out := c.Close()
	if !out.Complete {
		t.Errorf("teardown incomplete: %+v", out)
	}
	if tc.stage != "" && out.Stage != tc.stage {
		t.Errorf("teardown stage %q, want %q", out.Stage, tc.stage)
	}
	requireGone(t, token, out.Pgid)
}
