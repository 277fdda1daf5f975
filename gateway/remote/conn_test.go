package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rpc is the part of a JSON-RPC message the fake servers look at.
type rpc struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func decode(t testing.TB, r *http.Request) rpc {
	var m rpc
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Errorf("server got a body that is not JSON: %q", b)
	}
	return m
}

func result(id json.RawMessage, res string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, res)
}

func sse(w http.ResponseWriter, frames ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	for _, f := range frames {
		io.WriteString(w, f)
		w.(http.Flusher).Flush()
	}
}

func dial(t *testing.T, url, transport string) *Conn {
	t.Helper()
	c, err := Dial(context.Background(), &Options{Server: "t", URL: url, Transport: transport, AllowPrivate: true,
		Headers: http.Header{"X-Team": {"platform"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func send(t *testing.T, c *Conn, msg string) {
	t.Helper()
	if err := c.Send([]byte(msg)); err != nil {
		t.Fatalf("Send(%s): %v", msg, err)
	}
}

func recv(t *testing.T, c *Conn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := c.recv(ctx)
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	return string(m)
}

// TestStreamableLegacySession runs a 2025-11-25 session: initialize gets a
// session id, which (with the negotiated version) is echoed on every later
// request; notifications get 202; an SSE answer carries a progress
// notification before the response; the GET stream delivers a server
// notification; Close sends DELETE.
func TestStreamableLegacySession(t *testing.T) {
	var mu sync.Mutex
	var deleted, getSeen atomic.Bool
	var log []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Team") != "platform" {
			t.Errorf("%s without the declared header", r.Method)
		}
		switch r.Method {
		case http.MethodDelete:
			if r.Header.Get("Mcp-Session-Id") != "sess-1" {
				t.Errorf("DELETE without the session id")
			}
			deleted.Store(true)
			return
		case http.MethodGet:
			if r.Header.Get("Mcp-Session-Id") != "sess-1" || r.Header.Get("Accept") != "text/event-stream" {
				t.Errorf("GET headers: %v", r.Header)
			}
			if getSeen.Swap(true) {
				<-r.Context().Done()
				return
			}
			sse(w, "id: g1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
			<-r.Context().Done()
			return
		}
		if a := r.Header.Get("Accept"); !strings.Contains(a, "application/json") || !strings.Contains(a, "text/event-stream") {
			t.Errorf("POST Accept = %q", a)
		}
		m := decode(t, r)
		mu.Lock()
		log = append(log, m.Method+" session="+r.Header.Get("Mcp-Session-Id")+" version="+r.Header.Get("MCP-Protocol-Version"))
		mu.Unlock()
		switch m.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "sess-1")
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, result(m.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"f","version":"1"}}`))
		case "notifications/initialized":
			w.WriteHeader(http.StatusAccepted)
		case "tools/call":
			sse(w, "id: 1\ndata:\n\n",
				`data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`+"\n\n",
				"event: message\ndata: "+result(m.ID, `{"content":[],"n":12345678901234567890}`)+"\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	c := dial(t, srv.URL, TransportAuto)
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
	if m := recv(t, c); !strings.Contains(m, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize answer %s", m)
	}
	if c.SessionID() != "sess-1" || c.Transport() != TransportStreamable {
		t.Fatalf("session %q transport %q", c.SessionID(), c.Transport())
	}
	send(t, c, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if m := recv(t, c); !strings.Contains(m, "list_changed") {
		t.Fatalf("GET stream message = %s", m)
	}
	send(t, c, `{"jsonrpc":"2.0","id":"c2","method":"tools/call","params":{"name":"x","_meta":{"progressToken":"p"}}}`)
	if m := recv(t, c); !strings.Contains(m, "notifications/progress") {
		t.Fatalf("want progress first, got %s", m)
	}
	if m := recv(t, c); !strings.Contains(m, `"id":"c2"`) || !strings.Contains(m, "12345678901234567890") {
		t.Fatalf("tools/call answer %s (numbers must pass untouched)", m)
	}
	c.Close()
	if !deleted.Load() {
		t.Error("Close sent no DELETE")
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"initialize session= version=", "notifications/initialized session=sess-1 version=2025-11-25", "tools/call session=sess-1 version=2025-11-25"}
	if strings.Join(log, "|") != strings.Join(want, "|") {
		t.Errorf("requests:\n%s\nwant\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
}

// TestStreamableModern: a 2026-07-28 request carries MCP-Protocol-Version
// from its _meta, Mcp-Method and Mcp-Name (base64 when not plain ASCII), no
// session id; a 400 with a JSON-RPC body is passed through as the answer.
func TestStreamableModern(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := decode(t, r)
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Mcp-Method") != m.Method || r.Header.Get("MCP-Protocol-Version") != "2026-07-28" {
			t.Errorf("headers %v for %s", r.Header, m.Method)
		}
		if r.Header.Get("Mcp-Session-Id") != "" {
			t.Errorf("modern request carries a session id")
		}
		switch m.Method {
		case "server/discover":
			w.Header().Set("Mcp-Session-Id", "ignored")
			w.WriteHeader(400)
			io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"]}}}`)
		case "tools/call":
			if got := r.Header.Get("Mcp-Name"); got != "=?base64?"+"w6ljaG8="+"?=" {
				t.Errorf("Mcp-Name = %q", got)
			}
			io.WriteString(w, result(m.ID, `{"resultType":"complete","content":[]}`))
		}
	}))
	t.Cleanup(srv.Close)
	c := dial(t, srv.URL, TransportStreamable)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta+`}}`)
	if m := recv(t, c); !strings.Contains(m, `"id":1`) || !strings.Contains(m, "-32022") {
		t.Fatalf("discover answer %s", m)
	}
	send(t, c, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"écho",`+meta+`}}`)
	if m := recv(t, c); !strings.Contains(m, `"resultType":"complete"`) {
		t.Fatalf("call answer %s", m)
	}
}

// TestModernCancelClosesStream: cancelling a modern request aborts its
// POST (the server sees the request end) and sends no notification.
func TestModernCancelClosesStream(t *testing.T) {
	ended, started := make(chan struct{}), make(chan struct{})
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		decode(t, r)
		sse(w, ": started\n\n")
		close(started)
		<-r.Context().Done()
		close(ended)
	}))
	t.Cleanup(srv.Close)
	c := dial(t, srv.URL, TransportStreamable)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	send(t, c, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow",`+meta+`}}`)
	<-started
	send(t, c, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`)
	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		t.Fatalf("the server's request did not end after cancellation (posts %d)", posts.Load())
	}
	if posts.Load() != 1 {
		t.Errorf("%d POSTs, want 1 (no notifications/cancelled in the modern era)", posts.Load())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if m, err := c.recv(ctx); err == nil {
		t.Errorf("a cancelled request was answered: %s", m)
	}
}

// TestRetryRules: tools/list is retried after 503 and succeeds; tools/call
// gets the 503 as its answer and is sent exactly once.
func TestRetryRules(t *testing.T) {
	var lists, calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := decode(t, r)
		switch m.Method {
		case "tools/list":
			if lists.Add(1) < 3 {
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(503)
				return
			}
		case "tools/call":
			calls.Add(1)
			w.WriteHeader(503)
			io.WriteString(w, "upstream down\x1b[31m")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, result(m.ID, `{"tools":[]}`))
	}))
	t.Cleanup(srv.Close)
	c := dial(t, srv.URL, TransportStreamable)
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if m := recv(t, c); !strings.Contains(m, `"tools":[]`) {
		t.Fatalf("tools/list answer %s", m)
	}
	send(t, c, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`)
	m := recv(t, c)
	if !strings.Contains(m, `"id":2`) || !strings.Contains(m, "503") || !strings.Contains(m, "upstream down") || strings.Contains(m, "\x1b") {
		t.Fatalf("tools/call answer %s", m)
	}
	if lists.Load() != 3 || calls.Load() != 1 {
		t.Errorf("tools/list sent %d times (want 3), tools/call %d (want 1)", lists.Load(), calls.Load())
	}
}

