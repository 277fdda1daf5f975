package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"sluice/gateway/mcp"
)

// TestEveryRequestHonoursTheDeclaredTimeout: a server that stops reading
// after the handshake fails the call's tools/list within the declared
// timeoutMs, not the client's 60 s default, and the error says so.
func TestEveryRequestHonoursTheDeclaredTimeout(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx", "-mode", "stop-reading") + "    timeoutMs: 700\n")
	g := w.open()
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second) // a hang guard
	defer cancel()
	_, err := g.Call(ctx, CallRequest{Capability: "fx__echo", Arguments: json.RawMessage(`{"text":"x"}`), Yes: true})
	if err == nil {
		t.Fatal("a call to a server that does not read succeeded")
	}
	if ctx.Err() != nil {
		t.Fatalf("the call waited past the hang guard instead of its 700ms timeout: %v", err)
	}
	if mcp.CodeOf(err) != mcp.CodeTimeout || !strings.Contains(err.Error(), "700ms") {
		t.Fatalf("err = %v (code %q); want a timeout that names the declared 700ms", err, mcp.CodeOf(err))
	}
}
