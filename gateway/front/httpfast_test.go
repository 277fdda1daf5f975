//go:build unix

package front

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpAgent drives the HTTP front with raw requests, as an agent would.
type httpAgent struct {
	t       *testing.T
	url     string
	sid     string
	version string
	rid     int
}

// answer is one HTTP answer reduced to what both paths must agree on.
type answer struct {
	status int
	head   string   // Content-Type, Cache-Control
	events []string // SSE data lines or the JSON body, canonical
}

func (a answer) String() string {
	return fmt.Sprintf("%d %s\n    %s", a.status, a.head, strings.Join(a.events, "\n    "))
}

// post sends body with the usual headers, then applies edit, and reads
// the whole answer.
func (a *httpAgent) post(body string, edit func(h http.Header)) answer {
	a.t.Helper()
	req, err := http.NewRequest("POST", a.url+MCPPath, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	a.rid++
	req.Header.Set(RequestIDHeader, fmt.Sprintf("req-%d", a.rid))
	if a.sid != "" {
		req.Header.Set("Mcp-Session-Id", a.sid)
	}
	if a.version != "" {
		req.Header.Set("Mcp-Protocol-Version", a.version)
	}
	if edit != nil {
		edit(req.Header)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // hang guard
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	out := answer{status: resp.StatusCode, head: resp.Header.Get("Content-Type") + " | " + resp.Header.Get("Cache-Control")}
	if got := resp.Header.Get(RequestIDHeader); got != fmt.Sprintf("req-%d", a.rid) {
		a.t.Errorf("X-Request-ID answered %q, sent req-%d", got, a.rid)
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" && a.sid == "" {
		a.sid = sid
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(strings.NewReader(string(raw)))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				out.events = append(out.events, canonical(a.t, d))
			} else if l := sc.Text(); l != "" && l != "event: message" {
				out.events = append(out.events, "line: "+l)
			}
		}
		return out
	}
	s := strings.TrimSpace(string(raw))
	if json.Valid([]byte(s)) && s != "" {
		s = canonical(a.t, s)
	}
	out.events = []string{s}
	return out
}

// sameAnswer compares two answers: everything but the order of the
// notifications before the response.
//
// A POST answered by one JSON-RPC response alone is the same answer as
// an SSE stream or as one JSON message (streamable HTTP lets a server
// choose, and the fast path sends such an answer as JSON).
func sameAnswer(x, y answer) bool {
	if x.status == y.status && len(x.events) == 1 && len(y.events) == 1 && x.events[0] == y.events[0] &&
		oneResponse(x) && oneResponse(y) {
		return true
	}
	if x.status != y.status || x.head != y.head || len(x.events) != len(y.events) {
		return false
	}
	if len(x.events) == 0 {
		return true
	}
	a, b := append([]string(nil), x.events...), append([]string(nil), y.events...)
	last := len(a) - 1
	if a[last] != b[last] {
		return false
	}
	sort.Strings(a[:last])
	sort.Strings(b[:last])
	return strings.Join(a, "\n") == strings.Join(b, "\n")
}

