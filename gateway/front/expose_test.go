package front

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func exposed(it Item) Item { it.Expose = true; return it }

// exposeFake lists fs__read (exposed), fs__search and git__search, and
// a tool named find (exposed) that must not take the gateway's find.
func exposeFake() *fakeBackend {
	b := newFake()
	b.features = Features{ReadResult: true, Execute: true, Expose: true}
	b.setItems(KindTools,
		exposed(toolItem("fs", "read", "Read a file.")),
		toolItem("fs", "search", "Search files."),
		toolItem("git", "search", "Search commits."),
		exposed(toolItem("x", "find", "An upstream tool called find.")),
	)
	b.call = func(_ context.Context, r CallRequest, _ Peer) (json.RawMessage, error) {
		return textResult("ran " + r.Capability + " as " + r.Tool + " " + string(r.Arguments)), nil
	}
	return b
}

var gatewayNames = []string{"call", "describe", "execute", "find", "read_result"}

func sorted(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return out
}

// TestExposedToolsBesideTheGatewayTools: in gateway mode the exposed tools
// are listed beside find/describe/call/execute/read_result with their
// flat names, called as flat tools are, in both protocol eras; a tool not
// exposed is refused with the way to reach it.
func TestExposedToolsBesideTheGatewayTools(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		for _, noPrefix := range []bool{false, true} {
			t.Run(fmt.Sprintf("version=%q/noPrefix=%v", version, noPrefix), func(t *testing.T) {
				s := connect(t, exposeFake(), &Options{Mode: ModeGateway, NoPrefix: noPrefix}, nil, version)
				want := append(slices.Clone(gatewayNames), "fs__read", "x__find")
				read := "fs__read"
				if noPrefix {
					// read is unique: its bare name; find stays prefixed,
					// as the gateway's find holds the name.
					want, read = append(slices.Clone(gatewayNames), "read", "x__find"), "read"
				}
				if got := sorted(s.toolNames(t)); !slices.Equal(got, sorted(want)) {
					t.Fatalf("tools = %v, want %v", got, sorted(want))
				}
				if got := resultText(s.call(t, read, map[string]any{"x": 1})); got != `ran fs__read as `+read+` {"x":1}` {
					t.Fatalf("exposed call: %q", got)
				}
				if got := resultText(s.call(t, "x__find", nil)); got != `ran x__find as x__find {}` {
					t.Fatalf("exposed call of an upstream find: %q", got)
				}
				if got := resultText(s.call(t, "find", map[string]any{"query": "q"})); got != `find "q"` {
					t.Fatalf("the gateway's find was replaced: %q", got)
				}
				if got := resultText(s.call(t, "call", map[string]any{"capability": "fs__search", "arguments": map[string]any{}})); got != `ran fs__search as call {}` {
					t.Fatalf("call of an unexposed capability: %q", got)
				}
				_, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fs__search", Arguments: map[string]any{}})
				if err == nil || !strings.Contains(err.Error(), `Unknown tool "fs__search"`) || !strings.Contains(err.Error(), "run it through call") {
					t.Fatalf("direct call of an unexposed capability: %v", err)
				}
			})
		}
	}
}

// TestExposedToolsFollowTheCatalog: a listing change re-plans the exposed
// set and the client hears tools/list_changed; switching the feature off
// removes them.
func TestExposedToolsFollowTheCatalog(t *testing.T) {
	b := exposeFake()
	var n atomic.Int32
	s := connect(t, b, &Options{Mode: ModeGateway}, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { n.Add(1) }}, "2025-11-25")
	b.setItems(KindTools, toolItem("fs", "read", "Read a file."), exposed(toolItem("fs", "search", "Search files.")), exposed(toolItem("new", "tool", "New.")))
	b.emit(Event{Kind: EventToolsChanged})
	waitFor(t, "tools/list_changed", func() bool { return n.Load() > 0 })
	waitFor(t, "the new exposed set", func() bool {
		return slices.Equal(sorted(s.toolNames(t)), sorted(append(slices.Clone(gatewayNames), "fs__search", "new__tool")))
	})
	before := n.Load()
	b.mu.Lock()
	b.features.Expose = false
	b.mu.Unlock()
	b.emit(Event{Kind: EventFeaturesChanged})
	waitFor(t, "exposed tools removed", func() bool { return slices.Equal(sorted(s.toolNames(t)), gatewayNames) })
	waitFor(t, "a second tools/list_changed", func() bool { return n.Load() > before })
}

