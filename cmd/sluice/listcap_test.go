package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sluice/gateway/mcp/mcptest"
)

// TestServeListingBoundsHostileTool: the fixture's tool with a 135 KB
// title reaches the agent's tools/list (flat mode, and exposed in gateway
// mode) within the per-tool cap, says how to see its whole definition,
// and is still callable by its listed name.
func TestServeListingBoundsHostileTool(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx", "-mode", "leaky") + "    expose: [\"leak_long_title\"]\n    actionClass: read\n")
	want(t, sluice(t, "", "refresh", "fx"), 0, "refreshed")
	for _, tc := range []struct{ mode, whole string }{
		{"flat", "sluice describe fx__leak_long_title"},
		{"gateway", `describe {"capabilities":["fx__leak_long_title"]}`},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			a := startStdioAgent(t, "--mode", tc.mode)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := a.cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatalf("tools/list: %v\n%s", err, a.stderr.String())
			}
			all, _ := json.Marshal(res)
			if len(all) > 128<<10 {
				t.Errorf("tools/list carries %d bytes", len(all))
			}
			found := false
			for _, tl := range res.Tools {
				if tl.Name != "fx__leak_long_title" {
					continue
				}
				found = true
				raw, _ := json.Marshal(tl)
				if len(raw) > 8<<10+64 {
					t.Errorf("the tool's definition is listed with %d bytes", len(raw))
				}
				if !strings.Contains(tl.Description, "definition shortened") || !strings.Contains(tl.Description, tc.whole) {
					t.Errorf("the shortened definition does not say how to see it whole: %q", tl.Description)
				}
			}
			if !found {
				t.Fatalf("fx__leak_long_title is not listed")
			}
			if _, got := a.call(t, "fx__leak_long_title", nil); !strings.Contains(got, "titled") {
				t.Fatalf("calling the shortened tool: %s", got)
			}
		})
	}
}

