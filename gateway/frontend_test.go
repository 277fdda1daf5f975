package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sluice/gateway/front"
	"sluice/sandbox"
)

// agent is a minimal legacy-era MCP client driving Serve over pipes, the
// way an agent drives 'sluice serve' over stdio.
type agent struct {
	t      testing.TB
	w      io.WriteCloser
	served chan error

	mu      sync.Mutex
	next    int
	pending map[string]chan rpcLine
	notes   []rpcLine
	noteCh  chan struct{}
	// onRequest answers server->client requests (elicitation, roots ...).
	onRequest func(method string, params json.RawMessage) (json.RawMessage, *rpcError)
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

type rpcLine struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *rpcError       `json:"error,omitempty"`
}

// syncBuffer collects server stderr from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serveAgent serves g over pipes and connects an agent declaring caps
// (a client capabilities object). Closing the agent ends Serve.
func serveAgent(t testing.TB, g *Gateway, flat bool, caps string, onRequest func(string, json.RawMessage) (json.RawMessage, *rpcError)) *agent {
	t.Helper()
	// OS pipes, as for a real stdio agent (kernel buffers on both sides).
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inR.Close(); outR.Close() })
	a := &agent{t: t, w: inW, served: make(chan error, 1), pending: map[string]chan rpcLine{}, noteCh: make(chan struct{}, 1), onRequest: onRequest}
	go func() {
		err := Serve(context.Background(), g, ServeOptions{Front: FrontOptions{Mode: surface(flat), NoSignals: true, ShutdownTimeout: 2 * time.Second, Logger: g.log}, Stdin: inR, Stdout: outW})
		outW.Close()
		a.served <- err
	}()
	go a.read(outR)
	t.Cleanup(func() { a.close() })
	res := a.call("initialize", fmt.Sprintf(`{"protocolVersion":"2025-11-25","capabilities":%s,"clientInfo":{"name":"test-agent","version":"1"}}`, caps))
	if !strings.Contains(string(res), `"serverInfo"`) {
		t.Fatalf("initialize: %s", res)
	}
	a.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return a
}

func (a *agent) send(line string) {
	if _, err := io.WriteString(a.w, line+"\n"); err != nil {
		a.t.Errorf("write to serve: %v", err)
	}
}

func (a *agent) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var m rpcLine
			if json.Unmarshal(line, &m) != nil {
				a.t.Errorf("serve wrote a line that is not JSON-RPC: %q", line)
				continue
			}
			switch {
			case m.Method != "" && len(m.ID) > 0:
				go a.answer(m)
			case m.Method != "":
				a.mu.Lock()
				a.notes = append(a.notes, m)
				a.mu.Unlock()
				select {
				case a.noteCh <- struct{}{}:
				default:
				}
			default:
				a.mu.Lock()
				ch := a.pending[string(m.ID)]
				a.mu.Unlock()
				if ch != nil {
					ch <- m
				}
			}
		}
		if err != nil {
			return
		}
	}
}

func (a *agent) answer(m rpcLine) {
	var res json.RawMessage
	var e *rpcError
	if a.onRequest != nil {
		res, e = a.onRequest(m.Method, m.Params)
	} else {
		e = &rpcError{Code: -32601, Message: "not supported"}
	}
	out := map[string]any{"jsonrpc": "2.0", "id": m.ID}
	if e != nil {
		out["error"] = e
	} else {
		out["result"] = res
	}
	b, _ := json.Marshal(out)
	a.send(string(b))
}

// start sends a request and returns its id and the channel of its answer.
func (a *agent) start(method, params string) (string, chan rpcLine) {
	a.mu.Lock()
	a.next++
	id := strconv.Itoa(a.next)
	ch := make(chan rpcLine, 1)
	a.pending[id] = ch
	a.mu.Unlock()
	a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params))
	return id, ch
}

func (a *agent) wait(ch chan rpcLine, what string) rpcLine {
	a.t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(30 * time.Second):
		a.t.Fatalf("no answer to %s within 30 s", what)
	}
	return rpcLine{}
}

// call makes one request and returns its result (failing on an error).
func (a *agent) call(method, params string) json.RawMessage {
	a.t.Helper()
	_, ch := a.start(method, params)
	m := a.wait(ch, method)
	if m.Error != nil {
		a.t.Fatalf("%s: error %d %s", method, m.Error.Code, m.Error.Message)
	}
	return m.Result
}