// oneResponse reports whether a is a 200 answer carrying one JSON-RPC
// response, as an SSE stream or as one JSON message.
func oneResponse(a answer) bool {
	if a.status != http.StatusOK || len(a.events) != 1 {
		return false
	}
	if a.head != "text/event-stream | no-cache, no-transform" && a.head != "application/json | no-cache, no-transform" {
		return false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	return json.Unmarshal([]byte(a.events[0]), &m) == nil && m.ID != nil && m.Method == nil
}

// httpExchange runs one scripted conversation over HTTP and returns every
// answer.
func httpExchange(t *testing.T, opts Options, modern bool) []answer {
	opts.Logger = quietLogger()
	b := fastBackend()
	if opts.Mode == ModeGateway { // the same tools, exposed beside the gateway's
		b.features.Expose = true
		for i, it := range b.items[KindTools] {
			b.items[KindTools][i] = exposed(it)
		}
	}
	_, srv := newHTTP(t, b, &opts)
	a := &httpAgent{t: t, url: srv.URL}
	var out []answer
	meta := func(extra string) string {
		if modern {
			return modernMeta(extra)
		}
		if extra == "" {
			return `"_meta":{}`
		}
		return `"_meta":{` + strings.TrimPrefix(extra, ",") + `}`
	}
	if modern {
		a.version = modernVersion
	} else {
		if got := a.post(legacyInit, nil); got.status != 200 || a.sid == "" {
			t.Fatalf("initialize: %v (session %q)", got, a.sid)
		}
		a.version = "2025-11-25"
		out = append(out, a.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil))
		out = append(out, a.post(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`, nil))
	}
	id := 10
	call := func(params string, edit func(http.Header)) {
		id++
		var name struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal([]byte(params), &name)
		out = append(out, a.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, params), func(h http.Header) {
			if modern {
				h.Set("Mcp-Method", "tools/call")
				h.Set("Mcp-Name", name.Name)
			}
			if edit != nil {
				edit(h)
			}
		}))
	}
	for _, n := range []string{"echo", "structured", "nocontent", "iserror", "toolerr", "fail", "panic", "protoerr", "upstreammeta", "image", "odd", "extra", "emptytext", "blockmeta", "annotated", "single", "unknown", "notext"} {
		call(`{"name":"up__`+n+`","arguments":{"x":1},`+meta("")+`}`, nil)
	}
	call(`{"name":"up__echo",`+meta("")+`}`, nil)
	call(`{"name":"up__echo","arguments":null,`+meta("")+`}`, nil)
	call(`{"name":"up__progress","arguments":{},`+meta(`,"progressToken":"tok-1"`)+`}`, nil)
	call(`{"name":"up__progress","arguments":{},`+meta(`,"progressToken":7`)+`}`, nil)
	call(`{"name":"up__nosuch","arguments":{},`+meta("")+`}`, nil)
	call(`{"name":"nosuch","arguments":{},`+meta("")+`}`, nil)
	call(`{"name":"up__echo","arguments":{"x":2},"task":{"ttl":1},`+meta("")+`}`, nil)
	call(`{"name":"","arguments":{}}`, nil)
	call(`{"name":"up__echo","arguments":"not an object"}`, nil)
	call(`[1,2]`, nil)
	// What the SDK's handler checks before a call runs.
	echo := `{"name":"up__echo","arguments":{"y":1},` + meta("") + `}`
	call(echo, func(h http.Header) { h.Set("Content-Type", "text/plain") })
	call(echo, func(h http.Header) { h.Set("Content-Type", "application/json; charset=utf-8") })
	call(echo, func(h http.Header) { h.Set("Accept", "application/json") })
	call(echo, func(h http.Header) { h.Set("Accept", "*/*") })
	call(echo, func(h http.Header) { h.Set("Last-Event-ID", "x_1") })
	call(echo, func(h http.Header) { h.Set("Mcp-Protocol-Version", "1999-01-01") })
	call(echo, func(h http.Header) { h.Set("Mcp-Protocol-Version", "2025-06-18") })
	call(echo, func(h http.Header) { h.Del("Mcp-Protocol-Version") })
	call(echo, func(h http.Header) { h.Set("Mcp-Name", "up__other") })
	call(echo, func(h http.Header) { h.Del("Mcp-Method") })
	call(echo, func(h http.Header) { h.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01") })
	id++
	out = append(out, a.post(fmt.Sprintf(`[{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}]`, id, echo), nil))
	id++
	out = append(out, a.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s,"extra":1}`, id, echo), nil))
	out = append(out, a.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"str-%d","method":"tools/call","params":%s}`, id, echo), nil))
	out = append(out, a.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d.5,"method":"tools/call","params":%s}`, id, echo), nil))
	out = append(out, a.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call"}`, id+1), nil))
	if !modern {
		a.sid = "no-such-session"
		call(echo, nil)
	}
	return out
}

