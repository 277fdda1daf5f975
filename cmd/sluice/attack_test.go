package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sluice/gateway/mcp/mcptest"
)

// pipedServe runs 'sluice serve ARGS' as a process with the frames on
// stdin (an initialize handshake first) and returns its raw stdout: serve
// answers every request read before stdin's end.
func pipedServe(t *testing.T, args []string, frames ...string) []byte {
	t.Helper()
	in := strings.Join(append([]string{
		`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	}, frames...), "\n") + "\n"
	r := sluiceProc(t, in, append([]string{"serve"}, args...)...)
	if r.code != 0 {
		t.Fatalf("serve %v: %s", args, r)
	}
	return []byte(r.stdout)
}

// TestDamagedCatalogNeverReachesTheAgentAsInvalidUTF8: a recorded catalog
// whose schema holds bytes that are not UTF-8 (a damaged or edited cache
// file; json.Valid lets them through inside strings) reaches no agent as
// such: not through describe, not through a flat tools/list. Every line
// serve writes is UTF-8.
func TestDamagedCatalogNeverReachesTheAgentAsInvalidUTF8(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	want(t, sluice(t, "", "refresh", "fx"), 0, "refreshed")
	paths, _ := filepath.Glob(filepath.Join(w.cache, "catalogs", "*.json"))
	if len(paths) != 1 {
		t.Fatalf("catalog files: %v", paths)
	}
	data, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	from := []byte(`"properties":{"text":{"type":"string"}}`)
	if !bytes.Contains(data, from) {
		t.Fatalf("the fixture's echo schema changed: %s", data)
	}
	data = bytes.Replace(data, from, []byte("\"properties\":{\"text\":{\"type\":\"string\",\"description\":\"bad \xff\xfe here\"}}"), 1)
	if err := os.WriteFile(paths[0], data, 0o600); err != nil {
		t.Fatal(err)
	}
	// The operator accepts whatever review shows (or finds nothing to
	// review): either way no agent gets the bytes.
	sluice(t, "", "review", "fx", "--accept")
	for _, mode := range []string{"gateway", "flat", "auto"} {
		out := pipedServe(t, []string{"--mode", mode},
			`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"describe","arguments":{"capabilities":["fx__echo"]}}}`,
			`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"find","arguments":{"query":"echo"}}}`,
		)
		for i, line := range bytes.Split(out, []byte("\n")) {
			if !utf8.Valid(line) {
				t.Fatalf("mode %s: line %d of serve's stdout is not UTF-8: %q", mode, i, line)
			}
		}
	}
}

// TestServeListingsRedact: with the README's redaction config, the key a
// hostile server plants in its tool definitions (a title), its resource
// list (a uri), its prompt list and its instructions reaches the agent
// through none of serve's listings: flat mode, gateway mode with exposed
// tools and auto mode, initialize's instructions included.
func TestServeListingsRedact(t *testing.T) {
	w := newWorld(t)
	// The README's config with the longest deadline: a listed item the
	// redactor does not clear in time is left out (fail-closed), and the
	// default deadline for the 135 KB title (100 ms + 2 s per MiB, about
	// 0.4 s) was missed on a loaded machine; what is asserted here is
	// what reaches the agent, not how fast.
	w.writeUser("servers:\n" + fixture(t, "fx", "-mode", "leaky") + "    expose: [\"leak_*\"]\n" + readmeFilters + "    timeoutMs: 60000\n")
	want(t, sluice(t, "", "refresh", "fx"), 0, "refreshed") // instructions come from the catalog
	for _, mode := range []string{"flat", "gateway", "auto"} {
		t.Run(mode, func(t *testing.T) {
			a := startStdioAgent(t, "--mode", mode)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			check := func(what string, v any) {
				t.Helper()
				b, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				if i := bytes.Index(b, []byte(mcptest.LeakKey)); i >= 0 {
					t.Errorf("the key reached the agent in %s: ...%s...", what, b[max(0, i-300):min(len(b), i+100)])
				}
			}
			check("initialize", a.cs.InitializeResult())
			if !strings.Contains(a.cs.InitializeResult().Instructions, "Server fx: Test fixture") {
				t.Errorf("initialize lacks the server's instructions: %q", a.cs.InitializeResult().Instructions)
			}
			tools, err := a.cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			check("tools/list", tools)
			if !slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return strings.HasSuffix(tl.Name, "leak_long_title") }) {
				t.Errorf("the tool whose title carries the key is not listed")
			}
			if mode != "flat" {
				return
			}
			// Resources and prompts are listed once the server runs.
			a.call(t, "fx__leak_split", nil)
			deadline := time.Now().Add(90 * time.Second)
			for {
				res, err := a.cs.ListResources(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				check("resources/list", res)
				if len(res.Resources) > 0 {
					// Listed under its uri redacted, and read by that uri.
					read, err := a.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: res.Resources[0].URI})
					if err != nil || len(read.Contents) == 0 || !strings.HasPrefix(read.Contents[0].Text, "resource body ") {
						t.Fatalf("reading the listed resource %q: %v %+v", res.Resources[0].URI, err, read)
					}
					check("resources/read", read)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no resource listed:\n%s", a.stderr.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			// Prompts are listed after resources and templates.
			for {
				prompts, err := a.cs.ListPrompts(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				check("prompts/list", prompts)
				if len(prompts.Prompts) > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no prompt listed:\n%s", a.stderr.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			templates, err := a.cs.ListResourceTemplates(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			check("resources/templates/list", templates)
			if strings.Contains(a.stderr.String(), mcptest.LeakKey) {
				t.Errorf("the key is in serve's log")
			}
		})
	}
}

// TestServeUpstreamRequestsRedact: a hostile (legacy) server's sampling
// and elicitation requests, relayed to the agent whose call is in flight,
// reach it redacted: the key is in none of the params the agent gets, and
// the call still completes with the agent's answer; roots/list (no
// params) is relayed as before.
func TestServeUpstreamRequestsRedact(t *testing.T) {
	w := newWorld(t)
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx", "-mode", "leaky,legacy-only") + readmeFilters)
	var mu sync.Mutex
	var asked []string
	keep := func(method string, params any) {
		b, _ := json.Marshal(params)
		mu.Lock()
		asked = append(asked, method+" "+string(b))
		mu.Unlock()
	}
	cmd := exec.Command(sluiceBin, "serve", "--mode", "flat")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	ownGroup(cmd)
	c := mcp.NewClient(&mcp.Implementation{Name: "asked-agent", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			keep("sampling/createMessage", r.Params)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "SAMPLED"}}, nil
		},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			keep("elicitation/create", r.Params)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///agent-root", Name: "agent root"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 20 * time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		killGroup(cmd)
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer func() { cs.Close(); killGroup(cmd) }()
	for tool, answer := range map[string]string{"fx__leak_sampling": "SAMPLED", "fx__leak_elicit": "accept", "fx__ask_roots": "file:///agent-root"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil || res.IsError || !strings.Contains(toolText(res), answer) {
			t.Fatalf("%s: %v %+v\n%s", tool, err, res, stderr.String())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 {
		t.Fatalf("the agent was asked %d times: %q", len(asked), asked)
	}
	for _, a := range asked {
		if strings.Contains(a, mcptest.LeakKey) || !strings.Contains(a, "[REDACTED") {
			t.Errorf("the agent was asked, unredacted: %.600s", a)
		}
	}
}
