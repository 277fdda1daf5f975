package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// serveWithLog starts 'sluice serve --http 127.0.0.1:0 args...' and
// returns its base URL, its stderr so far (a func) and a stop that
// interrupts it and waits for its exit.
func serveWithLog(t *testing.T, args ...string) (string, func() string, func()) {
	t.Helper()
	cmd := exec.Command(sluiceBin, append([]string{"serve", "--http", "127.0.0.1:0"}, args...)...)
	ownGroup(cmd)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killGroup(cmd) })
	var log syncBuffer
	addrc := make(chan string, 1)
	done := make(chan struct{})
	re := regexp.MustCompile(`"msg":"serving MCP over HTTP".*"addr":"([^"]+)"`)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			log.Write(append(sc.Bytes(), '\n'))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addrc <- m[1]:
				default:
				}
			}
		}
	}()
	var addr string
	select {
	case addr = <-addrc:
	case <-time.After(90 * time.Second): // generous: filters compile first, on a loaded machine
		t.Fatalf("serve did not report its address:\n%s", log.String())
	}
	stop := func() {
		_ = interrupt(cmd)
		select {
		case <-done: // stderr closed: serve has written its last line
		case <-time.After(30 * time.Second):
			t.Errorf("serve did not exit within 30 s of its interrupt")
		}
		_ = cmd.Wait()
	}
	return "http://" + addr, log.String, stop
}

// rpc posts one JSON-RPC message to /mcp with extra headers and returns
// the response and the last JSON-RPC message in its body.
func rpc(t *testing.T, base, session, body string, hdr map[string]string) (*http.Response, map[string]json.RawMessage) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var last map[string]json.RawMessage
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(line), &m) == nil && m["jsonrpc"] != nil {
			last = m
		}
	}
	return resp, last
}

func get(t *testing.T, url string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// logLines returns the JSON log lines whose msg is msg.
func logLines(t *testing.T, log, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(log, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// TestServeRequestIDsMetricsAndSummary: over HTTP, the client's request
// id is echoed and carried by every log line of its request (front's and
// the upstream call's), a bad one is replaced, /livez answers, the
// per-upstream metrics count the call, a slow call is logged, and the
// shutdown summary counts everything.
func TestServeRequestIDsMetricsAndSummary(t *testing.T) {
	w := newWorld(t)
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx"))
	base, log, stop := serveWithLog(t, "--mode", "flat", "--log-level", "debug", "--slow-call", "150ms")

	// /livez: no I/O, no token, still tagged.
	resp, body := get(t, base+"/livez", map[string]string{"X-Correlation-ID": "corr_1"})
	if resp.StatusCode != 200 || body != "live\n" || resp.Header.Get("X-Request-ID") != "corr_1" {
		t.Fatalf("/livez: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	// A bad id (too long, or with characters outside the set) is replaced.
	for _, bad := range []string{strings.Repeat("a", 65), "a b", "x\"y", "ä"} {
		resp, _ = get(t, base+"/healthz", map[string]string{"X-Request-ID": bad})
		if got := resp.Header.Get("X-Request-ID"); !regexp.MustCompile(`^[0-9a-f]{24}$`).MatchString(got) {
			t.Fatalf("bad id %q came back as %q", bad, got)
		}
	}
	// Rejected requests carry one too.
	resp, _ = get(t, base+"/nope", map[string]string{"X-Request-ID": "r404"})
	if resp.StatusCode != 404 || resp.Header.Get("X-Request-ID") != "r404" {
		t.Fatalf("404: %d %v", resp.StatusCode, resp.Header)
	}

	resp, _ = rpc(t, base, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, map[string]string{"X-Request-ID": "init-1"})
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.Header.Get("X-Request-ID") != "init-1" || session == "" {
		t.Fatalf("initialize: %v", resp.Header)
	}
	rpc(t, base, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	resp, m := rpc(t, base, session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"hello"}}}`, map[string]string{"X-Request-ID": "call-42"})
	if resp.Header.Get("X-Request-ID") != "call-42" || !strings.Contains(string(m["result"]), "hello") {
		t.Fatalf("call: %v %s", resp.Header, m)
	}
	resp, m = rpc(t, base, session, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fx__slow","arguments":{"ms":400}}}`, map[string]string{"X-Correlation-ID": "slow-7"})
	if resp.Header.Get("X-Request-ID") != "slow-7" || m["result"] == nil {
		t.Fatalf("slow call: %v %s", resp.Header, m)
	}

	// A crash, then a call that relaunches the server.
	rpc(t, base, session, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fx__crash","arguments":{}}}`, nil)
	_, m = rpc(t, base, session, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"back"}}}`, nil)
	if !strings.Contains(string(m["result"]), "back") {
		t.Fatalf("call after the crash: %s", m)
	}

	resp, metrics := get(t, base+"/metrics", nil)
	for _, series := range []string{
		`sluice_upstream_calls_total{outcome="ok",server="fx"} 3`,
		`sluice_upstream_calls_total{outcome="error",server="fx"} 1`,
		`sluice_upstream_launches_total{outcome="ok",server="fx"} 2`,
		`sluice_upstream_crashes_total{server="fx"} 1`,
		`sluice_upstream_restarts_total{server="fx"} 1`,
		`sluice_upstream_call_duration_seconds_count{server="fx"} 4`,
		`sluice_upstream_bytes_total{direction="in",server="fx"}`,
		`sluice_upstream_bytes_total{direction="out",server="fx"}`,
		// Every call of this session was answered on the HTTP fast path.
		"sluice_http_fast_path_calls_total 4\n",
	} {
		if !strings.Contains(metrics, series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}
	stop()
	all := log()

	// Every log line of the call's request carries its id: front's
	// "call finished" and the gateway's "upstream call".
	for _, msg := range []string{"call finished", "upstream call"} {
		found := false
		for _, l := range logLines(t, all, msg) {
			if l["request_id"] == "call-42" {
				found = true
			}
		}
		if !found {
			t.Errorf("no %q log line with request_id call-42:\n%s", msg, all)
		}
	}
	for _, l := range logLines(t, all, "upstream call") {
		if l["request_id"] == nil || l["server"] != "fx" {
			t.Errorf("an upstream call log line without its request id or server: %v", l)
		}
	}
	// The 400ms call is logged as slow; on a loaded machine another call
	// may cross the threshold too, so only what a slow line says is checked.
	sawSlow := false
	for _, l := range logLines(t, all, "slow call") {
		d, _ := l["duration_ms"].(float64)
		if l["threshold_ms"] != float64(150) || d < 150 || l["request_id"] == nil {
			t.Errorf("slow call line: %v", l)
		}
		if l["request_id"] == "slow-7" && l["tool"] == "slow" {
			sawSlow = true
		}
	}
	if !sawSlow {
		t.Errorf("no slow call line for the 400ms call:\n%s", all)
	}
	sum := logLines(t, all, "summary")
	if len(sum) != 1 {
		t.Fatalf("want one summary line:\n%s", all)
	}
	srv, _ := sum[0]["servers"].(map[string]any)
	fx, _ := srv["fx"].(map[string]any)
	if sum[0]["calls"] != float64(4) || sum[0]["failures"] != float64(1) || fx["calls"] != float64(4) || fx["launches"] != float64(2) ||
		fx["crashes"] != float64(1) || fx["restarts"] != float64(1) || fx["bytes_in"] == float64(0) || sum[0]["uptime_ms"] == nil {
		t.Errorf("summary: %v", sum[0])
	}
}