// TestHTTPFastPathAnswersAsTheSDK runs one conversation through the HTTP
// front with the tools/call fast path and once without it, in both eras,
// and requires the same answers (status, content type, events; the order
// of notifications aside): results, tool errors, hidden failures, panics,
// protocol errors, stripped upstream fields, progress and log
// notifications, unknown tools, and requests the SDK's handler refuses.
func TestHTTPFastPathAnswersAsTheSDK(t *testing.T) {
	for _, era := range []struct {
		name   string
		modern bool
		mode   Mode
	}{{"legacy", false, ModeFlat}, {"modern", true, ModeFlat}, {"legacy-exposed", false, ModeGateway}, {"modern-exposed", true, ModeGateway}} {
		t.Run(era.name, func(t *testing.T) {
			var viaSDK, viaFast atomic.Int64
			sdk := httpExchange(t, Options{Mode: era.mode, noFastPath: true, fastTaken: &viaSDK}, era.modern)
			fast := httpExchange(t, Options{Mode: era.mode, fastTaken: &viaFast}, era.modern)
			if viaSDK.Load() != 0 {
				t.Fatalf("the fast path took %d calls while switched off", viaSDK.Load())
			}
			if n := viaFast.Load(); n < 22 {
				t.Fatalf("the fast path took only %d calls", n)
			}
			if len(sdk) != len(fast) {
				t.Fatalf("%d answers through the SDK, %d on the fast path", len(sdk), len(fast))
			}
			for i := range sdk {
				if !sameAnswer(sdk[i], fast[i]) {
					t.Errorf("request %d:\n sdk:  %v\n fast: %v", i, sdk[i], fast[i])
				}
			}
		})
	}
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	base http.RoundTripper
	set  map[string]string
	n    atomic.Int64
}

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.set {
		r.Header.Set(k, v)
	}
	r.Header.Set(RequestIDHeader, fmt.Sprintf("agent-%d", h.n.Add(1)))
	return h.base.RoundTrip(r)
}

// seen is what a backend call saw of its agent.
type seen struct {
	requestID, traceparent, tracestate, session, client string
	roots                                               string
	canRoots                                            bool
}

// TestHTTPFastPathServesSDKAgents: an official SDK client, in both eras,
// gets the same results, request ids, trace context, agent identity and
// roots (asked during a legacy call on the POST's stream) on both paths,
// and the fast path takes its calls.
func TestHTTPFastPathServesSDKAgents(t *testing.T) {
	run := func(t *testing.T, noFast bool, version string) ([]seen, []string, int64) {
		b := newFake()
		b.setItems(KindTools, toolItem("up", "who", "Says who asks."), toolItem("up", "roots", "Asks for roots."))
		var mu = make(chan struct{}, 1)
		var got []seen
		b.call = func(ctx context.Context, r CallRequest, p Peer) (json.RawMessage, error) {
			s := seen{requestID: p.RequestID(), session: fmt.Sprint(p.SessionID() != ""), client: p.ClientName(), canRoots: p.Supports("roots")}
			s.traceparent, s.tracestate = TraceContext(p)
			if r.Capability == "up__roots" {
				raw, err := p.Request(ctx, "roots/list", nil)
				if err != nil {
					s.roots = "error: " + err.Error()
				} else {
					s.roots = string(raw)
				}
			}
			mu <- struct{}{}
			got = append(got, s)
			<-mu
			return textResult(r.Capability + " " + string(r.Arguments)), nil
		}
		var taken atomic.Int64
		_, srv := newHTTP(t, b, &Options{Mode: ModeFlat, noFastPath: noFast, fastTaken: &taken})
		tr := &headerTransport{base: http.DefaultTransport, set: map[string]string{
			"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
			"tracestate":  "k=v",
		}}
		c := mcp.NewClient(&mcp.Implementation{Name: "sdk-agent", Version: "1"}, nil)
		c.AddRoots(&mcp.Root{URI: "file:///work", Name: "work"})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + MCPPath, HTTPClient: &http.Client{Transport: tr}, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		var texts []string
		for i, name := range []string{"up__who", "up__roots", "up__who"} {
			if version >= modernVersion && name == "up__roots" {
				continue
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"i": i}})
			if err != nil {
				t.Fatalf("call %s: %v", name, err)
			}
			texts = append(texts, resultText(res))
		}
		for i := range got {
			got[i].requestID = strings.TrimLeft(got[i].requestID, "agent-0123456789") + fmt.Sprint(strings.HasPrefix(got[i].requestID, "agent-"))
		}
		return got, texts, taken.Load()
	}
	for _, version := range []string{"2025-11-25", modernVersion} {
		t.Run(version, func(t *testing.T) {
			sdkSeen, sdkTexts, viaSDK := run(t, true, version)
			fastSeen, fastTexts, viaFast := run(t, false, version)
			if viaSDK != 0 || viaFast != int64(len(fastTexts)) {
				t.Fatalf("fast path took %d calls switched off and %d of %d switched on", viaSDK, viaFast, len(fastTexts))
			}
			if fmt.Sprint(sdkTexts) != fmt.Sprint(fastTexts) {
				t.Fatalf("results differ:\n sdk:  %q\n fast: %q", sdkTexts, fastTexts)
			}
			if fmt.Sprintf("%+v", sdkSeen) != fmt.Sprintf("%+v", fastSeen) {
				t.Fatalf("the backend saw different agents:\n sdk:  %+v\n fast: %+v", sdkSeen, fastSeen)
			}
			rooted := false
			for _, s := range fastSeen {
				if s.traceparent == "" || s.client != "sdk-agent" || s.requestID != "true" {
					t.Fatalf("call lost its trace context, client or request id: %+v", s)
				}
				rooted = rooted || strings.Contains(s.roots, `"uri":"file:///work"`)
			}
			if version < modernVersion && !rooted {
				t.Fatalf("roots did not reach the backend: %+v", fastSeen)
			}
		})
	}
}

