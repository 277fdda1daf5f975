package gateway

import (
	"strings"
	"testing"
)

// TestServeAsksUpstreamForProgressOnlyWhenTheAgentDid: a tools/call
// whose agent sent no progressToken reaches the upstream without one (no
// progress could reach the agent); one with a token reaches it with a
// token of sluice's own, as before.
func TestServeAsksUpstreamForProgressOnlyWhenTheAgentDid(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	g := w.open()
	a := serveAgent(t, g, true, `{}`, nil)

	raw := string(a.call("tools/call", `{"name":"fx__meta","arguments":{}}`))
	if strings.Contains(raw, `"isError":true`) || !strings.Contains(raw, `"era"`) {
		t.Fatalf("meta: %s", raw)
	}
	if strings.Contains(raw, "progressToken") {
		t.Fatalf("the upstream was asked for progress the agent did not ask for: %s", raw)
	}
	raw = string(a.call("tools/call", `{"name":"fx__meta","arguments":{},"_meta":{"progressToken":"tok-1"}}`))
	if !strings.Contains(raw, "progressToken") || strings.Contains(raw, "tok-1") {
		t.Fatalf("the upstream did not get a progress token of sluice's own: %s", raw)
	}
}
