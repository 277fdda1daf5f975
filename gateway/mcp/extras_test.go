package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"time"
)

func TestExtrasModern(t *testing.T) {
	c, f := newFake(t, nil, modernServer(func(f *fake, m Message) {
		switch m.Method {
		case "tools/list":
			f.reply(m, `{"tools":[],"resultType":"complete"}`)
		case "tools/call":
			if member(m.Params, "inputResponses") == nil {
				f.reply(m, `{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{}}},"requestState":"s1"}`)
				return
			}
			f.reply(m, `{"content":[{"type":"text","text":"done"}],"resultType":"complete"}`)
		}
	}))
	handshake(t, c)
	x := Extras{Method: "tools/call", InputRequired: true, ClientCapabilities: json.RawMessage(`{"elicitation":{}}`),
		Meta: json.RawMessage(`{"io.modelcontextprotocol/logLevel":"info"}`)}
	ctx := WithExtras(ctx10(t), x)

	// input_required comes back as is; the agent's capabilities and the
	// extra _meta members are sent.
	res, err := c.CallTool(ctx, "ask", json.RawMessage(`{"n":12345678901234567890}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(member(res, "resultType")) != `"input_required"` || string(member(res, "requestState")) != `"s1"` {
		t.Fatalf("result %s", res)
	}
	sent := f.await("tools/call")
	meta := member(sent.Params, "_meta")
	if string(member(meta, metaClientCapabilities)) != `{"elicitation":{}}` || string(member(meta, "io.modelcontextprotocol/logLevel")) != `"info"` ||
		string(member(meta, metaProtocolVersion)) != `"2026-07-28"` {
		t.Errorf("_meta %s", meta)
	}
	if string(member(member(sent.Params, "arguments"), "n")) != "12345678901234567890" {
		t.Errorf("arguments re-encoded: %s", sent.Params)
	}

	// The retry carries inputResponses and requestState in params.
	x.Params = json.RawMessage(`{"inputResponses":{"a":{"action":"accept"}},"requestState":"s1","_meta":{"ignored":true}}`)
	res, err = c.CallTool(WithExtras(ctx10(t), x), "ask", nil, nil)
	if err != nil || string(member(res, "resultType")) != `"complete"` {
		t.Fatalf("retry: %v %s", err, res)
	}
	calls := f.messages("tools/call")
	last := calls[len(calls)-1].Params
	if string(member(last, "requestState")) != `"s1"` || string(member(member(member(last, "inputResponses"), "a"), "action")) != `"accept"` ||
		member(member(last, "_meta"), "ignored") != nil {
		t.Errorf("retry params %s", last)
	}

	// Params and InputRequired are limited to Method; capabilities are not.
	if _, err := c.ListTools(WithExtras(ctx10(t), x)); err != nil {
		t.Fatal(err)
	}
	lists := f.messages("tools/list")
	lp := lists[len(lists)-1].Params
	if member(lp, "inputResponses") != nil || string(member(member(lp, "_meta"), metaClientCapabilities)) != `{"elicitation":{}}` {
		t.Errorf("tools/list params %s", lp)
	}

	// Without the flag input_required stays a protocol error.
	_, err = c.CallTool(ctx10(t), "ask", nil, nil)
	mustCode(t, err, CodeProtocol)
}

func TestExtrasLegacyIgnoresMeta(t *testing.T) {
	c, f := newFake(t, nil, legacyServer("2025-11-25", func(f *fake, m Message) {
		if m.Method == "tools/call" {
			f.reply(m, `{"content":[]}`)
		}
	}))
	handshake(t, c)
	ctx := WithExtras(ctx10(t), Extras{ClientCapabilities: json.RawMessage(`{"sampling":{}}`), Meta: json.RawMessage(`{"k":1}`), Params: json.RawMessage(`{"requestState":"x"}`)})
	if _, err := c.CallTool(ctx, "t", nil, nil); err != nil {
		t.Fatal(err)
	}
	p := f.await("tools/call").Params
	if member(p, "_meta") != nil || string(member(p, "requestState")) != `"x"` {
		t.Errorf("legacy params %s", p)
	}
}

// TestExtrasOrdered: an ordered call's response waits for the
// notifications that arrived before it.
func TestExtrasOrdered(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	opts := &Options{OnNotification: func(method string, _ json.RawMessage) {
		time.Sleep(20 * time.Millisecond) // a relay forwarding the message
		mu.Lock()
		seen = append(seen, method)
		mu.Unlock()
	}}
	c, _ := newFake(t, opts, legacyServer("2025-11-25", func(f *fake, m Message) {
		if m.Method == "tools/call" {
			f.send(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"a"}}`)
			f.send(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"b"}}`)
			f.reply(m, `{"content":[]}`)
		}
	}))
	handshake(t, c)
	if _, err := c.CallTool(WithExtras(context.Background(), Extras{Ordered: true}), "t", nil, &CallOptions{Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("response delivered before its notifications: saw %v", seen)
	}
}

// The one-pass params of a relayed modern request (relayedMeta) carry
// exactly the members the general merge (withMeta, then applyExtras) sends.
func TestRelayedMetaMatchesTheGeneralMerge(t *testing.T) {
	c, _ := newFake(t, nil, modernServer(func(f *fake, m Message) {
		if m.Method == "tools/list" {
			f.reply(m, `{"tools":[],"resultType":"complete"}`)
		}
	}))
	handshake(t, c)
	decode := func(raw json.RawMessage) map[string]any {
		t.Helper()
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		params string
		token  string
		caps   string
	}{
		{"plain", `{"name":"echo","arguments":{"n":12345678901234567890}}`, "", `{"elicitation":{}}`},
		{"progress", `{"name":"echo","arguments":{}}`, `"p7"`, `{}`},
		{"spaced caps", `{"name":"echo","arguments":{"a":[1, 2]}}`, `"p8"`, "{\n \"sampling\": {}\n}"},
		{"leading space", `{ "name":"echo"}`, "", `{"roots":{"listChanged":true}}`},
	} {
		x := &Extras{Method: "tools/call", ClientCapabilities: json.RawMessage(tc.caps), InputRequired: true}
		fast, done, err := c.relayedMeta(nil, "tools/call", json.RawMessage(tc.params), nil, tc.token, x, false)
		if err != nil || !done {
			t.Fatalf("%s: fast path not taken: %v", tc.name, err)
		}
		p, err := c.withMeta(json.RawMessage(tc.params), nil, tc.token)
		if err != nil {
			t.Fatal(err)
		}
		slow, err := c.applyExtras("tools/call", p, x)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(fast) || !reflect.DeepEqual(decode(fast), decode(slow)) {
			t.Errorf("%s:\n fast %s\n slow %s", tc.name, fast, slow)
		}
		// As roundTrip builds it: in the envelope, params CallTool's own
		// (checked), the capabilities seen before or not.
		for range 2 {
			line, done, err := c.relayedMeta(appendEnvelope(nil, "41", "tools/call"), "tools/call", json.RawMessage(tc.params), nil, tc.token, x, true)
			if err != nil || !done {
				t.Fatalf("%s: checked fast path not taken: %v", tc.name, err)
			}
			line = append(line, '}')
			if want := encodeRequest("41", "tools/call", fast); string(line) != string(want) {
				t.Errorf("%s: the line built in one buffer differs:\n got  %s\n want %s", tc.name, line, want)
			}
		}
	}
	// Cases the one pass leaves to the general merge.
	for _, tc := range []struct {
		name   string
		params string
		extra  string
		x      Extras
	}{
		{"caller _meta", `{"name":"e","_meta":{"k":1}}`, "", Extras{ClientCapabilities: json.RawMessage(`{}`)}},
		{"options meta", `{"name":"e"}`, `{"k":1}`, Extras{ClientCapabilities: json.RawMessage(`{}`)}},
		{"extra meta", `{"name":"e"}`, "", Extras{ClientCapabilities: json.RawMessage(`{}`), Meta: json.RawMessage(`{"io.modelcontextprotocol/logLevel":"info"}`)}},
		{"retry params", `{"name":"e"}`, "", Extras{Method: "tools/call", ClientCapabilities: json.RawMessage(`{}`), Params: json.RawMessage(`{"requestState":"s"}`)}},
		{"no caps", `{"name":"e"}`, "", Extras{}},
		{"not an object", `[1]`, "", Extras{ClientCapabilities: json.RawMessage(`{}`)}},
	} {
		if _, done, _ := c.relayedMeta(nil, "tools/call", json.RawMessage(tc.params), json.RawMessage(tc.extra), "", &tc.x, false); done {
			t.Errorf("%s: the one pass must leave this to the general merge", tc.name)
		}
	}
}

// carrierCtx is a caller's own context type carrying Extras (IsExtrasKey).
type carrierCtx struct {
	context.Context
	x Extras
}

func (c *carrierCtx) Value(key any) any {
	if IsExtrasKey(key) {
		return &c.x
	}
	return c.Context.Value(key)
}

// A context of the caller's own that answers the extras key is read as
// WithExtras's, and an inner WithExtras still wins over it.
func TestExtrasFromACarrierContext(t *testing.T) {
	ctx := &carrierCtx{Context: context.Background(), x: Extras{Method: "tools/call", Ordered: true}}
	if x := extrasFrom(ctx); x == nil || x.Method != "tools/call" || !x.Ordered {
		t.Fatalf("extras from the carrier = %+v", x)
	}
	inner := WithExtras(ctx, Extras{Method: "resources/read"})
	if x := extrasFrom(inner); x == nil || x.Method != "resources/read" {
		t.Fatalf("inner extras = %+v", x)
	}
	if IsExtrasKey(struct{}{}) || IsExtrasKey(nil) {
		t.Error("IsExtrasKey takes another key for the extras key")
	}
}
