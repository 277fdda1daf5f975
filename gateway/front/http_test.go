//go:build unix

package front

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func newHTTP(t *testing.T, b Backend, opts *Options) (*Handler, *httptest.Server) {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	h, err := NewHTTPHandler(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Shutdown(context.Background())
		srv.Close()
	})
	return h, srv
}

func TestHTTPSecurity(t *testing.T) {
	b := newFake()
	_, srv := newHTTP(t, b, &Options{Token: "s3cret", MaxRequestBytes: 8192})
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	for _, tc := range []struct {
		name, method, path, host, origin, auth, body string
		status                                       int
		header, headerWant, bodyWant                 string
	}{
		{name: "healthz needs no token", method: "GET", path: "/healthz", status: 200, bodyWant: "ok"},
		{name: "no token", method: "POST", path: "/mcp", body: initBody, status: 401, header: "WWW-Authenticate", headerWant: `Bearer realm="sluice"`},
		{name: "wrong token", method: "POST", path: "/mcp", auth: "Bearer nope", body: initBody, status: 401, header: "WWW-Authenticate", headerWant: `error="invalid_token"`},
		{name: "wrong scheme", method: "POST", path: "/mcp", auth: "Basic s3cret", body: initBody, status: 401},
		{name: "token ok", method: "POST", path: "/mcp", auth: "Bearer s3cret", body: initBody, status: 200, header: "Mcp-Session-Id", headerWant: ""},
		{name: "rebinding host", method: "POST", path: "/mcp", host: "evil.example.com", origin: "http://evil.example.com", auth: "Bearer s3cret", body: initBody, status: 403},
		{name: "rebinding host on healthz", method: "GET", path: "/healthz", host: fmt.Sprintf("evil.example.com:%d", port), status: 403},
		{name: "foreign origin", method: "POST", path: "/mcp", origin: "https://evil.example.com", auth: "Bearer s3cret", body: initBody, status: 403},
		{name: "null origin", method: "POST", path: "/mcp", origin: "null", auth: "Bearer s3cret", body: initBody, status: 403},
		{name: "loopback origin", method: "POST", path: "/mcp", origin: "http://localhost:5173", auth: "Bearer s3cret", body: initBody, status: 200},
		{name: "localhost host", method: "POST", path: "/mcp", host: fmt.Sprintf("localhost:%d", port), auth: "Bearer s3cret", body: initBody, status: 200},
		{name: "body cap", method: "POST", path: "/mcp", auth: "Bearer s3cret", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 9000) + `"}}`, status: 413},
		{name: "readyz", method: "GET", path: "/readyz", auth: "Bearer s3cret", status: 200, bodyWant: "ready"},
		{name: "metrics", method: "GET", path: "/metrics", auth: "Bearer s3cret", status: 200, bodyWant: "sluice_active_sessions"},
		{name: "metrics needs token", method: "GET", path: "/metrics", status: 401},
		{name: "unknown path", method: "GET", path: "/nope", auth: "Bearer s3cret", status: 404},
		{name: "modern GET is 405", method: "GET", path: "/mcp", auth: "Bearer s3cret", status: 405},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d; body %q", resp.StatusCode, tc.status, body)
			}
			if tc.header != "" {
				got := resp.Header.Get(tc.header)
				if got == "" || !strings.Contains(got, tc.headerWant) {
					t.Fatalf("%s = %q, want it to contain %q", tc.header, got, tc.headerWant)
				}
			}
			if !strings.Contains(string(body), tc.bodyWant) {
				t.Fatalf("body %q lacks %q", body, tc.bodyWant)
			}
		})
	}
	b.mu.Lock()
	b.readyErr = errors.New("server fs is starting")
	b.mu.Unlock()
	req, _ := http.NewRequest("GET", srv.URL+"/readyz", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(body), "fs is starting") {
		t.Fatalf("readyz not ready: %d %q", resp.StatusCode, body)
	}
}