// tool calls a tool and returns its CallToolResult.
func (a *agent) tool(name, args string) toolRes {
	a.t.Helper()
	raw := a.call("tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, name, args))
	var r toolRes
	if err := json.Unmarshal(raw, &r); err != nil {
		a.t.Fatalf("%s: %v in %s", name, err, raw)
	}
	r.raw = raw
	return r
}

type toolRes struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	raw               json.RawMessage
}

func (r toolRes) text() string {
	var s []string
	for _, c := range r.Content {
		s = append(s, c.Text)
	}
	return strings.Join(s, "\n")
}

func (a *agent) notifications(method string) []rpcLine {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []rpcLine
	for _, n := range a.notes {
		if n.Method == method {
			out = append(out, n)
		}
	}
	return out
}

func (a *agent) toolNames() []string {
	a.t.Helper()
	var l struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(a.call("tools/list", `{}`), &l); err != nil {
		a.t.Fatal(err)
	}
	var names []string
	for _, t := range l.Tools {
		names = append(names, t.Name)
	}
	return names
}

// close ends the agent's stdin and waits for Serve to return.
func (a *agent) close() {
	a.w.Close()
	select {
	case err := <-a.served:
		if err != nil {
			a.t.Errorf("Serve: %v", err)
		}
		a.served <- nil
	case <-time.After(20 * time.Second):
		a.t.Error("Serve did not return within 20 s of stdin EOF")
	}
}

func TestServeGatewayMode(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	g := w.open()
	a := serveAgent(t, g, false, `{}`, nil)

	names := strings.Join(a.toolNames(), ",")
	if names != "call,describe,execute,find,read_result" {
		t.Fatalf("gateway tools %s", names)
	}
	if n := children(); n != 0 {
		t.Fatalf("serving launched %d servers before any call", n)
	}
	// No catalog yet: find names the remedy and launches nothing.
	r := a.tool("find", `{}`)
	if r.IsError || !strings.Contains(r.text(), `"provenance":"missing"`) || !strings.Contains(r.text(), "refresh") {
		t.Fatalf("find without a catalog: %s", r.raw)
	}
	if n := children(); n != 0 {
		t.Fatalf("find launched %d servers", n)
	}
	r = a.tool("find", `{"server":"fx","refresh":true}`)
	if r.IsError || !strings.Contains(r.text(), `"capability":"fx__echo"`) || len(r.StructuredContent) == 0 {
		t.Fatalf("find refresh: %s", r.raw)
	}
	r = a.tool("describe", `{"capabilities":["fx__add","fx__nope"]}`)
	if r.IsError || !strings.Contains(r.text(), `"inputSchema"`) || !strings.Contains(r.text(), `"capability":"fx__nope"`) {
		t.Fatalf("describe: %s", r.raw)
	}
	r = a.tool("describe", `{"server":"fx"}`)
	if r.IsError || !strings.Contains(r.text(), "def echo(") || !strings.Contains(r.text(), "def add(") {
		t.Fatalf("describe server docs: %s", r.raw)
	}
	r = a.tool("describe", `{"server":"nosuch"}`)
	if !r.IsError || !strings.Contains(r.text(), "nosuch") {
		t.Fatalf("describe an unknown server: %s", r.raw)
	}
	r = a.tool("call", `{"capability":"fx__add","arguments":{"a":12345678901234567890,"b":1}}`)
	if r.IsError || !strings.Contains(string(r.raw), `12345678901234567891`) {
		t.Fatalf("call add: %s", r.raw)
	}
	r = a.tool("call", `{"capability":"fx__nosuch","arguments":{}}`)
	if !r.IsError || !strings.Contains(r.text(), "has no tool") || !strings.Contains(r.text(), "Fix:") {
		t.Fatalf("unknown tool: %s", r.raw)
	}
	r = a.tool("execute", `{"script":"result = fx.echo(text=\"from a script\")"}`)
	if r.IsError || !strings.Contains(r.text(), "from a script") {
		t.Fatalf("execute: %s", r.raw)
	}
	r = a.tool("read_result", `{"ref":"r-00000000000000000000000000000000"}`)
	if !r.IsError || !strings.Contains(r.text(), "Fix:") {
		t.Fatalf("read_result of an unknown ref: %s", r.raw)
	}
	a.close()
	waitNoChildren(t)
}

