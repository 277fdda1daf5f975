package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestServeRoutesScriptCallTraffic: a server's roots/list during a call a
// code-mode script makes reaches the agent running the script (the
// script's calls are that agent's requests in flight).
func TestServeRoutesScriptCallTraffic(t *testing.T) {
	w := newWorld(t)
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx", "-mode", "legacy-only"))
	g := w.open()
	a := serveAgent(t, g, false, `{"roots":{}}`, func(method string, _ json.RawMessage) (json.RawMessage, *rpcError) {
		if method == "roots/list" {
			return json.RawMessage(`{"roots":[{"uri":"file:///script-agent-root","name":"agent"}]}`), nil
		}
		return nil, &rpcError{Code: -32601, Message: "no"}
	})
	r := a.tool("execute", `{"script":"result = fx.ask_roots()"}`)
	if r.IsError || !strings.Contains(r.text(), "script-agent-root") {
		t.Fatalf("execute fx.ask_roots(): %s", r.raw)
	}
	a.close()
	waitNoChildren(t)
}
