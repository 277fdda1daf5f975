package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// agentSession connects one legacy-era agent over streamable HTTP whose
// client offers the single root uri.
func agentSession(t *testing.T, url, name, root string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
	c.AddRoots(&mcp.Root{URI: root, Name: name})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: tr}, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("%s: connect: %v", name, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestServeHTTPRoutesServerRequestsToTheirSession: with two agents on
// sluice serve --http, a server's roots/list during agent A's call reaches
// A, never B; while both have calls in flight on that server, sluice
// cannot tell whose it is and refuses it rather than guess.
func TestServeHTTPRoutesServerRequestsToTheirSession(t *testing.T) {
	w := newWorld(t)
	name := uniqueName(t)
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx", "-name", name, "-mode", "legacy-only"))
	addr, _, stop := startHTTPServeProc(t, nil, "--mode", "flat")
	url := "http://" + addr + "/mcp"
	a := agentSession(t, url, "agent-a", "file:///root-of-agent-a")
	b := agentSession(t, url, "agent-b", "file:///root-of-agent-b")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	call := func(cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return toolText(res), res.IsError
	}
	// Alone on the server, each agent gets its own roots.
	if got, _ := call(a, "fx__ask_roots", map[string]any{}); !strings.Contains(got, "root-of-agent-a") {
		t.Fatalf("agent A alone: %s", got)
	}
	if got, _ := call(b, "fx__ask_roots", map[string]any{}); !strings.Contains(got, "root-of-agent-b") {
		t.Fatalf("agent B alone: %s", got)
	}

	// A's call asks later; meanwhile B's call is in flight on the same
	// server (started after A's, so the most recent).
	type answer struct {
		text  string
		isErr bool
	}
	ac := make(chan answer, 1)
	go func() {
		res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "fx__ask_roots", Arguments: map[string]any{"ms": 3000}})
		if err != nil {
			ac <- answer{err.Error(), true}
			return
		}
		ac <- answer{toolText(res), res.IsError}
	}()
	time.Sleep(300 * time.Millisecond) // A's call is on its way; its roots/list comes 3 s in
	if got, isErr := call(b, "fx__slow", map[string]any{"ms": 6000}); isErr {
		t.Fatalf("B's slow call: %s", got)
	}
	got := <-ac
	if strings.Contains(got.text, "root-of-agent-b") {
		t.Fatalf("agent B's roots answered agent A's server request: %s", got.text)
	}
	if !got.isErr || !strings.Contains(got.text, "several agents") {
		t.Fatalf("with two agents' calls in flight, the request should be refused naming why: %+v", got)
	}
	stop()
	noneLeft(t, name)
}