func TestServeFlatMode(t *testing.T) {
	w := newWorld(t)
	// onToolChange: accept, so the tool list_changed adds is served at
	// once rather than held for review.
	w.writeUser("approve: [\"fx__list_changed\"]\nservers:\n" + fixture(t, "fx") + "    onToolChange: accept\n")
	g := w.open()
	a := serveAgent(t, g, true, `{}`, nil)

	// The server had no catalog: serving launched it once to list it.
	names := a.toolNames()
	if !strings.Contains(strings.Join(names, ","), "fx__echo") || strings.Contains(strings.Join(names, ","), "find") {
		t.Fatalf("flat tools %v", names)
	}
	r := a.tool("fx__echo", `{"text":"flat"}`)
	if r.IsError || r.text() != "flat" {
		t.Fatalf("flat call: %s", r.raw)
	}
	// A server's tools/list_changed reaches the agent and the new tool
	// is served.
	if r := a.tool("fx__list_changed", `{}`); r.IsError {
		t.Fatalf("list_changed: %s", r.raw)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(a.notifications("notifications/tools/list_changed")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no notifications/tools/list_changed reached the agent")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(strings.Join(a.toolNames(), ","), "fx__late_tool") {
		t.Fatalf("late_tool not listed after list_changed: %v", a.toolNames())
	}
	if r := a.tool("fx__late_tool", `{}`); r.IsError {
		t.Fatalf("late_tool: %s", r.raw)
	}
	// An upstream protocol error stays a protocol error.
	_, ch := a.start("tools/call", `{"name":"fx__bad_iserror","arguments":{}}`)
	if m := a.wait(ch, "bad_iserror"); m.Error == nil && !strings.Contains(string(m.Result), `"isError":true`) {
		t.Fatalf("malformed upstream result passed as success: %s", m.Result)
	}
	a.close()
	waitNoChildren(t)
}

// TestServeProgressAndCancel: upstream progress reaches the agent's token
// before the result, and an agent's cancellation reaches the server.
func TestServeProgressAndCancel(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	stderr := &syncBuffer{}
	g := w.open(func(o *Options) { o.ServerStderr = stderr })
	a := serveAgent(t, g, true, `{}`, nil)

	raw := a.call("tools/call", `{"name":"fx__slow","arguments":{"ms":150,"steps":3},"_meta":{"progressToken":"tok-1"}}`)
	if strings.Contains(string(raw), `"isError":true`) {
		t.Fatalf("slow: %s", raw)
	}
	ps := a.notifications("notifications/progress")
	if len(ps) != 3 {
		t.Fatalf("want 3 progress notifications before the result, got %d", len(ps))
	}
	for i, p := range ps {
		var n struct {
			Token    string  `json:"progressToken"`
			Progress float64 `json:"progress"`
			Total    float64 `json:"total"`
			Message  string  `json:"message"`
		}
		if err := json.Unmarshal(p.Params, &n); err != nil || n.Token != "tok-1" || n.Progress != float64(i+1) || n.Total != 3 || !strings.HasPrefix(n.Message, "step ") {
			t.Errorf("progress %d: %s", i, p.Params)
		}
	}

	id, ch := a.start("tools/call", `{"name":"fx__slow","arguments":{"ms":30000}}`)
	time.Sleep(200 * time.Millisecond) // let the call reach the server
	a.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"user"}}`, id))
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), "cancelled request") {
		if time.Now().After(deadline) {
			t.Fatalf("the cancellation never reached the server; its stderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case m := <-ch:
		if m.Error == nil {
			t.Errorf("a cancelled call produced a result: %s", m.Result)
		}
	default:
	}
	// The server is still usable after the cancellation.
	if r := a.tool("fx__echo", `{"text":"after"}`); r.text() != "after" {
		t.Fatalf("after cancel: %s", r.raw)
	}
	a.close()
	waitNoChildren(t)
}

// TestServeApproval: a call that needs approval is refused with the remedy
// when the agent cannot be asked, and runs when the agent's user accepts.
func TestServeApproval(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	stderr := &syncBuffer{}
	g := w.open(func(o *Options) { o.ServerStderr = stderr })

	a := serveAgent(t, g, false, `{}`, nil)
	r := a.tool("call", `{"capability":"fx__stderr","arguments":{"text":"refused-run"}}`)
	if !r.IsError || !strings.Contains(r.text(), "elicitation") || !strings.Contains(r.text(), "approve:") {
		t.Fatalf("refusal without elicitation: %s", r.raw)
	}
	a.close()
	if strings.Contains(stderr.String(), "refused-run") {
		t.Fatal("a refused call ran")
	}

	g2 := w.open(func(o *Options) { o.ServerStderr = stderr })
	var asked []string
	var mu sync.Mutex
	answer := "accept"
	b := serveAgent(t, g2, false, `{"elicitation":{}}`, func(method string, params json.RawMessage) (json.RawMessage, *rpcError) {
		if method != "elicitation/create" {
			return nil, &rpcError{Code: -32601, Message: "no"}
		}
		mu.Lock()
		asked = append(asked, string(params))
		act := answer
		mu.Unlock()
		return json.RawMessage(`{"action":"` + act + `","content":{}}`), nil
	})
	r = b.tool("call", `{"capability":"fx__stderr","arguments":{"text":"approved-run"}}`)
	if r.IsError || !strings.Contains(r.text(), "wrote") {
		t.Fatalf("approved call: %s", r.raw)
	}
	mu.Lock()
	if len(asked) != 1 || !strings.Contains(asked[0], "fx__stderr") {
		t.Errorf("elicitation requests %v", asked)
	}
	answer = "decline"
	mu.Unlock()
	r = b.tool("call", `{"capability":"fx__stderr","arguments":{"text":"declined-run"}}`)
	if !r.IsError || !strings.Contains(r.text(), "declined") {
		t.Fatalf("declined call: %s", r.raw)
	}
	b.close()
	if !strings.Contains(stderr.String(), "approved-run") || strings.Contains(stderr.String(), "declined-run") {
		t.Fatalf("server stderr:\n%s", stderr.String())
	}
	waitNoChildren(t)
}

// TestServeForwardsServerRequests: a legacy server's roots/list during a
// call reaches the agent of that call.
func TestServeForwardsServerRequests(t *testing.T) {
	w := newWorld(t)
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx", "-mode", "legacy-only"))
	g := w.open()
	a := serveAgent(t, g, true, `{"roots":{}}`, func(method string, _ json.RawMessage) (json.RawMessage, *rpcError) {
		if method == "roots/list" {
			return json.RawMessage(`{"roots":[{"uri":"file:///agent-root","name":"agent"}]}`), nil
		}
		return nil, &rpcError{Code: -32601, Message: "no"}
	})
	r := a.tool("fx__ask_roots", `{}`)
	if r.IsError || !strings.Contains(string(r.raw), "agent-root") {
		t.Fatalf("ask_roots: %s", r.raw)
	}
	a.close()
	waitNoChildren(t)
}

// TestServeCanary: an untrusted project server is never launched through
// serve, in either mode, whatever the agent asks.
func TestServeCanary(t *testing.T) {
	w := newWorld(t)
	w.writeProject("servers:\n" + fixture(t, "canary"))
	for _, flat := range []bool{false, true} {
		g := w.open()
		a := serveAgent(t, g, flat, `{"elicitation":{}}`, func(string, json.RawMessage) (json.RawMessage, *rpcError) {
			return json.RawMessage(`{"action":"accept","content":{}}`), nil
		})
		names := slices.DeleteFunc(a.toolNames(), func(n string) bool { return n == "sluice__read_result" }) // the gateway's own
		if flat && len(names) != 0 {
			t.Fatalf("flat mode lists an untrusted server's tools: %v", names)
		}
		if flat {
			_, ch := a.start("tools/call", `{"name":"canary__echo","arguments":{"text":"x"}}`)
			if m := a.wait(ch, "canary call"); m.Error == nil && !strings.Contains(string(m.Result), `"isError":true`) {
				t.Fatalf("flat call of an untrusted tool: %s", m.Result)
			}
		} else {
			r := a.tool("call", `{"capability":"canary__echo","arguments":{"text":"x"}}`)
			if !r.IsError || !strings.Contains(r.text(), "sluice trust canary") {
				t.Fatalf("gateway call of an untrusted tool: %s", r.raw)
			}
			r = a.tool("find", `{"server":"canary","refresh":true}`)
			if !strings.Contains(r.text(), "untrusted") {
				t.Fatalf("find: %s", r.raw)
			}
			r = a.tool("execute", `{"script":"result = canary.echo(text=\"x\")"}`)
			if !r.IsError {
				t.Fatalf("execute: %s", r.raw)
			}
		}
		if n := children(); n != 0 {
			t.Fatalf("flat=%v: %d processes launched", flat, n)
		}
		a.close()
	}
}

// TestServeLegacyPeerForwarding: with the npm server-everything (a legacy
// server), a sampling request and an elicitation request made in the
// middle of a call reach the agent of that call, and resources and prompts
// are passed through in flat mode.
func TestServeLegacyPeerForwarding(t *testing.T) {
	root := codeModeRepoRoot(t)
	node, _ := filesystemPeer(t, root)
	script := filepath.Join(root, "testdata", "peers", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(script); err != nil {
		if os.Getenv("SLUICE_REQUIRE_PEERS") == "1" {
			t.Fatal("server-everything is missing and SLUICE_REQUIRE_PEERS=1; run scripts/install-peers.sh")
		}
		t.Skip("server-everything is missing; run scripts/install-peers.sh")
	}
	w := newWorld(t)
	w.writeUser(fmt.Sprintf("servers:\n  ev:\n    command: %s\n    args: [%s, stdio]\n    actionClass: read\n", strconv.Quote(node), strconv.Quote(script)))
	g := w.open()
	var mu sync.Mutex
	var asked []string
	a := serveAgent(t, g, true, `{"sampling":{},"elicitation":{}}`, func(method string, params json.RawMessage) (json.RawMessage, *rpcError) {
		mu.Lock()
		asked = append(asked, method)
		mu.Unlock()
		switch method {
		case "sampling/createMessage":
			return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"SAMPLED-BY-AGENT"},"model":"test-model"}`), nil
		case "elicitation/create":
			return json.RawMessage(`{"action":"accept","content":{"name":"Ada Lovelace","check":true}}`), nil
		}
		return nil, &rpcError{Code: -32601, Message: "no"}
	})
	// The sampling tool appears once the server saw our capabilities
	// (it announces it with tools/list_changed).
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(strings.Join(a.toolNames(), ","), "ev__trigger-sampling-request") {
		if time.Now().After(deadline) {
			t.Fatalf("no sampling tool listed: %v", a.toolNames())
		}
		time.Sleep(100 * time.Millisecond)
	}
	r := a.tool("ev__trigger-sampling-request", `{"prompt":"hi","maxTokens":5}`)
	if r.IsError || !strings.Contains(string(r.raw), "SAMPLED-BY-AGENT") {
		t.Fatalf("sampling through serve: %s", r.raw)
	}
	r = a.tool("ev__trigger-elicitation-request", `{}`)
	if r.IsError || !strings.Contains(string(r.raw), "Ada Lovelace") {
		t.Fatalf("elicitation through serve: %s", r.raw)
	}
	mu.Lock()
	got := strings.Join(asked, ",")
	mu.Unlock()
	if !strings.Contains(got, "sampling/createMessage") || !strings.Contains(got, "elicitation/create") {
		t.Fatalf("agent was asked %s", got)
	}

	var rl struct {
		Resources []struct {
			URI string `json:"uri"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(a.call("resources/list", `{}`), &rl); err != nil || len(rl.Resources) == 0 {
		t.Fatalf("resources/list: %v %+v", err, rl)
	}
	read := a.call("resources/read", fmt.Sprintf(`{"uri":%q}`, rl.Resources[0].URI))
	if !strings.Contains(string(read), `"contents"`) {
		t.Fatalf("resources/read: %s", read)
	}
	if pl := a.call("prompts/list", `{}`); !strings.Contains(string(pl), `"prompts"`) {
		t.Fatalf("prompts/list: %s", pl)
	}
	a.call("logging/setLevel", `{"level":"debug"}`)
	a.close()
}

// TestServeRefusesABrokenFilter: serve compiles every filter before it
// answers anything, and a module that does not compile refuses the start
// with the filter's error and remedy (fail closed), in both modes.
func TestServeRefusesABrokenFilter(t *testing.T) {
	w := newWorld(t)
	bad := filepath.Join(t.TempDir(), "bad.wasm")
	if err := os.WriteFile(bad, []byte("\x00asm not really a module"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.writeUser("servers:\n" + fixture(t, "fx") + "filters:\n  - module: " + bad + "\n")
	for _, flat := range []bool{false, true} {
		g := w.open()
		inR, inW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		done := make(chan error, 1)
		go func() {
			done <- Serve(context.Background(), g, ServeOptions{Front: FrontOptions{Mode: surface(flat), NoSignals: true, Logger: g.log}, Stdin: inR, Stdout: &out})
		}()
		var err2 error
		select {
		case err2 = <-done:
		case <-time.After(30 * time.Second): // hang guard
			inW.Close()
			t.Fatal("serve did not refuse to start")
		}
		inW.Close()
		inR.Close()
		if KindOf(err2) != KindFilter || !strings.Contains(err2.Error(), "bad.wasm") {
			t.Fatalf("flat=%v: serve = %v; want a filter error naming the module", flat, err2)
		}
		if out.Len() != 0 {
			t.Fatalf("flat=%v: serve wrote frames before refusing: %q", flat, out.String())
		}
	}
	// A good configuration serves. The start-up check leaves nothing
	// loaded; each filter loads when something first needs it (here the
	// flat listing, which redact clears before the agent sees it), and
	// the default shape filter not at all while results fit its budget.
	w.writeUser("servers:\n" + fixture(t, "fx") + "filters:\n  - module: builtin:redact\n")
	g := w.open()
	a := serveAgent(t, g, true, `{}`, nil)
	if names := a.toolNames(); !slices.Contains(names, "fx__echo") {
		t.Fatalf("tools %v", names)
	}
	states := func() map[string]string {
		m := map[string]string{}
		for _, st := range g.FilterStatuses() {
			m[st.Name] = st.State
		}
		return m
	}
	if got := states(); got["builtin:redact"] != FilterActive || got["builtin:shape"] != FilterNotLoaded {
		t.Fatalf("filters once serve lists the flat tools: %v; want redact active (it cleared the listing), shape not loaded", got)
	}
	if r := a.tool("fx__echo", `{"text":"key AKIAIOSFODNN7EXAMPLE"}`); r.IsError || len(r.Content) != 1 || strings.Contains(r.Content[0].Text, "AKIAIOSFODNN7EXAMPLE") {
		t.Fatalf("echo through redact: %s", r.raw)
	}
	if got := states(); got["builtin:redact"] != FilterActive || got["builtin:shape"] != FilterNotLoaded {
		t.Fatalf("filters after a small result: %v; want redact active, shape not loaded", got)
	}
}

// TestFrontendExecuteTimeoutAndFilename: the execute tool's timeoutMs
// bounds the run (the smaller of it and sandbox.timeoutMs wins) and
// positions name execute.star.
func TestFrontendExecuteTimeoutAndFilename(t *testing.T) {
	w := newWorld(t)
	w.writeUser("sandbox: {timeoutMs: 60000}\nservers:\n" + fixture(t, "fx"))
	g := w.open()
	fe := newFrontend(g, nil)
	t.Cleanup(func() { fe.Close() })
	decode := func(raw json.RawMessage) runSummary {
		t.Helper()
		var tr struct {
			Content []struct{ Text string } `json:"content"`
		}
		var s runSummary
		if err := json.Unmarshal(raw, &tr); err != nil || len(tr.Content) != 1 || json.Unmarshal([]byte(tr.Content[0].Text), &s) != nil {
			t.Fatalf("execute answer %s: %v", raw, err)
		}
		return s
	}
	// Recorded catalog first, so the run does not include a launch.
	if _, err := g.Find(ctx(t), FindRequest{Server: "fx", Refresh: true}); err != nil {
		t.Fatal(err)
	}
	raw, err := fe.Execute(ctx(t), front.ExecuteRequest{Script: "fx.slow(ms=20000, steps=200)\nresult = 1", TimeoutMs: 300}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := decode(raw)
	if s.Error == nil || s.Error.Kind != RunLimit || s.Error.Limit != sandbox.LimitTime {
		t.Fatalf("a run over its timeoutMs must stop with the time limit: %+v", s.Error)
	}
	raw, err = fe.Execute(ctx(t), front.ExecuteRequest{Script: "x = 1\nfail(\"boom\")"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s = decode(raw)
	if s.Error == nil || !strings.Contains(strings.Join(s.Error.Backtrace, " ")+s.Error.Message, ExecuteFilename) {
		t.Fatalf("positions must name %s: %+v", ExecuteFilename, s.Error)
	}
}

// TestServeReadResultByHandle: a shortened result names a handle; the
// read_result tool takes it as "handle" (and as "ref", its older name),
// and its continuation note names "handle".
func TestServeReadResultByHandle(t *testing.T) {
	w := newWorld(t)
	// The shape filter as the default, but fail-closed with a deadline no
	// loaded machine misses: a shape that breaks fails this test instead of
	// passing the result on whole (fail-open).
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx") +
		"filters:\n  - module: builtin:shape\n    stage: context\n    onError: fail-closed\n    timeoutMs: 30000\n")
	g := w.open()
	a := serveAgent(t, g, false, `{}`, nil)
	r := a.tool("call", `{"capability":"fx__huge","arguments":{"bytes":100000}}`)
	m := regexp.MustCompile(`stored under handle ([A-Za-z0-9_-]+)`).FindStringSubmatch(r.text())
	if m == nil {
		t.Fatalf("the default shape filter did not shorten a 100000-byte result to a handle: %.200s", r.text())
	}
	for _, key := range []string{"handle", "ref"} {
		p := a.tool("read_result", fmt.Sprintf(`{%q:%q,"offset":0,"length":1000}`, key, m[1]))
		if p.IsError || !strings.Contains(p.text(), "aaaa") || !strings.Contains(p.text(), `continue with {"handle":`) {
			t.Fatalf("read_result by %s: %.300s", key, p.raw)
		}
	}
}

// TestServeRemediesSpeakMCP: what a model reads names tool calls it can
// make, never CLI flags, and find's next step has no stray separator.
func TestServeRemediesSpeakMCP(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	g := w.open()
	a := serveAgent(t, g, false, `{}`, nil)
	r := a.tool("find", `{}`)
	var ans struct {
		Servers []struct{ Remedy string } `json:"servers"`
		Next    string                    `json:"next"`
	}
	if err := json.Unmarshal(r.StructuredContent, &ans); err != nil || len(ans.Servers) != 1 {
		t.Fatalf("find: %s (%v)", r.raw, err)
	}
	if want := `call find with {"server":"fx","refresh":true}`; !strings.Contains(ans.Servers[0].Remedy, want) {
		t.Fatalf("find remedy %q lacks %q", ans.Servers[0].Remedy, want)
	}
	if strings.HasPrefix(ans.Next, ";") || ans.Next == "" {
		t.Fatalf("find next = %q", ans.Next)
	}
	r = a.tool("describe", `{"capabilities":["fx__add"]}`)
	if !r.IsError || !strings.Contains(r.text(), `call find with {\"server\":\"fx\",\"refresh\":true}`) && !strings.Contains(r.text(), `call find with {"server":"fx","refresh":true}`) {
		t.Fatalf("describe without a catalog: %s", r.raw)
	}
	a.tool("find", `{"server":"fx","refresh":true}`)
	// fx__fail needs approval; this client cannot be asked.
	r = a.tool("call", `{"capability":"fx__fail","arguments":{}}`)
	if !r.IsError || strings.Contains(r.text(), "--yes") || !strings.Contains(r.text(), "the user must approve") || !strings.Contains(r.text(), "'approve:'") {
		t.Fatalf("approval remedy: %s", r.text())
	}
	r = a.tool("execute", `{"script":"fx.fail()"}`)
	if !r.IsError || strings.Contains(r.text(), "--yes") || strings.Contains(r.text(), "'sluice find") {
		t.Fatalf("execute remedy: %s", r.text())
	}
}

// TestServeStripsUpstreamEraFields: a modern upstream's resultType and
// reserved _meta (its serverInfo) never reach a legacy agent, in either
// mode.
func TestServeStripsUpstreamEraFields(t *testing.T) {
	w := newWorld(t)
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx"))
	for _, flat := range []bool{false, true} {
		g := w.open()
		a := serveAgent(t, g, flat, `{}`, nil)
		var r toolRes
		if flat {
			r = a.tool("fx__echo", `{"text":"x"}`)
		} else {
			r = a.tool("call", `{"capability":"fx__echo","arguments":{"text":"x"}}`)
		}
		if r.IsError || strings.Contains(string(r.raw), "resultType") || strings.Contains(string(r.raw), "io.modelcontextprotocol/") {
			t.Fatalf("flat=%v: upstream era fields reached a legacy agent: %s", flat, r.raw)
		}
		era := ""
		if v, err := g.server("fx"); err == nil {
			if l := g.running(v); l != nil {
				era = l.Client().Era()
				l.Release(true)
			}
		}
		if era != "modern" {
			t.Fatalf("flat=%v: the fixture must speak the modern era for this test to mean anything (era %q)", flat, era)
		}
		a.close()
	}
}

// surface is the front mode for flat.
func surface(flat bool) front.Mode {
	if flat {
		return ModeFlat
	}
	return ModeGateway
}