// TestCallRetriedOnlyBeforeConnect: a tools/call to a port nobody listens
// on is retried (nothing was sent) and answered with the connect error.
func TestCallRetriedOnlyBeforeConnect(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := dial(t, "http://"+addr+"/mcp", TransportStreamable)
	send(t, c, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"x"}}`)
	if m := recv(t, c); !strings.Contains(m, `"id":9`) || !strings.Contains(m, "connect") {
		t.Fatalf("answer %s", m)
	}
}

// TestResumeWithLastEventID: a legacy POST stream that closes after a
// priming event is resumed with GET and Last-Event-ID after the server's
// retry delay.
func TestResumeWithLastEventID(t *testing.T) {
	var gotLast atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gotLast.Store(r.Header.Get("Last-Event-ID"))
			if r.Header.Get("Last-Event-ID") != "ev-7" {
				w.WriteHeader(405)
				return
			}
			sse(w, "id: ev-8\ndata: "+result([]byte(`3`), `{"ok":true}`)+"\n\n")
			return
		}
		decode(t, r)
		sse(w, "id: ev-7\nretry: 10\ndata:\n\n")
	}))
	t.Cleanup(srv.Close)
	c := dial(t, srv.URL, TransportStreamable)
	send(t, c, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}`)
	if m := recv(t, c); !strings.Contains(m, `"ok":true`) {
		t.Fatalf("answer %s", m)
	}
	if gotLast.Load() != "ev-7" {
		t.Errorf("Last-Event-ID = %v", gotLast.Load())
	}
}

