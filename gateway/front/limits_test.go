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
	"strings"
	"testing"
	"time"
)

// serveHTTPOn runs ServeHTTP on a free loopback port until the test ends
// and returns its address.
func serveHTTPOn(t *testing.T, b Backend, opts *Options) string {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	opts.NoSignals = true
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- ServeHTTP(ctx, "127.0.0.1:0", b, opts, func(a net.Addr) { addrc <- a.String() })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("ServeHTTP did not return")
		}
	})
	select {
	case a := <-addrc:
		return a
	case err := <-done:
		t.Fatalf("ServeHTTP: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("ServeHTTP did not listen")
	}
	return ""
}

// trickle opens a connection and sends a POST whose body never finishes:
// headers announce 1000 bytes, one is sent.
func trickle(t *testing.T, addr, path, extra string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n%s\r\n{", path, addr, extra)
	return c
}

// status reads one response's status code from c (0 when the connection
// ends without one), within a hang guard.
func status(c net.Conn) int {
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// closedByPeer reports whether a read error means the other end closed.
func closedByPeer(err error) bool {
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		return false
	}
	return true
}

func metricValue(t *testing.T, addr, token, series string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

// TestHTTPSlowClientsAreBounded: clients trickling request bodies hold at
// most MaxConnsPerClient connections (the rest are answered 503 at once),
// each held one is answered 408 after ReadTimeout, and the address can
// connect again afterwards.
func TestHTTPSlowClientsAreBounded(t *testing.T) {
	const cap, clients = 8, 30
	addr := serveHTTPOn(t, newFake(), &Options{HTTPLimits: HTTPLimits{ReadTimeout: 700 * time.Millisecond, MaxConnsPerClient: cap}})
	conns := make([]net.Conn, clients)
	for i := range conns {
		conns[i] = trickle(t, addr, MCPPath, "")
	}
	codes := map[int]int{}
	for _, c := range conns {
		codes[status(c)]++
	}
	if codes[http.StatusServiceUnavailable] != clients-cap || codes[http.StatusRequestTimeout] != cap {
		t.Fatalf("answers by status = %v; want %d x 503 and %d x 408", codes, clients-cap, cap)
	}
	for _, c := range conns {
		c.Close()
	}
	// The closed connections are released: a full request is served.
	waitFor(t, "a new connection served", func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	if v := metricValue(t, addr, "", `sluice_http_limit_events_total{event="connection_refused"}`); v != fmt.Sprint(clients-cap) {
		t.Errorf("connection_refused = %q, want %d", v, clients-cap)
	}
	if v := metricValue(t, addr, "", `sluice_http_limit_events_total{event="read_timeout"}`); v != fmt.Sprint(cap) {
		t.Errorf("read_timeout = %q, want %d", v, cap)
	}
}

// TestHTTPUnauthenticatedTrickleIsAnsweredAtOnce: with a token, a POST
// without one is answered 401 before its body arrives and its connection
// closed; the server does not wait for the body.
func TestHTTPUnauthenticatedTrickleIsAnsweredAtOnce(t *testing.T) {
	addr := serveHTTPOn(t, newFake(), &Options{Token: "s3cret", HTTPLimits: HTTPLimits{ReadTimeout: time.Hour}})
	for _, path := range []string{MCPPath, "/nowhere", "/healthz"} {
		c := trickle(t, addr, path, "")
		got := status(c)
		want := http.StatusUnauthorized
		if path == "/healthz" {
			want = 200
		}
		if got != want {
			t.Errorf("%s: status %d, want %d (before the body ended)", path, got, want)
		}
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if _, err := c.Read(make([]byte, 1)); !closedByPeer(err) {
			t.Errorf("%s: the connection stayed open after the answer (read: %v)", path, err)
		}
	}
}

// TestHTTPIdleKeepAliveIsClosed: a keep-alive connection with nothing in
// flight is closed after IdleTimeout.
func TestHTTPIdleKeepAliveIsClosed(t *testing.T) {
	addr := serveHTTPOn(t, newFake(), &Options{HTTPLimits: HTTPLimits{IdleTimeout: 300 * time.Millisecond}})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle keep-alive: read = %v, want EOF (closed by the server)", err)
	}
}

// TestHTTPSessionCap: over MaxSessions, a new session evicts the one idle
// the longest (counted); with every session busy it is refused with 503.
func TestHTTPSessionCap(t *testing.T) {
	b := newFake()
	b.setItems(KindTools, toolItem("up", "block", "Blocks."))
	release := make(chan struct{})
	started := make(chan struct{}, 8)
	b.call = func(ctx context.Context, r CallRequest, _ Peer) (json.RawMessage, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return textResult("ok"), nil
	}
	addr := serveHTTPOn(t, b, &Options{HTTPLimits: HTTPLimits{MaxSessions: 3}})
	url := "http://" + addr
	post := func(sid, body string) *http.Response {
		req, _ := http.NewRequest("POST", url+MCPPath, strings.NewReader(body))
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
	open := func() string {
		resp := post("", initBody)
		sid := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != 200 || sid == "" {
			t.Fatalf("initialize: %d sid %q", resp.StatusCode, sid)
		}
		post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		return sid
	}
	var sids []string
	for range 3 {
		sids = append(sids, open())
		time.Sleep(10 * time.Millisecond) // distinct last-use times
	}
	// The first session is used again: the second is now idle the longest.
	if post(sids[0], `{"jsonrpc":"2.0","id":2,"method":"ping"}`).StatusCode != 200 {
		t.Fatal("ping on session 1 failed")
	}
	fourth := open()
	if got := post(sids[1], `{"jsonrpc":"2.0","id":3,"method":"ping"}`).StatusCode; got != http.StatusNotFound {
		t.Fatalf("the session idle the longest answers %d after eviction, want 404", got)
	}
	for _, sid := range []string{sids[0], sids[2], fourth} {
		if got := post(sid, `{"jsonrpc":"2.0","id":4,"method":"ping"}`).StatusCode; got != 200 {
			t.Fatalf("a kept session answers %d", got)
		}
	}
	if v := metricValue(t, addr, "", `sluice_http_limit_events_total{event="session_evicted"}`); v != "1" {
		t.Errorf("session_evicted = %q, want 1", v)
	}

	// Every session busy: a new one is refused, and nothing is evicted.
	for _, sid := range []string{sids[0], sids[2], fourth} {
		go func() {
			req, _ := http.NewRequest("POST", url+MCPPath, strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"call","arguments":{"capability":"up__block","arguments":{}}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	for range 3 {
		select {
		case <-started:
		case <-time.After(20 * time.Second):
			t.Fatal("the blocking calls did not start")
		}
	}
	resp := post("", initBody)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a session over the cap with every session busy: %d, want 503", resp.StatusCode)
	}
	close(release)
	if v := metricValue(t, addr, "", `sluice_http_limit_events_total{event="session_refused"}`); v != "1" {
		t.Errorf("session_refused = %q, want 1", v)
	}
	// Idle again: a new session is admitted.
	waitFor(t, "a session admitted once calls ended", func() bool {
		r := post("", initBody)
		return r.StatusCode == 200
	})
}
