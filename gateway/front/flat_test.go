package front

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func flatFake() *fakeBackend {
	b := newFake()
	b.setItems(KindTools,
		toolItem("fs", "read", "Read a file."),
		toolItem("fs", "search", "Search files."),
		toolItem("git", "search", "Search commits."),
		Item{Server: "bad", Raw: json.RawMessage(`{"name":"not_object","inputSchema":{"type":"string"}}`)},
		Item{Server: "bad", Raw: json.RawMessage(`{"name":"hdr","inputSchema":{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"A"}}}}`)},
		Item{Server: "bad", Raw: json.RawMessage(`not json`)},
	)
	b.call = func(_ context.Context, r CallRequest, _ Peer) (json.RawMessage, error) {
		return textResult("ran " + r.Capability + " " + string(r.Arguments)), nil
	}
	return b
}

func TestFlatModeNamesAndCalls(t *testing.T) {
	for _, tc := range []struct {
		noPrefix bool
		want     []string
		calls    map[string]string // exposed -> capability
	}{
		{false, []string{"fs__read", "fs__search", "git__search"}, map[string]string{"fs__read": "fs__read", "git__search": "git__search"}},
		{true, []string{"fs__search", "git__search", "read"}, map[string]string{"read": "fs__read", "fs__search": "fs__search"}},
	} {
		t.Run(fmt.Sprint("noPrefix=", tc.noPrefix), func(t *testing.T) {
			s := connect(t, flatFake(), &Options{Mode: ModeFlat, NoPrefix: tc.noPrefix}, nil, "")
			got := s.toolNames(t)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("tools = %v, want %v (invalid upstream tools must be skipped)", got, tc.want)
			}
			for exposed, capability := range tc.calls {
				res := s.call(t, exposed, map[string]any{"x": 1})
				if want := "ran " + capability + ` {"x":1}`; resultText(res) != want {
					t.Fatalf("%s: got %q want %q", exposed, resultText(res), want)
				}
			}
			// An unknown tool is a protocol error, not a tool result.
			_, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nope"})
			if err == nil || !strings.Contains(err.Error(), "unknown tool") {
				t.Fatalf("unknown tool: err = %v", err)
			}
		})
	}
}

func TestFlatModeListChanged(t *testing.T) {
	b := flatFake()
	var mu sync.Mutex
	n := 0
	s := connect(t, b, &Options{Mode: ModeFlat}, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		mu.Lock()
		n++
		mu.Unlock()
	}}, "2025-11-25")
	b.setItems(KindTools, toolItem("fs", "read", "Read a file, now better."), toolItem("new", "thing", "New."))
	b.emit(Event{Kind: EventToolsChanged, Server: "new"})
	waitFor(t, "tools/list_changed", func() bool { mu.Lock(); defer mu.Unlock(); return n > 0 })
	got := s.toolNames(t)
	slices.Sort(got)
	if want := []string{"fs__read", "new__thing"}; !slices.Equal(got, want) {
		t.Fatalf("after change: %v, want %v", got, want)
	}
	res, _ := s.cs.ListTools(context.Background(), nil)
	for _, tl := range res.Tools {
		if tl.Name == "fs__read" && tl.Description != "Read a file, now better." {
			t.Fatalf("changed tool not re-registered: %q", tl.Description)
		}
	}
}

