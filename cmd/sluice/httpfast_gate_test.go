package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHTTPFastPathKeepsTheGates: a tools/call the HTTP fast path would
// take is refused, as any request, without the bearer token, from a
// foreign Origin or Host (DNS rebinding), or over the body cap; only the
// admitted one runs, and only it is counted on the fast path.
func TestHTTPFastPathKeepsTheGates(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	want(t, sluiceProc(t, "", "find", "--server", "fx", "--refresh"), 0, "fx__echo")
	addr, _, stop := startHTTPServeProc(t, []string{"SLUICE_TOKEN=tok-gate"}, "--mode", "flat")
	defer stop()
	const call = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"ran"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	post := func(body string, edit func(*http.Request)) (int, string) {
		t.Helper()
		req, err := http.NewRequest("POST", "http://"+addr+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "fx__echo")
		req.Header.Set("Authorization", "Bearer tok-gate")
		if edit != nil {
			edit(req)
		}
		c := &http.Client{Timeout: 60 * time.Second} // hang guard
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name string
		body string
		edit func(*http.Request)
		code int
	}{
		{"no token", call, func(r *http.Request) { r.Header.Del("Authorization") }, http.StatusUnauthorized},
		{"wrong token", call, func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok-gatex") }, http.StatusUnauthorized},
		{"foreign origin", call, func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") }, http.StatusForbidden},
		{"foreign host", call, func(r *http.Request) { r.Host = "evil.example" }, http.StatusForbidden},
		{"over the body cap", strings.Replace(call, `"ran"`, `"`+strings.Repeat("a", 5<<20)+`"`, 1), nil, http.StatusRequestEntityTooLarge},
	} {
		code, body := post(tc.body, tc.edit)
		if code != tc.code || strings.Contains(body, "ran") {
			t.Errorf("%s: %d %q, want %d and no result", tc.name, code, firstLineOf(body), tc.code)
		}
	}
	if code, body := post(call, nil); code != http.StatusOK || !strings.Contains(body, `"text":"ran"`) {
		t.Fatalf("the admitted call: %d %s", code, body)
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer tok-gate")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(m), "sluice_http_fast_path_calls_total 1\n") {
		t.Fatalf("the fast path did not count exactly the admitted call:\n%s", grepLines(string(m), "fast_path"))
	}
}
