package front

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

var scanSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__echo","arguments":{"x":[1,2.5e3,-0.1,true,false,null,"\u00e9\n"]},"_meta":{"progressToken":"t"}}}`,
	`{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"name":"n\u0061me"}}`,
	`{"jsonrpc":"2.0","id":9007199254740993,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"x"}`,
	`{"jsonrpc":"2.0","id":null,"method":"notifications/cancelled","params":{"requestId":3}}`,
	`{"jsonrpc":"2.0","id":"sluice-1","result":{"roots":[]}}`,
	`{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`,
	`{"jsonrpc":"2.0","id":1,"me\u0074hod":"a"}`,
	` {"content":[{"type":"text","text":"x","_meta":{}}],"isError":true,"_meta":{"io.modelcontextprotocol/serverInfo":{},"k":[1]},"resultType":"complete"} `,
	`{"content":[{"type":"text","text":1}]}`, `{"content":{}}`, `{"structuredContent":null}`,
	`[1,2]`, `{"a":}`, `{"a":1,}`, `[1,]`, `01`, `-`, `1.`, `1e`, `"\x"`, "\"\x01\"", `{"a":"\ud800"}`,
	`tru`, `nulll`, `{} {}`, `"` + strings.Repeat("[", 5) + `"`, strings.Repeat("[", 1200) + strings.Repeat("]", 1200),
	`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":"s","method":"ping"},{"jsonrpc":"2.0","id":1.5,"method":"ping"}]`,
}

// FuzzHTTPScan: the fast path's scanner accepts exactly the JSON
// encoding/json accepts, reports an object's members as encoding/json
// decodes them, reads a JSON-RPC message only when the SDK's decoder
// reads the same message, and passes a result through only as the SDK's
// conversion of it would answer.
func FuzzHTTPScan(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ok := wholeValue(b, 1<<20)
		if ok != json.Valid(b) {
			t.Fatalf("scanner says valid=%v, encoding/json %v: %q", ok, json.Valid(b), b)
		}
		checkWholeObject(t, b)
		if !ok {
			if _, ok := readMsg(b); ok {
				t.Fatalf("read a message from invalid JSON: %q", b)
			}
			return
		}
		if v[0] == '{' {
			if ms, ok := plainMembers(nil, v); ok {
				var want map[string]json.RawMessage
				if err := json.Unmarshal(v, &want); err != nil {
					t.Fatalf("members of an object encoding/json cannot decode: %v: %q", err, v)
				}
				if len(ms) != len(want) {
					t.Fatalf("%d members, encoding/json %d: %q", len(ms), len(want), v)
				}
				for _, m := range ms {
					if w, ok := want[string(m.name)]; !ok || !bytes.Equal(w, m.value) {
						t.Fatalf("member %q = %q, encoding/json %q: %q", m.name, m.value, w, v)
					}
				}
			}
		}
		if m, ok := readMsg(b); ok {
			got, err := jsonrpc.DecodeMessage(b)
			if err != nil {
				t.Fatalf("read a message the SDK refuses (%v): %q", err, b)
			}
			switch g := got.(type) {
			case *jsonrpc.Request:
				if !m.isReq || g.Method != m.method || g.ID != m.id || !bytes.Equal(g.Params, m.params) {
					t.Fatalf("request read as %+v, the SDK reads %+v: %q", m, g, b)
				}
				if p, ok := readParams(m.params); ok {
					if fp, ok := parseFast(m.params); !ok || fp.name != p.name || !bytes.Equal(fp.args, p.args) || len(fp.meta) != len(p.meta) {
						t.Fatalf("params read as %+v, the stdio path reads %+v (ok %v): %q", p, fp, ok, m.params)
					}
				}
			case *jsonrpc.Response:
				if m.isReq || g.ID != m.id {
					t.Fatalf("response read as %+v, the SDK reads %+v: %q", m, g, b)
				}
			}
		}
		// Every id held for the SDK (httpdup.go) is the id of a request
		// the SDK reads from the body.
		for _, id := range postRequestIDs(b) {
			if !sdkReadsRequestID(b, id) {
				t.Fatalf("held id %v, which the SDK does not read from %q", id.Raw(), b)
			}
		}
		for _, modern := range []bool{false, true} {
			info := []byte(`{"name":"s"}`)
			got, gotOutcome, gotOK := passResult(nil, b, modern, info)
			if !gotOK {
				continue // the SDK's conversion takes it
			}
			want, wantOutcome, wantOK := sdkConverted(b, modern, info)
			if !wantOK || gotOutcome != wantOutcome || !sameJSON(got, want) {
				t.Fatalf("passed through as %s (%s), the SDK's conversion gives %s (%s, ok %v): %q", got, gotOutcome, want, wantOutcome, wantOK, b)
			}
		}
	})
}

