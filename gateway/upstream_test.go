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

// TestTruncatedListingIsNamedOnEveryPath: a server listing more tools
// than the cap is cut at it; asking for a tool past the cut says that
// the listing was truncated at 500 tools through call, describe, find,
// execute and flat mode, not only that the tool does not exist.
func TestTruncatedListingIsNamedOnEveryPath(t *testing.T) {
	w := newWorld(t)
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx", "-tools", "600"))
	g := w.open()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const past = "fx__tool_0600" // the fixture lists its 13 own tools first
	const note = "truncated at 500 tools"
	_, err := g.Call(ctx, CallRequest{Capability: past, Arguments: json.RawMessage(`{"x":"a"}`)})
	if err == nil || !strings.Contains(err.Error(), note) || !strings.Contains(err.Error(), `has no tool "tool_0600"`) {
		t.Errorf("call: err = %v", err)
	}
	if _, err := g.Call(ctx, CallRequest{Capability: "fx__echo", Arguments: json.RawMessage(`{"text":"a"}`)}); err != nil {
		t.Errorf("a tool inside the cap: %v", err)
	}
	if _, err := g.Describe(ctx, past); err == nil || !strings.Contains(err.Error(), note) {
		t.Errorf("describe: err = %v", err)
	}
	fr, err := g.Find(ctx, FindRequest{Query: "tool_0600"})
	if err != nil || len(fr.Servers) != 1 || !fr.Servers[0].Truncated || !strings.Contains(fr.Servers[0].Reason, note) {
		t.Errorf("find: %+v, %v", fr, err)
	}
	res, err := g.Execute(ctx, ExecuteRequest{Script: `result = fx.tool_0600(x="a")`})
	if err != nil || res.Error == nil || !strings.Contains(res.Error.Message, note) {
		t.Errorf("execute: %+v, %v", res, err)
	}
	res, err = g.Execute(ctx, ExecuteRequest{Script: `result = call("` + past + `", {"x": "a"})`})
	if err != nil || res.Error == nil || !strings.Contains(res.Error.Message, note) {
		t.Errorf("execute call(): %+v, %v", res, err)
	}

	a := serveAgent(t, g, true, `{}`, nil)
	_, ch := a.start("tools/call", `{"name":"`+past+`","arguments":{"x":"a"}}`)
	m := a.wait(ch, "tools/call")
	if m.Error == nil || m.Error.Code != -32602 || !strings.Contains(m.Error.Message, note) {
		t.Errorf("flat mode: %+v", m)
	}
	_, ch = a.start("tools/call", `{"name":"nosrv__x","arguments":{}}`)
	if m := a.wait(ch, "tools/call"); m.Error == nil || m.Error.Code != -32602 || !strings.Contains(m.Error.Message, "nosrv") {
		t.Errorf("flat mode, a server that does not exist: %+v", m)
	}
	a.close()
	waitNoChildren(t)
}
