package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestGatewayModeSurface(t *testing.T) {
	for _, tc := range []struct {
		name     string
		features Features
		want     []string
	}{
		{"core", Features{}, []string{"call", "describe", "find"}},
		{"read_result", Features{ReadResult: true}, []string{"call", "describe", "find", "read_result"}},
		{"all", Features{ReadResult: true, Execute: true}, []string{"call", "describe", "execute", "find", "read_result"}},
	} {
		for _, version := range []string{"", "2025-11-25"} {
			t.Run(tc.name+"/"+version, func(t *testing.T) {
				b := newFake()
				b.features = tc.features
				s := connect(t, b, nil, nil, version)
				got := s.toolNames(t)
				slices.Sort(got)
				if !slices.Equal(got, tc.want) {
					t.Fatalf("tools = %v, want %v", got, tc.want)
				}
			})
		}
	}
}

func TestGatewayModeCalls(t *testing.T) {
	b := newFake()
	b.features = Features{ReadResult: true, Execute: true}
	var got atomic.Value
	b.call = func(_ context.Context, r CallRequest, _ Peer) (json.RawMessage, error) {
		got.Store(r)
		return json.RawMessage(`{"content":[{"type":"text","text":"ok"}],"structuredContent":{"n":12345678901234567890}}`), nil
	}
	b.execute = func(_ context.Context, r ExecuteRequest, _ Peer) (json.RawMessage, error) {
		return textResult(fmt.Sprintf("ran %s timeout %d", r.Script, r.TimeoutMs)), nil
	}
	s := connect(t, b, nil, nil, "")
	for _, tc := range []struct {
		tool    string
		args    any
		want    string
		isError bool
	}{
		{"find", map[string]any{"query": "read file", "limit": 5}, `find "read file"`, false},
		{"find", map[string]any{"limit": 500}, "limit 500 is out of range", true},
		{"find", map[string]any{"refresh": true}, "refresh needs a server", true},
		{"find", map[string]any{"bogus": 1}, "Invalid arguments", true},
		{"describe", map[string]any{"capabilities": []string{"fs__read"}}, "describe [fs__read]", false},
		{"describe", map[string]any{"capabilities": []string{}}, "describe takes 1 to 10", true},
		{"describe", map[string]any{"server": "fs"}, "describe [] server fs", false},
		{"describe", map[string]any{"server": "fs", "capabilities": []string{"fs__read"}}, "capabilities or a server, not both", true},
		{"call", map[string]any{"capability": "fs__read", "arguments": map[string]any{"path": "a"}}, "ok", false},
		{"call", map[string]any{"arguments": map[string]any{}}, "capability is missing", true},
		{"call", map[string]any{"capability": "fs__read", "arguments": []int{1}}, "arguments must be a JSON object", true},
		{"read_result", map[string]any{"handle": "r1", "offset": 10, "length": 20}, "read r1 10 20", false},
		{"read_result", map[string]any{"ref": "r2", "offset": 10, "length": 20}, "read r2 10 20", false},
		{"read_result", map[string]any{"handle": "r3", "ref": "r3"}, "read r3 0 0", false},
		{"read_result", map[string]any{"handle": "r3", "ref": "r4"}, "handle and ref name different results", true},
		{"read_result", map[string]any{"ref": ""}, "read_result needs a handle", true},
		{"execute", map[string]any{"script": "print(1)"}, "ran print(1) timeout 0", false},
		{"execute", map[string]any{"script": "print(1)", "timeoutMs": 1500}, "ran print(1) timeout 1500", false},
		{"execute", map[string]any{"script": "print(1)", "timeoutMs": -1}, "timeoutMs -1 is negative", true},
		{"execute", map[string]any{"script": ""}, "script is empty", true},
	} {
		t.Run(tc.tool+"/"+tc.want, func(t *testing.T) {
			res := s.call(t, tc.tool, tc.args)
			if res.IsError != tc.isError || !strings.Contains(resultText(res), tc.want) {
				t.Fatalf("%s(%v) = isError %v %q; want isError %v containing %q", tc.tool, tc.args, res.IsError, resultText(res), tc.isError, tc.want)
			}
		})
	}
	r := got.Load().(CallRequest)
	if r.Capability != "fs__read" || string(r.Arguments) != `{"path":"a"}` || r.Tool != "call" {
		t.Fatalf("backend got %+v", r)
	}
}