func TestServeHTTPRefusesRemote(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "[::]:0", "nonsense"} {
		err := ServeHTTP(context.Background(), addr, newFake(), &Options{Logger: quietLogger(), NoSignals: true}, nil)
		var be *BindError
		if !errors.As(err, &be) {
			t.Fatalf("%s: err = %v, want *BindError", addr, err)
		}
		if addr != "nonsense" && !errors.Is(err, ErrRemoteBind) {
			t.Fatalf("%s: err = %v, want ErrRemoteBind", addr, err)
		}
	}
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func httpClient(t *testing.T, url, token, version string, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	t.Cleanup(tr.CloseIdleConnections)
	var rt http.RoundTripper = tr
	if token != "" {
		rt = bearer{token, tr}
	}
	if copts == nil {
		copts = &mcp.ClientOptions{}
	}
	if copts.Capabilities == nil {
		copts.Capabilities = &mcp.ClientCapabilities{}
		if copts.ElicitationHandler != nil {
			copts.Capabilities.Elicitation = &mcp.ElicitationCapabilities{}
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "http-agent", Version: "1"}, copts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + MCPPath, HTTPClient: &http.Client{Transport: rt}, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect (%q): %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestHTTPBothEras: the same endpoint serves a legacy session and modern
// stateless requests, with progress and (legacy) approvals.
func TestHTTPBothEras(t *testing.T) {
	b := approvalBackend()
	inner := b.call
	b.call = func(ctx context.Context, r CallRequest, p Peer) (json.RawMessage, error) {
		_ = p.Progress(ctx, 1, 1, "working")
		if r.Capability == "plain__op" {
			return textResult(fmt.Sprintf("session=%t", p.SessionID() != "")), nil
		}
		return inner(ctx, r, p)
	}
	h, srv := newHTTP(t, b, &Options{Token: "tok"})
	for _, version := range []string{"2025-11-25", ""} {
		t.Run("version="+version, func(t *testing.T) {
			progress := make(chan float64, 4)
			cs := httpClient(t, srv.URL, "tok", version, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "decline"}, nil
				},
				ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
					progress <- r.Params.Progress
				},
			})
			ctx := context.Background()
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) != 3 {
				t.Fatalf("tools: %+v %v", tools, err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call", Arguments: map[string]any{"capability": "plain__op"}, Meta: mcp.Meta{"progressToken": 7}})
			if err != nil {
				t.Fatal(err)
			}
			wantSession := version != ""
			if got := resultText(res); got != fmt.Sprintf("session=%t", wantSession) {
				t.Fatalf("call = %q (legacy must use a session, modern must not)", got)
			}
			select {
			case <-progress:
			case <-time.After(10 * time.Second):
				t.Fatal("no progress over HTTP")
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "call", Arguments: map[string]any{"capability": "fs__rm"}})
			if err != nil {
				t.Fatal(err)
			}
			want := "the user declined" // modern agents are asked through input_required
			if !res.IsError || !strings.Contains(resultText(res), want) {
				t.Fatalf("approval over HTTP = %q, want %q", resultText(res), want)
			}
		})
	}
	// Calls were recorded by capability and outcome.
	rec := httptest.NewRecorder()
	h.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{`sluice_calls_total{capability="plain__op",outcome="ok"} 2`, `sluice_calls_total{capability="fs__rm",outcome="tool_error"} 2`, "sluice_call_duration_seconds_bucket"} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestHTTPConcurrentSessions: 50 sessions x 100 calls, every response
// matched to its own request.
func TestHTTPConcurrentSessions(t *testing.T) {
	const sessions, calls = 50, 100
	b := newFake()
	b.call = func(_ context.Context, r CallRequest, _ Peer) (json.RawMessage, error) {
		return textResult(string(r.Arguments)), nil
	}
	_, srv := newHTTP(t, b, &Options{Mode: ModeFlat})
	b.setItems(KindTools, toolItem("echo", "run", "Echo."))
	b.emit(Event{Kind: EventToolsChanged})
	css := make([]*mcp.ClientSession, sessions)
	for i := range css {
		version := "2025-11-25"
		if i%2 == 1 {
			version = "" // half modern, half legacy
		}
		css[i] = httpClient(t, srv.URL, "", version, nil)
	}
	waitFor(t, "flat tool registered", func() bool {
		res, err := css[0].ListTools(context.Background(), nil)
		return err == nil && len(res.Tools) == 1
	})
	var wrong, failed atomic.Int64
	var wg sync.WaitGroup
	for i, cs := range css {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range calls {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo__run", Arguments: map[string]any{"s": i, "c": j}})
				cancel()
				if err != nil {
					if failed.Add(1) < 5 {
						t.Errorf("session %d call %d: %v", i, j, err)
					}
					continue
				}
				if got, want := resultText(res), fmt.Sprintf(`{"c":%d,"s":%d}`, j, i); got != want {
					if wrong.Add(1) < 5 {
						t.Errorf("session %d call %d: got %q want %q", i, j, got, want)
					}
				}
			}
		}()
	}
	wg.Wait()
	if wrong.Load() != 0 || failed.Load() != 0 {
		t.Fatalf("%d mismatched, %d failed of %d", wrong.Load(), failed.Load(), sessions*calls)
	}
}