// TestHTTPFastPathCancellation: a call the agent cancels is stopped in
// the backend on both paths: by notifications/cancelled in a legacy
// session, by ending the POST for a modern request.
func TestHTTPFastPathCancellation(t *testing.T) {
	for _, version := range []string{"2025-11-25", modernVersion} {
		for _, noFast := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/sdk=%v", version, noFast), func(t *testing.T) {
				b := newFake()
				b.setItems(KindTools, toolItem("up", "wait", "Waits."), toolItem("up", "echo", "Echoes."))
				started, stopped := make(chan struct{}, 1), make(chan error, 1)
				b.call = func(ctx context.Context, r CallRequest, _ Peer) (json.RawMessage, error) {
					if r.Capability == "up__echo" {
						return textResult("echo"), nil
					}
					started <- struct{}{}
					<-ctx.Done()
					stopped <- ctx.Err()
					return nil, ctx.Err()
				}
				var taken atomic.Int64
				_, srv := newHTTP(t, b, &Options{Mode: ModeFlat, noFastPath: noFast, fastTaken: &taken})
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				cs := sdkAgent(t, ctx, srv.URL, version)
				cctx, ccancel := context.WithCancel(ctx)
				errc := make(chan error, 1)
				go func() {
					_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "up__wait", Arguments: map[string]any{}})
					errc <- err
				}()
				<-started
				ccancel()
				if err := <-stopped; err == nil {
					t.Fatal("the backend call was not cancelled")
				}
				if err := <-errc; err == nil {
					t.Fatal("the cancelled call returned a result")
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{}})
				if err != nil || resultText(res) != "echo" {
					t.Fatalf("the session did not go on: %v %v", res, err)
				}
				if want := int64(2); !noFast && taken.Load() != want {
					t.Fatalf("the fast path took %d of %d calls", taken.Load(), want)
				}
			})
		}
	}
}

