package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestServeHTTPNullIDAndBatchDuplicates: through the built binary, a
// request with "id": null is answered -32600 with id null over HTTP as
// over stdio (a session's call, a batch, a stateless modern request), and
// a batch whose requests share an id is refused whole: the tool never
// runs.
func TestServeHTTPNullIDAndBatchDuplicates(t *testing.T) {
	w := newWorld(t)
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx"))
	url, stop := startHTTPServe(t, "--mode", "flat")
	defer stop()
	post := func(sid, version, body string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		if version != "" {
			req.Header.Set("Mcp-Protocol-Version", version)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
	}
	_, sid, _ := post("", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if sid == "" {
		t.Fatal("no session")
	}
	post(sid, "2025-03-26", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	echo := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"ran"}}}`
	}
	for _, tc := range []struct{ what, sid, version, body, fragment string }{
		{"call", sid, "2025-03-26", echo("null"), "the request id is null"},
		{"batch", sid, "2025-03-26", "[" + echo("2") + "," + echo("null") + "]", "message 2 of the batch"},
		{"duplicate ids", sid, "2025-03-26", "[" + echo("3") + "," + echo("3") + "]", "used by two requests of this batch"},
		{"modern", "", "2026-07-28", `{"jsonrpc":"2.0","id":null,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "the request id is null"},
	} {
		code, _, body := post(tc.sid, tc.version, tc.body)
		if code != 400 || !strings.Contains(body, `"id":null`) || !strings.Contains(body, `"code":-32600`) || !strings.Contains(body, tc.fragment) || strings.Contains(body, "ran") {
			t.Errorf("%s: %d %s", tc.what, code, body)
		}
	}
	if code, _, body := post(sid, "2025-03-26", echo("4")); code != 200 || !strings.Contains(body, "ran") {
		t.Fatalf("a plain call after the refusals: %d %s", code, body)
	}
}