// TestSessionExpired: 404 to a request with a session id ends the
// connection with ErrSessionExpired after answering the request.
func TestSessionExpired(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(405)
			return
		}
		m := decode(t, r)
		if m.Method == "initialize" {
			w.Header().Set("Mcp-Session-Id", "s")
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, result(m.ID, `{"protocolVersion":"2025-06-18"}`))
			return
		}
		w.WriteHeader(404)
	}))
	t.Cleanup(srv.Close)
	c := dial(t, srv.URL, TransportStreamable)
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	recv(t, c)
	send(t, c, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if m := recv(t, c); !strings.Contains(m, "session expired") {
		t.Fatalf("answer %s", m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.recv(ctx); err == nil || !strings.Contains(err.Error(), "session expired") {
		t.Fatalf("Recv err = %v, want ErrSessionExpired", err)
	}
}

// TestMessageCaps: an oversized JSON body and an oversized SSE event are
// refused for that request only; an oversized outbound message is refused
// by Send.
func TestMessageCaps(t *testing.T) {
	big := strings.Repeat("a", 2048)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := decode(t, r)
		switch m.Method {
		case "json":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, result(m.ID, `"`+big+`"`))
		case "sse":
			sse(w, "data: "+result(m.ID, `"`+big+`"`)+"\n\n")
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, result(m.ID, `"small"`))
		}
	}))
	t.Cleanup(srv.Close)
	c, err := Dial(context.Background(), &Options{Server: "t", URL: srv.URL, AllowPrivate: true, MaxMessageBytes: 1024, Transport: TransportStreamable})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, method := range []string{"json", "sse"} {
		send(t, c, `{"jsonrpc":"2.0","id":1,"method":"`+method+`"}`)
		if m := recv(t, c); !strings.Contains(m, "exceeds") || len(m) > 1024 {
			t.Fatalf("%s: answer %s", method, m)
		}
	}
	send(t, c, `{"jsonrpc":"2.0","id":2,"method":"ok"}`)
	if m := recv(t, c); !strings.Contains(m, "small") {
		t.Fatalf("the connection is unusable after a capped message: %s", m)
	}
	if err := c.Send([]byte(`{"jsonrpc":"2.0","id":3,"method":"x","params":"` + big + `"}`)); err == nil {
		t.Fatal("an oversized outbound message was accepted")
	}
}

// legacySSEServer is a 2024-11-05 HTTP+SSE server: GET opens the stream
// (endpoint first), POSTs to the endpoint get 202 and are answered on it.
// POSTs to the SSE URL itself get 405, as such servers do.
func legacySSEServer(t *testing.T) *httptest.Server {
	return httptest.NewServer(legacySSEHandler(t))
}

