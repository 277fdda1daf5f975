package front

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// quickCall must read a frame exactly as the SDK's decoder does, or leave
// it to the decoder.
func TestQuickCallMatchesTheSDKDecoder(t *testing.T) {
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a","arguments":{"n":1e400}}}`, true},
		{` { "params" : {"name":"a"} , "method":"tools/call", "id":"x-1", "jsonrpc":"2.0" } `, true},
		{`{"jsonrpc":"2.0","id":-42,"method":"tools/call","params":{}}`, true},
		{`{"jsonrpc":"2.0","id":123456789012345,"method":"tools/call","params":{}}`, true},
		{`{"jsonrpc":"2.0","id":1234567890123456,"method":"tools/call","params":{}}`, false}, // past float64's exact integers
		{`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{}}`, false},
		{`{"jsonrpc":"2.0","id":1e2,"method":"tools/call","params":{}}`, false},
		{`{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{}}`, false},
		{`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{}}`, false},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{}}`, false},                  // a notification
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, false},           // another method
		{`{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{}}`, false},          // escaped
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]}`, false},           // not an object
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, false},                       // no params
		{`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{}}`, false},    // duplicate
		{`{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{}}`, false},           // case
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{},"extra":1}`, false}, // unknown member
		{`{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{}}`, false},           // version
		{`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}]`, false},         // batch
		{deep(996), true},  // 999 levels: the SDK's decoder reads it
		{deep(997), false}, // 1000 levels: the SDK's decoder refuses it
	} {
		req, ok := quickCall([]byte(tc.line))
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.line, ok, tc.ok)
			continue
		}
		if ok {
			sameAsSDK(t, []byte(tc.line), req)
		}
	}
}

func sameAsSDK(t *testing.T, line []byte, req *jsonrpc.Request) {
	t.Helper()
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		t.Fatalf("%s: quickCall read what the SDK refuses: %v", line, err)
	}
	want, isReq := msg.(*jsonrpc.Request)
	if !isReq || want.ID != req.ID || want.Method != req.Method || string(want.Params) != string(req.Params) {
		t.Fatalf("%s:\n quick %+v %s\n sdk   %+v %s", line, req.ID, req.Params, msg, want.Params)
	}
}

// parseFast reads params as encoding/json would, or refuses them.
func TestParseFastMatchesDecoding(t *testing.T) {
	for _, tc := range []struct {
		params string
		ok     bool
	}{
		{`{"name":"echo","arguments":{"text":"x"}}`, true},
		{`{"arguments":{"a":[1,{"b":"}"}]}, "name" : "e\u0063ho"}`, true},
		{`{"name":"echo","_meta":{"progressToken":5,"key":{"x":"y"}}}`, true},
		// An escaped _meta name is left to the SDK's decoding.
		{`{"name":"echo","_meta":{"progressToken":5,"k\u0065y":{"x":"y"}}}`, false},
		{"{\"name\":\"echo\",\"_meta\":{\"caf\xc3\xa9\":1}}", true},
		{"{\"name\":\"echo\",\"_meta\":{\"bad\xff\":1}}", false},
		{`{"name":"echo","_meta":{"big":1e999}}`, false},
		{`{"name":"echo","_meta":{"a":1,"a":2}}`, false},
		{`{"name":"echo","name":"other"}`, false},
		{`{"name":"echo","Name":"other"}`, false},
		{`{"name":"echo","task":{}}`, false},
		{`{"name":"","arguments":{}}`, false},
		{`{"name":5}`, false},
		{`{"name":"echo","_meta":[]}`, false},
	} {
		p, ok := parseFast(json.RawMessage(tc.params))
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.params, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		var want struct {
			Name      string                     `json:"name"`
			Arguments json.RawMessage            `json:"arguments"`
			Meta      map[string]json.RawMessage `json:"_meta"`
		}
		if err := json.Unmarshal([]byte(tc.params), &want); err != nil {
			t.Fatal(err)
		}
		if p.name != want.Name || string(p.args) != string(want.Arguments) || !reflect.DeepEqual(p.metaMap(), want.Meta) {
			t.Errorf("%s: got %q %s %v, want %q %s %v", tc.params, p.name, p.args, p.metaMap(), want.Name, want.Arguments, want.Meta)
		}
	}
}

// The member walker agrees with encoding/json on every valid object.
func TestEachMemberMatchesDecoding(t *testing.T) {
	for _, obj := range []string{
		`{}`, ` { } `, `{"a":1}`, `{"a":"}","b":[1,2,{"c":"]"}],"d":{"e":null}}`,
		"{\"a\" :\t\"x\\\"y\" ,\n\"b\": true}", `{"a":-1.5e+3,"b":false}`,
	} {
		got := map[string]json.RawMessage{}
		if !eachMember([]byte(obj), func(k, v []byte) bool {
			var key string
			if err := json.Unmarshal(k, &key); err != nil {
				t.Fatalf("%s: key %s", obj, k)
			}
			got[key] = append(json.RawMessage(nil), v...)
			return true
		}) {
			t.Fatalf("%s: walk refused", obj)
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(obj), &want); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %v vs %v", obj, got, want)
		}
		for k, v := range want {
			if strings.TrimSpace(string(got[k])) != string(v) {
				t.Errorf("%s: %s = %s, want %s", obj, k, got[k], v)
			}
		}
	}
	for _, notObj := range []string{`[]`, `"s"`, `1`, `null`} {
		if eachMember([]byte(notObj), func(k, v []byte) bool { return true }) {
			t.Errorf("%s: walked as an object", notObj)
		}
	}
}

// FuzzQuickCall: for any valid JSON line, quickCall either leaves it to
// the SDK or reads exactly what the SDK's decoder reads; parseFast never
// disagrees with encoding/json on what it accepts.
func FuzzQuickCall(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`,
		`{"jsonrpc":"2.0","id":"q","method":"tools/call","params":{"name":"e","_meta":{"progressToken":"t"}}}`,
		`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"a\u00e9","arguments":null}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if !json.Valid(line) {
			return
		}
		req, ok := quickCall(line)
		if !ok {
			return
		}
		sameAsSDK(t, line, req)
		if p, ok := parseFast(req.Params); ok {
			var want struct {
				Name string `json:"name"`
			}
			if err := json.Unmarshal(req.Params, &want); err != nil || want.Name != p.name {
				t.Fatalf("%s: name %q, encoding/json %q (%v)", req.Params, p.name, want.Name, err)
			}
		}
	})
}

// encodeResult writes the bytes the SDK's connection writes for the same
// response, or leaves the response to it.
func TestEncodeResultMatchesTheSDK(t *testing.T) {
	results := []string{
		`{"content":[]}`,
		"{ \"content\" : [ {\"type\":\"text\", \"text\":\"a  b\\\" <x> & \\n\"} ],\n\t\"isError\":true }",
		`{"structuredContent":{"n":12345678901234567890,"f":1.50,"s":"\u00e9\u2028"}}`,
	}
	ids := []any{int64(7), int64(-3), "req-1", `a"b`, "é"}
	for _, r := range results {
		for _, raw := range ids {
			id, err := jsonrpc.MakeID(raw)
			if err != nil {
				if n, isInt := raw.(int64); isInt {
					id, err = jsonrpc.MakeID(float64(n))
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			resp := &jsonrpc.Response{ID: id, Result: json.RawMessage(r)}
			want, err := jsonrpc.EncodeMessage(resp)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := encodeResult(resp)
			if !ok {
				if s, isStr := raw.(string); isStr && s != "req-1" {
					continue // an id that needs escapes: left to the SDK
				}
				t.Fatalf("%v %s: not encoded", raw, r)
			}
			if string(got) != string(want)+"\n" {
				t.Errorf("%v %s:\n got  %s want %s", raw, r, got, want)
			}
		}
	}
	if _, ok := encodeResult(&jsonrpc.Response{Result: json.RawMessage(`{"a":`)}); ok {
		t.Error("invalid JSON encoded")
	}
	if _, ok := encodeResult(&jsonrpc.Response{Error: &jsonrpc.Error{Code: 1}}); ok {
		t.Error("an error response is the SDK's to encode")
	}
}

// deep is a tools/call whose arguments nest n arrays in one object:
// n+3 levels in all.
func deep(n int) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}}}`
}

// FuzzEncodeResult: a response the fast path encodes itself is byte for
// byte what the SDK's connection writes for it.
func FuzzEncodeResult(f *testing.F) {
	f.Add(int64(7), "", []byte(`{"content":[]}`))
	f.Add(int64(0), "req-1", []byte("{ \"a\" : [ \"x  y\\\" <z>\", 1.50 ],\n\t\"b\":true }"))
	f.Add(int64(-3), "a\"b", []byte(`{"s":"\u00e9\u2028"}`))
	f.Fuzz(func(t *testing.T, n int64, s string, result []byte) {
		if !json.Valid(result) {
			if _, ok := encodeResult(&jsonrpc.Response{Result: result}); ok {
				t.Fatalf("invalid JSON encoded: %q", result)
			}
			return
		}
		var raw any = s
		if s == "" {
			raw = float64(n % (1 << 53)) // as the SDK decodes a number id
		}
		id, err := jsonrpc.MakeID(raw)
		if err != nil {
			return
		}
		resp := &jsonrpc.Response{ID: id, Result: result}
		want, err := jsonrpc.EncodeMessage(resp)
		if err != nil {
			return // the SDK refuses it (a result that is no object ...): nothing to match
		}
		got, ok := encodeResult(resp)
		if !ok {
			return // left to the SDK
		}
		if string(got) != string(want)+"\n" {
			t.Fatalf("id %v, result %q:\n got  %s want %s", raw, result, got, want)
		}
	})
}