// autoFake lists n tools of about 120 bytes each; fs__t0 is exposed.
func autoItems(n int) []Item {
	var items []Item
	for i := range n {
		it := toolItem("fs", fmt.Sprintf("t%d", i), "A tool of the test catalog.")
		if i == 0 {
			it.Expose = true
		}
		items = append(items, it)
	}
	return items
}

func itemBytes(items []Item) int {
	n := 0
	for _, it := range items {
		n += len(it.Raw) + 1
	}
	return n
}

// TestAutoModeSwitches: auto is flat while the definitions fit the
// budget, switches to gateway past it (telling the client), stays there
// until they fall below the low-water mark, then comes back; exposed
// tools are direct throughout, and resources follow the flat surface.
func TestAutoModeSwitches(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		t.Run(fmt.Sprintf("version=%q", version), func(t *testing.T) {
			b := newFake()
			b.features = Features{ReadResult: true, Execute: true, Expose: true}
			one := itemBytes(autoItems(1))
			budget := one * 10 // 10 tools fit
			b.setItems(KindTools, autoItems(5)...)
			b.setItems(KindResources, Item{Server: "fs", Raw: json.RawMessage(`{"uri":"test://a","name":"a"}`)})
			var mu sync.Mutex
			var modes []Mode
			var changed atomic.Int32
			s := connect(t, b, &Options{Mode: ModeAuto, AutoFlatBytes: budget, OnMode: func(m Mode) { mu.Lock(); modes = append(modes, m); mu.Unlock() }},
				&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed.Add(1) }}, version)
			flatNames := func(n int) []string {
				out := []string{"sluice__read_result"}
				for i := range n {
					out = append(out, fmt.Sprintf("fs__t%d", i))
				}
				return sorted(out)
			}
			gatewaySurface := sorted(append(slices.Clone(gatewayNames), "fs__t0"))
			resources := func() int {
				res, err := s.cs.ListResources(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				return len(res.Resources)
			}
			if got := sorted(s.toolNames(t)); !slices.Equal(got, flatNames(5)) {
				t.Fatalf("5 tools: %v, want flat %v", got, flatNames(5))
			}
			if resources() != 1 {
				t.Fatalf("flat auto lists no resources")
			}
			step := func(n int, want []string, listChanges bool, what string) {
				t.Helper()
				before := changed.Load()
				b.setItems(KindTools, autoItems(n)...)
				b.emit(Event{Kind: EventToolsChanged})
				waitFor(t, what, func() bool { return slices.Equal(sorted(s.toolNames(t)), want) })
				if listChanges && version == "2025-11-25" { // a modern session hears list_changed on subscriptions/listen only
					waitFor(t, "tools/list_changed ("+what+")", func() bool { return changed.Load() > before })
				}
			}
			step(10, flatNames(10), true, "flat at the budget")
			step(11, gatewaySurface, true, "gateway past the budget")
			if resources() != 0 {
				t.Fatalf("gateway auto still lists the flat resources")
			}
			if got := resultText(s.call(t, "fs__t0", nil)); got != "fs__t0 {}" {
				t.Fatalf("the exposed tool in gateway mode: %q", got)
			}
			step(10, gatewaySurface, false, "gateway above the low-water mark")
			step(8, gatewaySurface, false, "gateway above the low-water mark (8 tools)")
			step(7, flatNames(7), true, "flat below the low-water mark")
			waitFor(t, "the resources back in flat mode", func() bool { return resources() == 1 })
			mu.Lock()
			defer mu.Unlock()
			if want := []Mode{ModeFlat, ModeGateway, ModeFlat}; !slices.Equal(modes, want) {
				t.Fatalf("OnMode saw %v, want %v", modes, want)
			}
		})
	}
}

