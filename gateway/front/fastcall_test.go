package front

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkConverted is a backend's raw tool result as the SDK path answers it
// (decodeToolResult, then the SDK's encoding, with what the SDK adds for a
// modern request): the oracle of passResult.
func sdkConverted(raw []byte, modern bool, serverInfo []byte) ([]byte, string, bool) {
	res, err := decodeToolResult(raw)
	if err != nil {
		return nil, "", false
	}
	outcome := "ok"
	if res.IsError {
		outcome = "tool_error"
	}
	if modern {
		if res.Meta == nil {
			res.Meta = mcp.Meta{}
		}
		res.Meta[mcp.MetaKeyServerInfo] = json.RawMessage(serverInfo)
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, "", false
	}
	if modern {
		out = withMember(out, `"resultType":"complete"`)
	}
	return out, outcome, true
}

// passResult validates a result and reads its members in one pass: what
// it passes through agrees with the SDK's conversion, and a result whose
// top-level names an escape, a duplicate, invalid UTF-8 or bad JSON makes
// ambiguous is left to the SDK.
func TestPassResultOnePass(t *testing.T) {
	info := []byte(`{"name":"s","version":"1"}`)
	passed := []string{
		`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1.0.0"}},"content":[{"text":"bench","type":"text"}],"resultType":"complete"}`,
		` {"content":[{"type":"text","text":"a"}],"isError":true} `,
		`{"content":[],"_meta":{"k":1,"io.modelcontextprotocol/x":2}}`,
		`{}`,
	}
	for _, raw := range passed {
		for _, modern := range []bool{false, true} {
			got, outcome, ok := passResult(nil, []byte(raw), modern, info)
			want, wantOutcome, wantOK := sdkConverted([]byte(raw), modern, info)
			if !ok || !wantOK || outcome != wantOutcome || !sameJSON(got, want) {
				t.Errorf("passResult(%s, modern %v) = %s (%s, ok %v), the SDK gives %s (%s, ok %v)", raw, modern, got, outcome, ok, want, wantOutcome, wantOK)
			}
		}
	}
	refused := []string{
		`{"content":[],"content":[{"type":"text","text":"a"}]}`,
		`{"cont\u0065nt":[]}`,
		"{\"content\":[],\"\xff\":1}",
		`{"content":[]`,
		`{"content":[]} x`,
		`["content"]`,
		`{"content":[{"type":"text","text":"a"}],"extra":1}`,
	}
	for _, raw := range refused {
		if got, _, ok := passResult(nil, []byte(raw), false, info); ok {
			t.Errorf("passResult(%q) passed %s through; want it left to the SDK", raw, got)
		}
	}
}
