package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// TestMRTR: a modern input_required result is answered through OnRequest
// and the request retried under a new id with inputResponses and the exact
// requestState; a later round without requestState sends none; numbers in
// the arguments and in the answers keep their text; another request made
// meanwhile carries nothing of the flow.
func TestMRTR(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	opts := &Options{OnRequest: func(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		asked = append(asked, method+" "+string(member(params, "message")))
		mu.Unlock()
		if method == "elicitation/create" {
			return json.RawMessage(`{"action":"accept","content":{"n":98765432109876543210}}`), nil
		}
		return nil, ErrMethodNotFound
	}}
	c, f := newFake(t, opts, modernServer(func(f *fake, m Message) {
		switch m.Method {
		case "tools/list":
			f.reply(m, `{"tools":[],"resultType":"complete"}`)
		case "tools/call":
			ir := member(m.Params, "inputResponses")
			switch {
			case string(member(m.Params, "name")) == `"other"`:
				f.reply(m, `{"content":[],"resultType":"complete"}`)
			case ir == nil:
				f.reply(m, `{"resultType":"input_required","inputRequests":{"b":{"method":"roots/list"},"a":{"method":"elicitation/create","params":{"message":"first"}}},"requestState":"{\"opaque\": 1 }"}`)
			case member(ir, "again") == nil:
				f.reply(m, `{"resultType":"input_required","inputRequests":{"again":{"method":"elicitation/create","params":{"message":"second"}}}}`)
			default:
				f.reply(m, `{"content":[{"type":"text","text":"done"}],"resultType":"complete"}`)
			}
		}
	}))
	handshake(t, c)
	if _, err := c.CallTool(ctx10(t), "other", nil, nil); err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(ctx10(t), "ask", json.RawMessage(`{"n":12345678901234567890}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), "done") {
		t.Fatalf("result %s", res)
	}
	calls := f.messages("tools/call")
	if len(calls) != 4 {
		t.Fatalf("%d tools/call requests, want 4 (other, ask, two retries)", len(calls))
	}
	first, second, third := calls[1], calls[2], calls[3]
	if string(first.ID) == string(second.ID) || string(second.ID) == string(third.ID) {
		t.Errorf("retries reuse ids: %s %s %s", first.ID, second.ID, third.ID)
	}
	if member(calls[0].Params, "inputResponses") != nil || member(calls[0].Params, "requestState") != nil || member(first.Params, "inputResponses") != nil {
		t.Errorf("a request outside the flow carries it: %s / %s", calls[0].Params, first.Params)
	}
	if got := string(member(second.Params, "requestState")); got != `"{\"opaque\": 1 }"` {
		t.Errorf("requestState echoed as %s", got)
	}
	ir := member(second.Params, "inputResponses")
	if string(member(ir, "b")) != `{"roots":[]}` || string(member(member(member(ir, "a"), "content"), "n")) != "98765432109876543210" {
		t.Errorf("inputResponses %s", ir)
	}
	for _, m := range []Message{second, third} {
		if string(member(member(m.Params, "arguments"), "n")) != "12345678901234567890" || string(member(m.Params, "name")) != `"ask"` {
			t.Errorf("retry lost the original params: %s", m.Params)
		}
		if member(member(m.Params, "_meta"), metaProtocolVersion) == nil {
			t.Errorf("retry without _meta: %s", m.Params)
		}
	}
	if member(third.Params, "requestState") != nil {
		t.Errorf("a round without requestState echoed the old one: %s", third.Params)
	}
	if member(member(third.Params, "inputResponses"), "a") != nil {
		t.Errorf("a later round kept the earlier answers: %s", third.Params)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(asked, "|") != `elicitation/create "first"|roots/list |elicitation/create "second"` {
		t.Errorf("OnRequest saw %q", asked)
	}
}

// TestMRTRRefusals: an input the client cannot give, a server that never
// stops asking, a malformed input_required, and a hook that refuses fail
// the request with a specific error and leave the client ready.
func TestMRTRRefusals(t *testing.T) {
	opts := &Options{OnRequest: func(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
		if method == "elicitation/create" {
			return nil, &RPCError{Code: -1, Message: "user closed the dialog"}
		}
		return nil, ErrMethodNotFound
	}}
	c, f := newFake(t, opts, modernServer(func(f *fake, m Message) {
		switch m.Method {
		case "tools/list":
			f.reply(m, `{"tools":[],"resultType":"complete"}`)
		case "tools/call":
			switch string(member(m.Params, "name")) {
			case `"sample"`:
				f.reply(m, `{"resultType":"input_required","inputRequests":{"s":{"method":"sampling/createMessage","params":{}}}}`)
			case `"forever"`:
				f.reply(m, `{"resultType":"input_required","inputRequests":{"r":{"method":"roots/list"}},"requestState":"x"}`)
			case `"badstate"`:
				f.reply(m, `{"resultType":"input_required","inputRequests":{"r":{"method":"roots/list"}},"requestState":{"x":1}}`)
			case `"elicit"`:
				f.reply(m, `{"resultType":"input_required","inputRequests":{"e":{"method":"elicitation/create","params":{}}}}`)
			}
		}
	}))
	handshake(t, c)
	for _, tc := range []struct {
		tool, code, text string
	}{
		{"sample", string(CodeProtocol), "sampling/createMessage"},
		{"forever", string(CodeProtocol), "still asks for input after 8 retries"},
		{"badstate", string(CodeProtocol), "requestState is not a string"},
		{"elicit", string(CodeAborted), "user closed the dialog"},
	} {
		_, err := c.CallTool(ctx10(t), tc.tool, nil, nil)
		if err == nil || string(CodeOf(err)) != tc.code || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: %v (code %s), want code %s and %q", tc.tool, err, CodeOf(err), tc.code, tc.text)
		}
	}
	var forever int
	for _, m := range f.messages("tools/call") {
		if string(member(m.Params, "name")) == `"forever"` {
			forever++
		}
	}
	if forever != maxInputRounds+1 {
		t.Errorf("forever was sent %d times, want %d", forever, maxInputRounds+1)
	}
	if c.State() != Ready {
		t.Errorf("state %v", c.State())
	}
}