// legacySSEHandler is a 2024-11-05 HTTP+SSE server: the GET stream's
// endpoint event names the POST URL; answers arrive on the stream.
func legacySSEHandler(t *testing.T) http.Handler {
	out := make(chan string, 16)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/sse":
			sse(w, ": hi\n\nevent: endpoint\ndata: /messages?session=abc\n\n")
			for {
				select {
				case m := <-out:
					io.WriteString(w, "event: message\ndata: "+m+"\n\n")
					w.(http.Flusher).Flush()
				case <-r.Context().Done():
					return
				}
			}
		case r.Method == http.MethodPost && r.URL.Path == "/messages":
			if r.URL.Query().Get("session") != "abc" {
				t.Errorf("POST without the endpoint's query")
			}
			m := decode(t, r)
			w.WriteHeader(http.StatusAccepted)
			if len(m.ID) > 0 && m.Method != "" {
				out <- result(m.ID, `{"method":"`+m.Method+`"}`)
			}
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	})
}

func TestLegacySSE(t *testing.T) {
	srv := legacySSEServer(t)
	t.Cleanup(srv.Close)
	c := dial(t, srv.URL+"/sse", TransportSSE)
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	if m := recv(t, c); !strings.Contains(m, `"method":"initialize"`) {
		t.Fatalf("answer %s", m)
	}
	send(t, c, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(t, c, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if m := recv(t, c); !strings.Contains(m, `"id":2`) {
		t.Fatalf("answer %s", m)
	}
}

// TestAutoFallsBackToSSE: auto probes streamable HTTP; discover's 405
// becomes a transport error (the core then falls back to initialize), and
// initialize's 405 switches to legacy SSE.
func TestAutoFallsBackToSSE(t *testing.T) {
	srv := legacySSEServer(t)
	t.Cleanup(srv.Close)
	c := dial(t, srv.URL+"/sse", TransportAuto)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta+`}}`)
	if m := recv(t, c); !strings.Contains(m, "405") || !strings.Contains(m, `"id":1`) {
		t.Fatalf("discover answer %s", m)
	}
	send(t, c, `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}`)
	if m := recv(t, c); !strings.Contains(m, `"method":"initialize"`) || !strings.Contains(m, `"id":2`) {
		t.Fatalf("initialize answer %s", m)
	}
	if c.Transport() != TransportSSE {
		t.Fatalf("transport %q", c.Transport())
	}
	send(t, c, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if m := recv(t, c); !strings.Contains(m, `"id":3`) {
		t.Fatalf("answer %s", m)
	}
}

func TestLegacySSECrossOriginEndpoint(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sse(w, "event: endpoint\ndata: http://169.254.169.254/latest\n\n")
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	_, err := Dial(context.Background(), &Options{URL: srv.URL, Transport: TransportSSE, AllowPrivate: true})
	if err == nil || !strings.Contains(err.Error(), "another origin") {
		t.Fatalf("err = %v", err)
	}
}

func TestDialRejects(t *testing.T) {
	for _, o := range []Options{
		{URL: "https://a.example/mcp", Transport: "websocket"},
		{URL: "https://a.example/mcp", Headers: http.Header{"X": {"a\r\nInjected: 1"}}},
		{URL: "ftp://a.example/"},
	} {
		if _, err := Dial(context.Background(), &o); err == nil {
			t.Errorf("Dial(%+v) accepted", o)
		}
	}
}

// TestConcurrentRequests: many requests in flight at once each get their
// own answer, under -race.
func TestConcurrentRequests(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := decode(t, r)
		if bytes.HasSuffix(m.ID, []byte("0")) {
			sse(w, "data: "+result(m.ID, `"sse"`)+"\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, result(m.ID, `"json"`))
	}))
	t.Cleanup(srv.Close)
	c := dial(t, srv.URL, TransportStreamable)
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Send(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, i)); err != nil {
				t.Error(err)
			}
		}()
	}
	seen := map[string]bool{}
	for range n {
		var m rpc
		json.Unmarshal([]byte(recv(t, c)), &m)
		seen[string(m.ID)] = true
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d distinct answers, want %d", len(seen), n)
	}
}