// TestHTTPFastPathHandsInputRequiredToTheSDK: an upstream input_required
// result is answered by the SDK's rules (the fast path hands the
// answered request over), and the backend runs once per request.
func TestHTTPFastPathHandsInputRequiredToTheSDK(t *testing.T) {
	const ask = `{"resultType":"input_required","inputRequests":{"q1":{"method":"elicitation/create","params":{"mode":"form","message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}},"requestState":"st-1"}`
	run := func(noFast bool, modern bool) ([]answer, int64, int64) {
		b := newFake()
		b.setItems(KindTools, toolItem("up", "ask", "Asks."))
		var calls atomic.Int64
		b.call = func(ctx context.Context, r CallRequest, p Peer) (json.RawMessage, error) {
			calls.Add(1)
			_ = p.Progress(ctx, 1, 0, "thinking")
			return json.RawMessage(ask), nil
		}
		var taken atomic.Int64
		_, srv := newHTTP(t, b, &Options{Mode: ModeFlat, noFastPath: noFast, fastTaken: &taken})
		a := &httpAgent{t: t, url: srv.URL}
		meta := `"_meta":{"progressToken":"p"}`
		edit := func(http.Header) {}
		if modern {
			a.version = modernVersion
			meta = modernMeta(`,"progressToken":"p"`)
			edit = func(h http.Header) {
				h.Set("Mcp-Method", "tools/call")
				h.Set("Mcp-Name", "up__ask")
			}
		} else {
			a.post(legacyInit, nil)
			a.version = "2025-11-25"
			a.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
		}
		out := []answer{a.post(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"up__ask","arguments":{},`+meta+`}}`, edit)}
		return out, calls.Load(), taken.Load()
	}
	for _, modern := range []bool{false, true} {
		t.Run(fmt.Sprint("modern=", modern), func(t *testing.T) {
			sdk, sdkCalls, _ := run(true, modern)
			fast, fastCalls, taken := run(false, modern)
			if !sameAnswer(sdk[0], fast[0]) {
				t.Fatalf("answers differ:\n sdk:  %v\n fast: %v", sdk[0], fast[0])
			}
			if sdkCalls != 1 || fastCalls != 1 || taken != 1 {
				t.Fatalf("backend ran %d (sdk) and %d (fast) times, fast path took %d; want 1, 1, 1", sdkCalls, fastCalls, taken)
			}
		})
	}
}

// TestHTTPFastPathLogsAsTheSDKPath: each call writes the same log lines,
// with the same keys in the same order, on both paths.
func TestHTTPFastPathLogsAsTheSDKPath(t *testing.T) {
	lines := func(noFast bool) []string {
		var buf syncBuffer
		log := slog.New(slog.NewJSONHandler(&buf, nil))
		_, srv := newHTTP(t, fastBackend(), &Options{Mode: ModeFlat, Logger: log, noFastPath: noFast})
		a := &httpAgent{t: t, url: srv.URL}
		a.post(legacyInit, nil)
		a.version = "2025-11-25"
		a.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
		for i, n := range []string{"echo", "iserror", "fail", "protoerr", "panic"} {
			a.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__%s","arguments":{}}}`, i+2, n), nil)
		}
		// The fast path logs a call once its answer is written: every
		// handler has returned once the server is closed.
		srv.Close()
		var out []string
		for _, l := range strings.Split(string(buf.Bytes()), "\n") {
			if !strings.Contains(l, `"request_id"`) {
				continue
			}
			dec := json.NewDecoder(strings.NewReader(l))
			var keys []string
			_, _ = dec.Token()
			for dec.More() {
				k, _ := dec.Token()
				var v any
				_ = dec.Decode(&v)
				switch k {
				case "time", "duration_ms", "stack":
					keys = append(keys, k.(string))
				default:
					keys = append(keys, fmt.Sprintf("%s=%v", k, v))
				}
			}
			out = append(out, strings.Join(keys, " "))
		}
		return out
	}
	sdk, fast := lines(true), lines(false)
	if strings.Join(sdk, "\n") != strings.Join(fast, "\n") {
		t.Fatalf("log lines differ:\n sdk:\n  %s\n fast:\n  %s", strings.Join(sdk, "\n  "), strings.Join(fast, "\n  "))
	}
	if len(fast) < 5 {
		t.Fatalf("only %d call log lines: %q", len(fast), fast)
	}
}