// sdkReadsRequestID reports whether the SDK's decoder reads a request
// with id from body (one message or a batch).
func sdkReadsRequestID(body []byte, id jsonrpc.ID) bool {
	msgs := []json.RawMessage{body}
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		msgs = nil // not into body's own bytes
		if json.Unmarshal(body, &msgs) != nil {
			return false
		}
	}
	for _, raw := range msgs {
		if m, err := jsonrpc.DecodeMessage(raw); err == nil {
			if r, ok := m.(*jsonrpc.Request); ok && r.ID == id {
				return true
			}
		}
	}
	return false
}

func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// TestHTTPScanSeeds pins a few verdicts of the scanner.
func TestHTTPScanSeeds(t *testing.T) {
	for _, c := range []struct {
		in   string
		msg  bool
		call string
	}{
		{scanSeeds[0], true, "up__echo"},
		{scanSeeds[1], true, ""},  // escaped name: read by decoding
		{scanSeeds[2], false, ""}, // id beyond float64's integers
		{scanSeeds[3], false, ""}, // the SDK truncates a fractional id
		{scanSeeds[6], false, ""}, // duplicated member
		{scanSeeds[7], false, ""}, // escaped member name
		{strings.Repeat("[", 1200) + strings.Repeat("]", 1200), false, ""},
	} {
		m, ok := readMsg([]byte(c.in))
		if ok != c.msg {
			t.Errorf("readMsg(%.40q) ok = %v, want %v", c.in, ok, c.msg)
			continue
		}
		if c.call != "" {
			p, ok := readParams(m.params)
			if !ok || p.name != c.call {
				t.Errorf("readParams(%.40q) = %q %v, want %q", c.in, p.name, ok, c.call)
			}
		}
	}
	if p, ok := readParams([]byte(`{"name":"n\u0061me"}`)); !ok || p.name != "name" {
		t.Errorf("escaped tool name read as %q %v", p.name, ok)
	}
}

// checkWholeObject: wholeObject validates b as wholeValue does, at every
// depth bound the frame filter could use, and reports an object's members
// as members does.
func checkWholeObject(t *testing.T, b []byte) {
	t.Helper()
	for _, depth := range []int{0, 1, 2, 3, maxDepth - 1} {
		want, wantOK := wholeValue(b, depth)
		var room [2]member
		got, ms, ok := wholeObject(room[:0], b, depth)
		if ok != wantOK || !bytes.Equal(got, want) {
			t.Fatalf("depth %d: wholeObject %q %v, wholeValue %q %v: %q", depth, got, ok, want, wantOK, b)
		}
		var wantMs []member
		if ok && want[0] == '{' {
			wantMs, _ = members(nil, want)
		}
		if len(ms) != len(wantMs) {
			t.Fatalf("depth %d: %d members, members reports %d: %q", depth, len(ms), len(wantMs), b)
		}
		for i := range ms {
			if !bytes.Equal(ms[i].name, wantMs[i].name) || ms[i].escaped != wantMs[i].escaped || !bytes.Equal(ms[i].value, wantMs[i].value) {
				t.Fatalf("depth %d: member %d %+v, members reports %+v: %q", depth, i, ms[i], wantMs[i], b)
			}
		}
	}
}

// wholeObject on the scanner's seeds, every prefix of them and every
// one-byte change to a character that matters to the grammar.
func TestWholeObjectMatchesWholeValue(t *testing.T) {
	seeds := append([]string{
		`{}`, ` { } `, `{"a":1}`, `{"a\\":{"b":[1,{"c":"}"}]},"d" : "e\"f" ,"g":null}`, `{"a":1,"a":2}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{"x":1},"_meta":{"progressToken":1}}}`,
	}, scanSeeds...)
	alphabet := []byte(`{}[]":,\ 0a-.e`)
	n := 0
	for _, s := range seeds {
		b := []byte(s)
		for i := 0; i <= len(b); i++ {
			checkWholeObject(t, b[:i])
			n++
		}
		for i := 0; i < len(b) && i < 200; i++ {
			for _, c := range alphabet {
				m := append([]byte(nil), b...)
				m[i] = c
				checkWholeObject(t, m)
				n++
			}
		}
	}
	if n < 10000 {
		t.Fatalf("only %d inputs", n)
	}
}