// TestParamHeaders: a 2026-07-28 tool's x-mcp-header arguments are mirrored
// into Mcp-Param-* headers on tools/call, and a tool with an invalid
// declaration is withheld from the listing (its other bytes untouched).
func TestParamHeaders(t *testing.T) {
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := decode(t, r)
		w.Header().Set("Content-Type", "application/json")
		switch m.Method {
		case "tools/list":
			io.WriteString(w, result(m.ID, `{"tools":[`+
				`{"name":"ok","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},"big":{"type":"integer"}}}},`+
				`{"name":"bad","inputSchema":{"type":"object","properties":{"o":{"type":"object","x-mcp-header":"O"}}}},`+
				`{"name":"dup","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}}`+
				`],"n":12345678901234567890}`))
		case "tools/call":
			got <- r.Header.Clone()
			io.WriteString(w, result(m.ID, `{"content":[]}`))
		}
	}))
	t.Cleanup(srv.Close)
	c := dial(t, srv.URL, TransportStreamable)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta+`}}`)
	m := recv(t, c)
	if !strings.Contains(m, `"name":"ok"`) || strings.Contains(m, `"name":"bad"`) || strings.Contains(m, `"name":"dup"`) || !strings.Contains(m, "12345678901234567890") {
		t.Fatalf("listing %s", m)
	}
	send(t, c, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ok","arguments":{"region":"eu wést","n":42,"big":1},`+meta+`}}`)
	recv(t, c)
	h := <-got
	if h.Get("Mcp-Param-Region") != headerValue("eu wést") || h.Get("Mcp-Param-N") != "42" || h.Get("Mcp-Param-Big") != "" {
		t.Fatalf("headers %v", h)
	}
}

// TestServerRequestWaitsForGetStream: a client offering elicitation waits,
// after notifications/initialized, until the GET stream is open, because a
// server sends a request unrelated to a POST only to an open GET stream
// (and drops it otherwise). The server here is slow to open the stream and
// sends its elicitation only if the stream is open when the call arrives.
func TestServerRequestWaitsForGetStream(t *testing.T) {
	old := getOpenWait
	getOpenWait = time.Minute // the bound is not under test; the wait ends when the stream opens
	t.Cleanup(func() { getOpenWait = old })
	getOpen := make(chan struct{})
	push := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodDelete:
			return
		case http.MethodGet:
			time.Sleep(200 * time.Millisecond) // slow to open, not a deadline under test
			close(getOpen)                     // before the client can see the headers
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			select {
			case m := <-push:
				io.WriteString(w, "data: "+m+"\n\n")
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
			<-r.Context().Done()
			return
		}
		m := decode(t, r)
		switch m.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "s")
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, result(m.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"f","version":"1"}}`))
		case "notifications/initialized":
			w.WriteHeader(http.StatusAccepted)
		case "tools/call":
			select {
			case <-getOpen:
				push <- `{"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{}}`
			default:
				t.Error("tools/call arrived before the GET stream was open: the elicitation would be dropped")
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, result(m.ID, `{"content":[]}`))
		}
	}))
	t.Cleanup(srv.Close)
	c := dial(t, srv.URL, TransportStreamable)
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}}}}`)
	recv(t, c)
	send(t, c, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(t, c, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`)
	got := recv(t, c) + recv(t, c)
	if !strings.Contains(got, "elicitation/create") || !strings.Contains(got, `"id":2`) {
		t.Fatalf("want the elicitation and the call's answer, got %s", got)
	}
}

// TestDeclaredAuthorizationRefused: a 401 to a declared Authorization
// header says to check the header (OAuth is off, so `sluice auth` would
// not help); without one it points to sluice auth.
func TestDeclaredAuthorizationRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		headers http.Header
		want    string
	}{
		{http.Header{"Authorization": {"Bearer expired"}}, "refused the declared Authorization header"},
		{nil, "run `sluice auth t`"},
	} {
		c, err := Dial(context.Background(), &Options{Server: "t", URL: srv.URL, Transport: TransportStreamable, AllowPrivate: true, Headers: tc.headers})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		send(t, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
		if m := recv(t, c); !strings.Contains(m, tc.want) || !strings.Contains(m, `"id":1`) {
			t.Errorf("headers %v: answer %s, want %q", tc.headers, m, tc.want)
		}
	}
}