// TestServeListingBoundsHugeEntries: a server listing resources,
// resource templates and prompts each far over the per-entry cap, and
// together far over the per-list cap, reaches the agent (over stdio and
// streamable HTTP, in both protocol eras) as valid listings within the
// caps, every entry still there with what identifies it whole, and each
// shortened one saying so and where to see it whole.
func TestServeListingBoundsHugeEntries(t *testing.T) {
	w := newWorld(t)
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx", "-mode", "huge-listings"))
	want(t, sluice(t, "", "refresh", "fx"), 0, "refreshed")
	addr, _, stop := startHTTPServeProc(t, nil, "--mode", "flat")
	defer stop()
	for _, version := range []string{"", "2025-11-25"} {
		for _, transport := range []string{"stdio", "http"} {
			t.Run(transport+"/version="+version, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				c := mcp.NewClient(&mcp.Implementation{Name: "listing-agent", Version: "1"}, nil)
				var tr mcp.Transport
				stderr := &syncBuffer{}
				if transport == "stdio" {
					cmd := exec.Command(sluiceBin, "serve", "--mode", "flat")
					cmd.Stderr = stderr
					ownGroup(cmd)
					t.Cleanup(func() { killGroup(cmd) })
					tr = &mcp.CommandTransport{Command: cmd, TerminateDuration: 20 * time.Second}
				} else {
					ht := &http.Transport{}
					defer ht.CloseIdleConnections()
					tr = &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: &http.Client{Transport: ht}, DisableStandaloneSSE: true}
				}
				cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
				if err != nil {
					t.Fatalf("connect: %v\n%s", err, stderr.String())
				}
				defer cs.Close()
				// Resources and prompts are listed once the server runs.
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__echo", Arguments: map[string]any{"text": "hi"}}); err != nil {
					t.Fatalf("tools/call: %v\n%s", err, stderr.String())
				}
				for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
					rs, err := cs.ListResources(ctx, nil)
					if err != nil {
						t.Fatalf("resources/list: %v\n%s", err, stderr.String())
					}
					ts, err := cs.ListResourceTemplates(ctx, nil)
					if err != nil {
						t.Fatalf("resources/templates/list: %v\n%s", err, stderr.String())
					}
					ps, err := cs.ListPrompts(ctx, nil)
					if err != nil {
						t.Fatalf("prompts/list: %v\n%s", err, stderr.String())
					}
					if len(rs.Resources) > 0 && len(ts.ResourceTemplates) > 1 && len(ps.Prompts) > 0 || time.Now().After(deadline) {
						break
					}
				}
				check := func(kind string, entries []json.RawMessage, ident func(i int) string) {
					t.Helper()
					total := 0
					for _, e := range entries {
						total += len(e)
					}
					if total > 128<<10 {
						t.Errorf("%s: the listing carries %d bytes of entries; the first: %.300s", kind, total, entries[0])
					}
					if len(entries) != mcptest.HugeListingEntries {
						var ids []string
						for _, e := range entries {
							ids = append(ids, string(e[:min(len(e), 80)]))
						}
						t.Fatalf("%s: %d entries listed, want %d: %q", kind, len(entries), mcptest.HugeListingEntries, ids)
					}
					for i, e := range entries {
						if !json.Valid(e) || !utf8.Valid(e) {
							t.Errorf("%s %d: not valid JSON / UTF-8: %.200q", kind, i, e)
						}
						if len(e) > 8<<10 {
							t.Errorf("%s %d: listed with %d bytes", kind, i, len(e))
						}
						var m struct{ Title, Description string }
						_ = json.Unmarshal(e, &m)
						if !strings.Contains(m.Description, "definition shortened") || !strings.Contains(m.Description, "ask the server fx directly") {
							t.Errorf("%s %d: the shortened entry does not say so: %.300q", kind, i, m.Description)
						}
						if !strings.Contains(string(e), ident(i)) {
							t.Errorf("%s %d: lost what identifies it (%s): %.300s", kind, i, ident(i), e)
						}
					}
				}
				marshalAll := func(n int, at func(i int) any) []json.RawMessage {
					out := make([]json.RawMessage, n)
					for i := range n {
						// As the gateway wrote it: no HTML escaping.
						var b bytes.Buffer
						enc := json.NewEncoder(&b)
						enc.SetEscapeHTML(false)
						_ = enc.Encode(at(i))
						out[i] = bytes.TrimSuffix(b.Bytes(), []byte("\n"))
					}
					return out
				}
				rs, err := cs.ListResources(ctx, nil)
				if err != nil {
					t.Fatalf("resources/list: %v\n%s", err, stderr.String())
				}
				sort.Slice(rs.Resources, func(i, j int) bool { return rs.Resources[i].URI < rs.Resources[j].URI })
				check("resource", marshalAll(len(rs.Resources), func(i int) any { return rs.Resources[i] }),
					func(i int) string { return fmt.Sprintf(`"uri":"huge://resource/%02d"`, i) })
				ts, err := cs.ListResourceTemplates(ctx, nil)
				if err != nil {
					t.Fatalf("resources/templates/list: %v\n%s", err, stderr.String())
				}
				// The gateway's own template (stored results) is not upstream.
				ts.ResourceTemplates = slices.DeleteFunc(ts.ResourceTemplates, func(rt *mcp.ResourceTemplate) bool {
					return !strings.HasPrefix(rt.URITemplate, "huge://")
				})
				sort.Slice(ts.ResourceTemplates, func(i, j int) bool {
					return ts.ResourceTemplates[i].URITemplate < ts.ResourceTemplates[j].URITemplate
				})
				check("template", marshalAll(len(ts.ResourceTemplates), func(i int) any { return ts.ResourceTemplates[i] }),
					func(i int) string { return fmt.Sprintf(`"uriTemplate":"huge://template/%02d/{id}"`, i) })
				ps, err := cs.ListPrompts(ctx, nil)
				if err != nil {
					t.Fatalf("prompts/list: %v\n%s", err, stderr.String())
				}
				sort.Slice(ps.Prompts, func(i, j int) bool { return ps.Prompts[i].Name < ps.Prompts[j].Name })
				check("prompt", marshalAll(len(ps.Prompts), func(i int) any { return ps.Prompts[i] }),
					func(i int) string { return fmt.Sprintf(`"name":"fx__prompt_%02d"`, i) })
			})
		}
	}
}