// TestDecodeToolResultKeepsNumbers: structuredContent is re-sent verbatim,
// so an integer beyond float64 precision survives the front.
func TestDecodeToolResultKeepsNumbers(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"content":[{"type":"text","text":"x"}],"structuredContent":{"n":12345678901234567890}}`, `"structuredContent":{"n":12345678901234567890}`},
		{`{"content":[],"structuredContent":[1.000000000000000000001]}`, `[1.000000000000000000001]`},
		{`{"content":[{"type":"text","text":"x"}]}`, `"content":[{"type":"text","text":"x"}]`},
		{`{}`, `"content":[]`},
	} {
		res, err := decodeToolResult(json.RawMessage(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(res)
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("decode(%s) re-encodes as %s; want it to contain %s", tc.in, out, tc.want)
		}
	}
	if _, err := decodeToolResult(json.RawMessage(`{"content":"nope"}`)); err == nil {
		t.Error("malformed content accepted")
	}
}

func TestGatewayModeErrors(t *testing.T) {
	b := newFake()
	b.call = func(_ context.Context, r CallRequest, _ Peer) (json.RawMessage, error) {
		switch r.Capability {
		case "tool_error":
			return nil, &ToolError{Message: "server fs is not trusted.", Remedy: "run sluice trust fs.", Err: errors.New("secret /home/x detail")}
		case "internal":
			return nil, errors.New("open /home/someone/.secret: permission denied")
		case "panic":
			panic("boom")
		case "malformed":
			return json.RawMessage(`{"content":"nope"`), nil
		}
		return textResult("fine"), nil
	}
	s := connect(t, b, nil, nil, "")
	for _, tc := range []struct{ capability, want, never string }{
		{"tool_error", "server fs is not trusted. Fix: run sluice trust fs.", "/home"},
		{"internal", "failed to run this call (request ", "/home"},
		{"panic", "failed to run this call", "boom"},
		{"malformed", "malformed result", ""},
	} {
		res := s.call(t, "call", map[string]any{"capability": tc.capability})
		text := resultText(res)
		if !res.IsError || !strings.Contains(text, tc.want) || (tc.never != "" && strings.Contains(text, tc.never)) {
			t.Errorf("%s: isError %v %q; want error containing %q and never %q", tc.capability, res.IsError, text, tc.want, tc.never)
		}
	}
	// The session survives all of that.
	if res := s.call(t, "call", map[string]any{"capability": "x"}); res.IsError {
		t.Fatalf("after errors: %q", resultText(res))
	}
}

// TestGatewayToolsListSize: the gateway surface stays small whatever the
// catalog holds (the catalog is never listed in gateway mode).
func TestGatewayToolsListSize(t *testing.T) {
	b := newFake()
	b.features = Features{ReadResult: true, Execute: true}
	var many []Item
	for i := range 5000 {
		many = append(many, toolItem(fmt.Sprintf("s%d", i%40), fmt.Sprintf("tool_%d", i), strings.Repeat("words ", 50)))
	}
	b.setItems(KindTools, many...)
	s := connect(t, b, nil, nil, "2025-11-25")
	res, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(res)
	if len(raw) >= 6*1024 {
		t.Fatalf("tools/list is %d bytes, want < 6144", len(raw))
	}
	if len(res.Tools) != 5 {
		t.Fatalf("got %d tools", len(res.Tools))
	}
	for _, tl := range res.Tools {
		if len(tl.Description) < 80 || tl.InputSchema == nil {
			t.Errorf("tool %s: description %q too thin or schema missing", tl.Name, tl.Description)
		}
	}
	t.Logf("gateway tools/list: %d bytes", len(raw))
}

func TestFeaturesChangeUpdatesSurface(t *testing.T) {
	b := newFake()
	changed := make(chan struct{}, 4)
	s := connect(t, b, nil, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}}, "2025-11-25")
	b.mu.Lock()
	b.features = Features{Execute: true}
	b.mu.Unlock()
	b.emit(Event{Kind: EventFeaturesChanged})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed")
	}
	if !slices.Contains(s.toolNames(t), "execute") {
		t.Fatalf("execute missing: %v", s.toolNames(t))
	}
}

func TestInstructions(t *testing.T) {
	b := newFake()
	b.instructions = "fs: reads files. " + strings.Repeat("é", 5000)
	s := connect(t, b, &Options{MaxInstructionsBytes: 100}, nil, "2025-11-25")
	ins := s.cs.InitializeResult().Instructions
	if !strings.Contains(ins, "find") || !strings.Contains(ins, "fs: reads files.") || !strings.HasSuffix(ins, "[...]") {
		t.Fatalf("instructions = %q", ins)
	}
	if !utf8.ValidString(ins) {
		t.Fatal("instructions are not valid UTF-8 text")
	}
}

func TestProtocolErrorPassesThrough(t *testing.T) {
	b := newFake()
	b.call = func(context.Context, CallRequest, Peer) (json.RawMessage, error) {
		return nil, &ProtocolError{Code: -32021, Message: "missing required client capability", Data: json.RawMessage(`{"requiredCapabilities":{"sampling":{}}}`)}
	}
	s := connect(t, b, &Options{Mode: ModeFlat}, nil, "")
	b.setItems(KindTools, toolItem("up", "needs_sampling", "x"))
	b.emit(Event{Kind: EventToolsChanged})
	waitFor(t, "tool registered", func() bool { return len(s.toolNames(t)) == 1 })
	_, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "up__needs_sampling"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != -32021 || !strings.Contains(je.Message, "missing required client capability") {
		t.Fatalf("err = %#v", err)
	}
}

// TestUpstreamProtocolFieldsAreStripped: an upstream result's resultType
// and reserved io.modelcontextprotocol/* _meta keys never reach the agent
// (a legacy agent must not see "resultType":"complete", nobody gets the
// upstream's serverInfo); other _meta keys and the content pass through.
func TestUpstreamProtocolFieldsAreStripped(t *testing.T) {
	up := `{"content":[{"type":"text","text":"hi"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"},"io.modelcontextprotocol/protocolVersion":"2026-07-28","vendor/x":1},"structuredContent":{"n":12345678901234567890}}`
	res, err := decodeToolResult(json.RawMessage(up))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(res)
	for _, bad := range []string{"resultType", "io.modelcontextprotocol/", `"up"`} {
		if strings.Contains(string(out), bad) {
			t.Fatalf("%s passed through: %s", bad, out)
		}
	}
	for _, good := range []string{`"vendor/x":1`, `12345678901234567890`, `"hi"`} {
		if !strings.Contains(string(out), good) {
			t.Fatalf("%s was lost: %s", good, out)
		}
	}
	for _, version := range []string{"2025-11-25", ""} {
		t.Run("client="+version, func(t *testing.T) {
			b := newFake()
			b.call = func(context.Context, CallRequest, Peer) (json.RawMessage, error) { return json.RawMessage(up), nil }
			s := connect(t, b, nil, nil, version)
			r := s.call(t, "call", map[string]any{"capability": "fs__x"})
			// A modern session gets the front's own serverInfo back, never
			// the upstream's.
			si, _ := json.Marshal(r.Meta["io.modelcontextprotocol/serverInfo"])
			if version != "" && si != nil && string(si) != "null" {
				t.Fatalf("a legacy agent got serverInfo in _meta: %s", si)
			}
			if r.Meta["vendor/x"] == nil || strings.Contains(string(si), `"up"`) || resultText(r) != "hi" {
				t.Fatalf("meta %v text %q", r.Meta, resultText(r))
			}
		})
	}
	for _, tc := range []struct{ in, want string }{
		{`{"resultType":"complete","contents":[]}`, `{"contents":[]}`},
		{`{"_meta":{"io.modelcontextprotocol/serverInfo":{}},"a":1}`, `{"a":1}`},
		{`{"a":"io.modelcontextprotocol/x"}`, `{"a":"io.modelcontextprotocol/x"}`},
		{`[1]`, `[1]`},
		{`{"_meta":"resultType"}`, `{"_meta":"resultType"}`},
	} {
		if got := string(stripProtocolFields(json.RawMessage(tc.in))); got != tc.want {
			t.Errorf("stripProtocolFields(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func FuzzStripProtocolFields(f *testing.F) {
	for _, s := range []string{`{"resultType":"complete"}`, `{"_meta":{"io.modelcontextprotocol/a":1,"b":2}}`, `{"_meta":null}`, `[]`, `{`, `"resultType"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out := stripProtocolFields(b)
		if json.Valid(b) && !json.Valid(out) {
			t.Fatalf("valid %q became invalid %q", b, out)
		}
	})
}

// TestExecuteDescriptionTeachesTheBuiltins: the execute tool's description
// is all a model reads before writing a script: it must name call(),
// parallel() with both dict spellings, and where signatures come from.
func TestExecuteDescriptionTeachesTheBuiltins(t *testing.T) {
	for _, gt := range gatewayTools {
		if gt.name != toolExecute {
			continue
		}
		for _, want := range []string{"call(", "parallel(", `{"tool","args"}`, `{"capability","arguments"}`, "describe", `{"server":`, "result"} {
			if !strings.Contains(gt.desc, want) {
				t.Errorf("execute description lacks %q: %s", want, gt.desc)
			}
		}
		if !strings.Contains(gt.schema, `"timeoutMs"`) {
			t.Errorf("execute schema lacks timeoutMs")
		}
		return
	}
	t.Fatal("no execute tool")
}
