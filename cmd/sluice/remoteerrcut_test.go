package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRemotePostErrorBodyScrubbedBeforeItIsCut: a remote server that
// answers a tool call with an HTTP error whose body repeats the header
// it was sent, the credential straddling the point where the body is
// cut for the error message, shows the agent no part of it.
func TestRemotePostErrorBodyScrubbedBeforeItIsCut(t *testing.T) {
	w := newWorld(t)
	const bearer = "rem0te-Bearer-Value-2026x"
	t.Setenv("SLUICE_TEST_BEARER", bearer)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &m)
		if m.ID == nil {
			rw.WriteHeader(http.StatusAccepted)
			return
		}
		var res any
		switch m.Method {
		case "initialize":
			res = map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "echo", "version": "1"}}
		case "tools/list":
			res = map[string]any{"tools": []any{map[string]any{"name": "slow", "description": "d", "inputSchema": map[string]any{"type": "object"}}}}
		case "tools/call":
			http.Error(rw, strings.Repeat("x", 270)+" refused "+r.Header.Get("Authorization"), 500)
			return
		default:
			answerJSON(rw, map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
			return
		}
		answerJSON(rw, map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": res})
	}))
	defer srv.Close()
	w.writeUser("approve: [\"rem__*\"]\nservers:\n" + remoteDecl("rem", srv.URL+"/mcp", "allowPrivate: true", "actionClass: read",
		"transport: streamable-http", `headers: {Authorization: "Bearer ${env:SLUICE_TEST_BEARER}"}`))
	stdout, stderr := serveLog(t, nil, []string{call(10, "rem__slow", "")})
	if !strings.Contains(stdout, "xxxxxxxx") {
		t.Fatalf("the call's answer does not carry the error body:\n%s", stdout)
	}
	if strings.Contains(stdout, bearer[:8]) || strings.Contains(stderr, bearer[:8]) {
		t.Errorf("a part of the credential is shown:\n%s\n%s", stdout, stderr)
	}
}
