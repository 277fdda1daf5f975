package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

const defaultsSchema = `{"message":"m","requestedSchema":{"type":"object","properties":{` +
	`"name":{"type":"string","default":"John Doe"},` +
	`"age":{"type":"integer","default":30},` +
	`"big":{"type":"integer","default":12345678901234567890},` +
	`"status":{"type":"string","enum":["a","b"],"default":"a"},` +
	`"ok":{"type":"boolean","default":false},` +
	`"plain":{"type":"string"}}}}`

// TestElicitDefaults: an accepted form answer is completed with the
// schema's defaults for the fields it leaves out; given fields, other
// actions, URL mode and unreadable input stay as they are.
func TestElicitDefaults(t *testing.T) {
	tests := []struct {
		name, params, res string
		want              map[string]string // content member -> text; nil = res unchanged
	}{
		{"fills omitted", defaultsSchema, `{"action":"accept","content":{"name":"Ann"}}`,
			map[string]string{"name": `"Ann"`, "age": "30", "big": "12345678901234567890", "status": `"a"`, "ok": "false"}},
		{"no content", defaultsSchema, `{"action":"accept"}`,
			map[string]string{"name": `"John Doe"`, "age": "30", "big": "12345678901234567890", "status": `"a"`, "ok": "false"}},
		{"all given", defaultsSchema, `{"action":"accept","content":{"name":"x","age":1,"big":2,"status":"b","ok":true}}`, nil},
		{"declined", defaultsSchema, `{"action":"decline"}`, nil},
		{"cancelled", defaultsSchema, `{"action":"cancel"}`, nil},
		{"url mode", `{"mode":"url","url":"https://x","requestedSchema":{"properties":{"a":{"default":1}}}}`, `{"action":"accept"}`, nil},
		{"no defaults", `{"requestedSchema":{"properties":{"a":{"type":"string"}}}}`, `{"action":"accept","content":{}}`, nil},
		{"bad params", `[1]`, `{"action":"accept"}`, nil},
		{"bad content", defaultsSchema, `{"action":"accept","content":[1]}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := withElicitDefaults(json.RawMessage(tt.params), json.RawMessage(tt.res))
			if tt.want == nil {
				if string(got) != tt.res {
					t.Fatalf("changed %s to %s", tt.res, got)
				}
				return
			}
			if string(member(got, "action")) != `"accept"` {
				t.Fatalf("action lost: %s", got)
			}
			var content map[string]json.RawMessage
			if err := json.Unmarshal(member(got, "content"), &content); err != nil {
				t.Fatalf("content of %s: %v", got, err)
			}
			if len(content) != len(tt.want) {
				t.Errorf("content %s, want %d members", member(got, "content"), len(tt.want))
			}
			for k, v := range tt.want {
				if string(content[k]) != v {
					t.Errorf("%s = %s, want %s", k, content[k], v)
				}
			}
		})
	}
}

// TestElicitDefaultsApplied: the defaults reach the server both in the
// reply to a legacy server request and in a 2026-07-28 retry's
// inputResponses.
func TestElicitDefaultsApplied(t *testing.T) {
	accept := &Options{OnRequest: func(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
		if method != "elicitation/create" {
			return nil, ErrMethodNotFound
		}
		return json.RawMessage(`{"action":"accept","content":{"plain":"p"}}`), nil
	}}
	check := func(t *testing.T, res json.RawMessage) {
		t.Helper()
		c := member(res, "content")
		if string(member(c, "plain")) != `"p"` || string(member(c, "name")) != `"John Doe"` || string(member(c, "big")) != "12345678901234567890" {
			t.Fatalf("answer %s", res)
		}
	}
	t.Run("legacy", func(t *testing.T) {
		c, f := newFake(t, accept, legacyServer("2025-11-25", nil))
		handshake(t, c)
		f.send(`{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":` + defaultsSchema + `}`)
		deadline := time.After(10 * time.Second)
		for {
			f.mu.Lock()
			var reply *Message
			for i := range f.got {
				if f.got[i].Kind == KindResponse && string(f.got[i].ID) == `"e1"` {
					reply = &f.got[i]
				}
			}
			f.mu.Unlock()
			if reply != nil {
				check(t, reply.Result)
				return
			}
			select {
			case <-f.gotCh:
			case <-deadline:
				t.Fatal("no reply to the elicitation")
			}
		}
	})
	t.Run("modern", func(t *testing.T) {
		c, f := newFake(t, accept, modernServer(func(f *fake, m Message) {
			switch m.Method {
			case "tools/list":
				f.reply(m, `{"tools":[]}`)
			case "tools/call":
				if member(m.Params, "inputResponses") == nil {
					f.reply(m, `{"resultType":"input_required","inputRequests":{"e":{"method":"elicitation/create","params":`+defaultsSchema+`}}}`)
					return
				}
				f.reply(m, `{"content":[]}`)
			}
		}))
		handshake(t, c)
		if _, err := c.CallTool(ctx10(t), "ask", nil, nil); err != nil {
			t.Fatal(err)
		}
		calls := f.messages("tools/call")
		if len(calls) != 2 {
			t.Fatalf("%d calls", len(calls))
		}
		check(t, member(member(calls[1].Params, "inputResponses"), "e"))
	})
}

// FuzzElicitDefaults: any params and answer leave the answer unchanged or
// make it a JSON object that is still accepted and keeps every field the
// answer gave, with the same value (numbers by their text).
func FuzzElicitDefaults(f *testing.F) {
	f.Add(defaultsSchema, `{"action":"accept","content":{"name":"Ann"}}`)
	f.Add(`{"requestedSchema":{"properties":{"a":{"default":[1,{"b":null}]}}}}`, `{"action":"accept","content":null}`)
	f.Add(`{"mode":"form","requestedSchema":{"properties":{"a":{"default":"\u00e9"}}}}`, `{"action":"accept","content":{"b": 1.50}}`)
	f.Fuzz(func(t *testing.T, params, res string) {
		out := withElicitDefaults(json.RawMessage(params), json.RawMessage(res))
		if string(out) == res {
			return
		}
		var r map[string]json.RawMessage
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("output %q is not a JSON object: %v", out, err)
		}
		if string(r["action"]) != `"accept"` {
			t.Fatalf("action changed: %s", out)
		}
		var before, given, after map[string]json.RawMessage
		json.Unmarshal(json.RawMessage(res), &before)
		json.Unmarshal(before["content"], &given)
		if err := json.Unmarshal(r["content"], &after); err != nil {
			t.Fatalf("content of %s: %v", out, err)
		}
		for k, v := range given {
			if w, ok := after[k]; !ok || !sameJSON(v, w) {
				t.Fatalf("field %q changed: %s -> %s", k, res, out)
			}
		}
	})
}

// sameJSON compares two JSON texts as values, numbers by their text.
func sameJSON(a, b json.RawMessage) bool {
	decode := func(m json.RawMessage) (any, error) {
		d := json.NewDecoder(bytes.NewReader(m))
		d.UseNumber()
		var v any
		err := d.Decode(&v)
		return v, err
	}
	x, err1 := decode(a)
	y, err2 := decode(b)
	return err1 == nil && err2 == nil && reflect.DeepEqual(x, y)
}