func TestFlatModePassThrough(t *testing.T) {
	b := newFake()
	b.setItems(KindResources,
		Item{Server: "docs", Raw: json.RawMessage(`{"uri":"test://a","name":"a","mimeType":"text/plain"}`)},
		Item{Server: "other", Raw: json.RawMessage(`{"uri":"test://a","name":"dup"}`)},
	)
	b.setItems(KindResourceTemplates, Item{Server: "docs", Raw: json.RawMessage(`{"uriTemplate":"test://t/{id}","name":"t"}`)})
	b.setItems(KindPrompts, Item{Server: "docs", Raw: json.RawMessage(`{"name":"greet","arguments":[{"name":"who","required":true}]}`)})
	var mu sync.Mutex
	var seen []string
	note := func(s string) { mu.Lock(); seen = append(seen, s); mu.Unlock() }
	b.readRes = func(_ context.Context, server string, params json.RawMessage, _ Peer) (json.RawMessage, error) {
		var p struct{ URI string }
		json.Unmarshal(params, &p)
		note("read " + server + " " + p.URI)
		return json.RawMessage(fmt.Sprintf(`{"contents":[{"uri":%q,"text":"hello"}]}`, p.URI)), nil
	}
	b.getPrompt = func(_ context.Context, server string, params json.RawMessage, _ Peer) (json.RawMessage, error) {
		var p struct {
			Name      string
			Arguments map[string]string
		}
		json.Unmarshal(params, &p)
		note("prompt " + server + " " + p.Name)
		return json.RawMessage(`{"messages":[{"role":"user","content":{"type":"text","text":"hi ` + p.Arguments["who"] + `"}}]}`), nil
	}
	b.completeFn = func(_ context.Context, server string, params json.RawMessage) (json.RawMessage, error) {
		note("complete " + server + " " + string(params))
		return json.RawMessage(`{"completion":{"values":["one","two"],"total":2}}`), nil
	}
	logs := make(chan *mcp.LoggingMessageParams, 4)
	s := connect(t, b, &Options{Mode: ModeFlat}, &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
		logs <- r.Params
	}}, "2025-11-25")
	ctx := context.Background()

	rl, err := s.cs.ListResources(ctx, nil)
	if err != nil || len(rl.Resources) != 1 || rl.Resources[0].Name != "docs__a" {
		t.Fatalf("resources = %+v, %v", rl, err)
	}
	rt, err := s.cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(rt.ResourceTemplates) != 1 {
		t.Fatalf("templates = %+v, %v", rt, err)
	}
	for _, uri := range []string{"test://a", "test://t/42"} {
		rr, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || rr.Contents[0].Text != "hello" {
			t.Fatalf("read %s = %+v, %v", uri, rr, err)
		}
	}
	pl, err := s.cs.ListPrompts(ctx, nil)
	if err != nil || len(pl.Prompts) != 1 || pl.Prompts[0].Name != "docs__greet" {
		t.Fatalf("prompts = %+v, %v", pl, err)
	}
	gp, err := s.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "docs__greet", Arguments: map[string]string{"who": "Ada"}})
	if err != nil || gp.Messages[0].Content.(*mcp.TextContent).Text != "hi Ada" {
		t.Fatalf("get prompt = %+v, %v", gp, err)
	}
	cr, err := s.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "docs__greet"}, Argument: mcp.CompleteParamsArgument{Name: "who", Value: "A"}})
	if err != nil || len(cr.Completion.Values) != 2 {
		t.Fatalf("complete = %+v, %v", cr, err)
	}
	if _, err := s.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "unknown"}, Argument: mcp.CompleteParamsArgument{Name: "x"}}); err == nil {
		t.Fatal("completion of an unknown prompt succeeded")
	}
	if err := s.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	b.emit(Event{Kind: EventLog, Server: "docs", Params: json.RawMessage(`{"level":"warning","logger":"idx","data":{"n":1}}`)})
	select {
	case m := <-logs:
		if m.Logger != "docs/idx" || m.Level != "warning" {
			t.Fatalf("forwarded log = %+v", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("upstream log message not forwarded")
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"read docs test://a", "read docs test://t/42", "prompt docs greet"}
	for i, w := range want {
		if seen[i] != w {
			t.Fatalf("backend saw %q, want %q (all: %q)", seen[i], w, seen)
		}
	}
	if !strings.Contains(seen[3], `"name":"greet"`) || !strings.HasPrefix(seen[3], "complete docs ") {
		t.Fatalf("completion forwarded as %q; want upstream prompt name", seen[3])
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !slices.Equal(b.logLevels, []string{"info"}) {
		t.Fatalf("setLevel forwarded as %v", b.logLevels)
	}
}

// panicky panics in List: front logs it and keeps serving.
type panicky struct{ *fakeBackend }

func (p panicky) List(context.Context, Kind) ([]Item, error) { panic("list exploded") }

func TestBackendPanicsInRegistrationAreContained(t *testing.T) {
	b := panicky{flatFake()}
	s := connect(t, b, &Options{Mode: ModeFlat}, nil, "2025-11-25")
	b.emit(Event{Kind: EventToolsChanged})
	b.emit(Event{Kind: EventPromptsChanged})
	if got := s.toolNames(t); len(got) != 0 {
		t.Fatalf("tools = %v", got)
	}
	if err := s.cs.Ping(context.Background(), nil); err != nil {
		t.Fatalf("session died: %v", err)
	}
}

// TestFlatModeReadResult: a flat-mode agent gets the gateway's read_result
// (as sluice__read_result) whenever results can be paged, the name is never
// handed to an upstream tool, and the instructions name it.
func TestFlatModeReadResult(t *testing.T) {
	for _, tc := range []struct {
		name     string
		feature  bool
		noPrefix bool
		want     []string
	}{
		{"off", false, false, []string{"fs__read", "sluice__read_result_d3be1893", "x__sluice__read_result"}},
		{"on", true, false, []string{"fs__read", "sluice__read_result", "sluice__read_result_d3be1893", "x__sluice__read_result"}},
		// fs and sluice both have read_result: neither is bare.
		{"on-no-prefix", true, true, []string{"fs__read_result", "read", "sluice__read_result", "sluice__read_result_d3be1893", "x__sluice__read_result"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newFake()
			b.features = Features{ReadResult: tc.feature}
			// Upstream tools that would take the reserved name: a server
			// called "sluice" and a bare name under --no-prefix.
			b.setItems(KindTools,
				toolItem("fs", "read", "Read a file."),
				toolItem("sluice", "read_result", "An upstream tool."),
				toolItem("x", "sluice__read_result", "Another."),
			)
			if tc.noPrefix {
				b.setItems(KindTools,
					toolItem("fs", "read", "Read a file."),
					toolItem("fs", "read_result", "An upstream read_result."),
					toolItem("sluice", "read_result", "An upstream tool."),
					toolItem("x", "sluice__read_result", "Another."),
				)
			}
			b.readResult = func(_ context.Context, r ReadResultRequest, _ Peer) (json.RawMessage, error) {
				return textResult(fmt.Sprintf("read %s %d %d", r.Ref, r.Offset, r.Length)), nil
			}
			s := connect(t, b, &Options{Mode: ModeFlat, NoPrefix: tc.noPrefix}, nil, "")
			got := s.toolNames(t)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("tools = %v, want %v", got, tc.want)
			}
			instr := s.cs.InitializeResult().Instructions
			if tc.feature != strings.Contains(instr, "sluice__read_result") {
				t.Fatalf("instructions mention sluice__read_result = %v, want %v: %q", !tc.feature, tc.feature, instr)
			}
			if !tc.feature {
				return
			}
			res := s.call(t, "sluice__read_result", map[string]any{"ref": "r-1", "offset": 5, "length": 7})
			if res.IsError || resultText(res) != "read r-1 5 7" {
				t.Fatalf("read_result = %v %q", res.IsError, resultText(res))
			}
			// The upstream tool under the hashed name still reaches its server.
			res = s.call(t, "sluice__read_result_d3be1893", map[string]any{})
			if !strings.Contains(resultText(res), "sluice__read_result") {
				t.Fatalf("upstream tool = %q", resultText(res))
			}
		})
	}
}