// TestAutoModeStartsInGateway: a catalog over the budget at start is
// served in gateway mode straight away.
func TestAutoModeStartsInGateway(t *testing.T) {
	b := newFake()
	b.setItems(KindTools, autoItems(30)...)
	s := connect(t, b, &Options{Mode: ModeAuto, AutoFlatBytes: itemBytes(autoItems(10))}, nil, "2025-11-25")
	// No read_result or execute (Features says so); fs__t0 is exposed.
	if got, want := sorted(s.toolNames(t)), []string{"call", "describe", "find", "fs__t0"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
}

// TestAutoModeNoPrefixNameClash: under NoPrefix an upstream tool named
// find is flat mode's "find" and, after a switch to gateway mode, gives
// the name back to the gateway's find; the switch back restores it.
func TestAutoModeNoPrefixNameClash(t *testing.T) {
	b := newFake()
	small := []Item{toolItem("x", "find", "Upstream find.")}
	b.setItems(KindTools, small...)
	b.call = func(_ context.Context, r CallRequest, _ Peer) (json.RawMessage, error) {
		return textResult("upstream " + r.Capability), nil
	}
	budget := itemBytes(small) * 2 // one tool is under the low-water mark, four are over the budget
	s := connect(t, b, &Options{Mode: ModeAuto, NoPrefix: true, AutoFlatBytes: budget}, nil, "2025-11-25")
	if got := resultText(s.call(t, "find", nil)); got != "upstream x__find" {
		t.Fatalf("flat find: %q", got)
	}
	b.setItems(KindTools, append(slices.Clone(small), autoItems(3)...)...)
	b.emit(Event{Kind: EventToolsChanged})
	waitFor(t, "gateway mode", func() bool { return slices.Contains(s.toolNames(t), "describe") })
	if got := resultText(s.call(t, "find", map[string]any{"query": "q"})); got != `find "q"` {
		t.Fatalf("after the switch find is not the gateway's: %q", got)
	}
	b.setItems(KindTools, small...)
	b.emit(Event{Kind: EventToolsChanged})
	waitFor(t, "flat mode again", func() bool { // the gateway tools leave at once, then the flat ones come
		names := s.toolNames(t)
		return !slices.Contains(names, "describe") && slices.Contains(names, "find")
	})
	if got := resultText(s.call(t, "find", nil)); got != "upstream x__find" {
		t.Fatalf("flat find after the switch back: %q", got)
	}
}

// TestStdioFastPathTakesExposedTools: in gateway mode the stdio fast path
// answers exposed tools exactly as the SDK path does, and leaves the
// gateway tools and unexposed names to the SDK.
func TestStdioFastPathTakesExposedTools(t *testing.T) {
	run := func(noFast bool) ([]string, int64) {
		b := fastBackend()
		b.features = Features{ReadResult: true, Execute: true, Expose: true}
		items := b.items[KindTools]
		for i := range items {
			items[i].Expose = !strings.Contains(string(items[i].Raw), `"name":"image"`)
		}
		var taken atomic.Int64
		p := startStdio(t, b, &Options{Mode: ModeGateway, noFastPath: noFast, fastTaken: &taken})
		p.send(legacyInit)
		p.until(1)
		p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		var out []string
		for i, params := range []string{
			`{"name":"up__echo","arguments":{"x":1}}`,
			`{"name":"up__structured","arguments":{}}`,
			`{"name":"up__toolerr","arguments":{}}`,
			`{"name":"up__fail","arguments":{}}`,
			`{"name":"up__protoerr","arguments":{}}`,
			`{"name":"up__unknown","arguments":{}}`,
			`{"name":"up__image","arguments":{}}`,
			`{"name":"find","arguments":{"query":"q"}}`,
		} {
			id := 10 + i
			p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, params))
			frames := p.until(id)
			out = append(out, canonical(t, frames[len(frames)-1]))
		}
		return out, taken.Load()
	}
	sdk, viaSDK := run(true)
	fast, viaFast := run(false)
	if viaSDK != 0 || viaFast != 6 {
		t.Fatalf("the fast path took %d calls switched off and %d of the 6 exposed ones switched on", viaSDK, viaFast)
	}
	for i := range sdk {
		if sdk[i] != fast[i] {
			t.Errorf("request %d:\n sdk:  %s\n fast: %s", i, sdk[i], fast[i])
		}
	}
	if !strings.Contains(sdk[6], "run it through call") || !strings.Contains(sdk[7], `find \"q\"`) {
		t.Fatalf("unexposed tool or gateway tool answered wrongly: %s / %s", sdk[6], sdk[7])
	}
}