func TestHTTPSessionExpiry(t *testing.T) {
	_, srv := newHTTP(t, newFake(), &Options{SessionTimeout: 100 * time.Millisecond})
	post := func(sid, body string) *http.Response {
		req, _ := http.NewRequest("POST", srv.URL+MCPPath, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post("", initBody)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d sid %q", resp.StatusCode, sid)
	}
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// Each probe is a request and restarts the idle timer, so probe only
	// after staying idle well past the timeout (a hang guard bounds it).
	for i := 0; ; i++ {
		time.Sleep(400 * time.Millisecond)
		if post(sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`).StatusCode == http.StatusNotFound {
			break
		}
		if i == 20 {
			t.Fatal("idle session never expired")
		}
	}
}

// TestServeHTTPGracefulShutdown: cancelling ServeHTTP's context lets a
// running call finish, then closes the backend.
func TestServeHTTPGracefulShutdown(t *testing.T) {
	b := newFake()
	started := make(chan struct{})
	release := make(chan struct{})
	b.call = func(ctx context.Context, _ CallRequest, _ Peer) (json.RawMessage, error) {
		close(started)
		select {
		case <-release:
			return textResult("finished"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan net.Addr, 1)
	served := make(chan error, 1)
	go func() {
		served <- ServeHTTP(ctx, "127.0.0.1:0", b, &Options{Logger: quietLogger(), NoSignals: true, ShutdownTimeout: 10 * time.Second}, func(a net.Addr) { addrc <- a })
	}()
	url := "http://" + (<-addrc).String()
	cs := httpClient(t, url, "", "2025-11-25", nil)
	resc := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "call", Arguments: map[string]any{"capability": "a__b"}})
		if err != nil {
			t.Errorf("in-flight call: %v", err)
		}
		resc <- res
	}()
	<-started
	cancel()
	time.Sleep(50 * time.Millisecond) // let shutdown begin while the call runs
	close(release)
	select {
	case res := <-resc:
		if res == nil || resultText(res) != "finished" {
			t.Fatalf("drained call = %+v", res)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("in-flight call never finished")
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("ServeHTTP = %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("ServeHTTP did not return")
	}
	if b.closed.Load() != 1 {
		t.Fatalf("backend closed %d times", b.closed.Load())
	}
}

// TestShutdownBoundCancelsStragglers: a call that ignores the drain is
// cancelled when the bound expires.
func TestShutdownBoundCancelsStragglers(t *testing.T) {
	b := newFake()
	started := make(chan struct{})
	b.call = func(ctx context.Context, _ CallRequest, _ Peer) (json.RawMessage, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	h, srv := newHTTP(t, b, &Options{ShutdownTimeout: 100 * time.Millisecond})
	cs := httpClient(t, srv.URL, "", "2025-11-25", nil)
	resc := make(chan string, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "call", Arguments: map[string]any{"capability": "a__b"}})
		if err != nil {
			resc <- "error: " + err.Error()
			return
		}
		resc <- resultText(res)
	}()
	<-started
	done := make(chan struct{})
	go func() { h.Shutdown(context.Background()); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return after its bound")
	}
	select {
	case got := <-resc:
		if !strings.Contains(got, "shut down before this call finished") {
			t.Fatalf("straggler got %q, want a tool error naming the shutdown", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call never answered")
	}
}

// runHTTPChild serves HTTP until SIGTERM, printing the address on stdout
// and "backend closed" on stderr when the backend is closed.
func runHTTPChild() int {
	b := &closeReporter{fakeBackend: newFake()}
	err := ServeHTTP(context.Background(), "127.0.0.1:0", b, &Options{Logger: quietLogger()}, func(a net.Addr) {
		fmt.Println(a.String())
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	return 0
}

type closeReporter struct{ *fakeBackend }

func (c *closeReporter) Close() error {
	fmt.Fprintln(os.Stderr, "backend closed")
	return c.fakeBackend.Close()
}

// TestServeHTTPSIGTERM: SIGTERM shuts ServeHTTP down cleanly (exit 0,
// backend closed).
func TestServeHTTPSIGTERM(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=http")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no address: %v\n%s", err, stderr.Bytes())
	}
	resp, err := http.Get("http://" + strings.TrimSpace(addr) + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, stderr.Bytes())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	if !strings.Contains(string(stderr.Bytes()), "backend closed") {
		t.Fatalf("backend not closed:\n%s", stderr.Bytes())
	}
}