// TestHTTPFastPathKeepsSessionsAlive: a POST the fast path serves pauses
// the session's idle timer as any POST does: a call running longer than
// the idle timeout does not lose its session, which still expires once
// idle.
func TestHTTPFastPathKeepsSessionsAlive(t *testing.T) {
	b := newFake()
	b.setItems(KindTools, toolItem("up", "slow", "Slow."))
	release := make(chan struct{})
	b.call = func(ctx context.Context, r CallRequest, _ Peer) (json.RawMessage, error) {
		if string(r.Arguments) == `{"wait":true}` {
			<-release
		}
		return textResult("done"), nil
	}
	var taken atomic.Int64
	h, srv := newHTTP(t, b, &Options{Mode: ModeFlat, SessionTimeout: 100 * time.Millisecond, fastTaken: &taken})
	a := &httpAgent{t: t, url: srv.URL}
	a.post(legacyInit, nil)
	a.version = "2025-11-25"
	a.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	done := make(chan answer, 1)
	go func() {
		done <- a.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"up__slow","arguments":{"wait":true}}}`, nil)
	}()
	waitFor(t, "the call to start", func() bool { return taken.Load() == 1 })
	time.Sleep(500 * time.Millisecond) // five idle timeouts while the call runs
	close(release)
	if got := <-done; got.status != 200 || !strings.Contains(strings.Join(got.events, ""), "done") {
		t.Fatalf("the long call lost its session: %v", got)
	}
	if got := a.post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"up__slow","arguments":{}}}`, nil); got.status != 200 {
		t.Fatalf("the session expired during a call: %v", got)
	}
	waitFor(t, "the idle session to expire", func() bool { return len(h.liveSessions()) == 0 })
}

// TestHTTPFastPathAnswerFraming: a call that sends the agent nothing
// before its response is answered with one JSON message whose
// Content-Length is its length, with the SDK's Cache-Control, a Date and
// the request id; one that sends progress first is answered as an SSE
// stream, the progress before the response. Both eras.
func TestHTTPFastPathAnswerFraming(t *testing.T) {
	for _, modern := range []bool{false, true} {
		var taken atomic.Int64
		_, srv := newHTTP(t, fastBackend(), &Options{Mode: ModeFlat, fastTaken: &taken})
		a := &httpAgent{t: t, url: srv.URL}
		meta := func(extra string) string { return `"_meta":{` + strings.TrimPrefix(extra, ",") + `}` }
		if modern {
			a.version = modernVersion
			meta = modernMeta
		} else {
			a.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
			a.version = "2025-11-25"
			a.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
		}
		post := func(id int, tool, extra string) (*http.Response, string) {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__%s","arguments":{},%s}}`, id, tool, meta(extra))
			req, _ := http.NewRequest("POST", srv.URL+MCPPath, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", a.version)
			req.Header.Set(RequestIDHeader, fmt.Sprintf("framing-%d", id))
			if a.sid != "" {
				req.Header.Set("Mcp-Session-Id", a.sid)
			}
			if modern {
				req.Header.Set("Mcp-Method", "tools/call")
				req.Header.Set("Mcp-Name", "up__"+tool)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			return resp, string(raw)
		}
		before := taken.Load()
		resp, body := post(20, "echo", "")
		if taken.Load() != before+1 {
			t.Fatalf("modern=%v: the fast path did not take the call", modern)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" || resp.Header.Get("Cache-Control") != "no-cache, no-transform" {
			t.Errorf("modern=%v: a plain call answered with Content-Type %q, Cache-Control %q; want application/json, no-cache, no-transform", modern, ct, resp.Header.Get("Cache-Control"))
		}
		if resp.ContentLength != int64(len(body)) || resp.TransferEncoding != nil {
			t.Errorf("modern=%v: Content-Length %d, transfer encoding %v, for a %d-byte body", modern, resp.ContentLength, resp.TransferEncoding, len(body))
		}
		if _, err := http.ParseTime(resp.Header.Get("Date")); err != nil || resp.Header.Get(RequestIDHeader) != "framing-20" {
			t.Errorf("modern=%v: Date %q, X-Request-ID %q", modern, resp.Header.Get("Date"), resp.Header.Get(RequestIDHeader))
		}
		var msg struct {
			ID     int `json:"id"`
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(body), &msg); err != nil || msg.ID != 20 || len(msg.Result.Content) != 1 || msg.Result.Content[0].Text != "echo {}" {
			t.Errorf("modern=%v: answer %q (%v)", modern, body, err)
		}

		resp, body = post(21, "progress", `,"progressToken":"p"`)
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("modern=%v: a call that sent progress answered with Content-Type %q: %s", modern, ct, body)
		}
		progress, response := strings.Index(body, `"notifications/progress"`), strings.Index(body, `"id":21`)
		if progress < 0 || response < progress || !strings.HasSuffix(body, "\n\n") {
			t.Errorf("modern=%v: want the progress event, then the response event, got %q", modern, body)
		}
	}
}
