package gateway

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestJSONToolResultIsUTF8: a raw value holding bytes that are not UTF-8
// (a schema read from a damaged cache) never reaches the agent as such,
// neither in the text nor in structuredContent; they read as U+FFFD in
// both, and the answer stays one JSON value.
func TestJSONToolResultIsUTF8(t *testing.T) {
	v := struct {
		Schema json.RawMessage `json:"inputSchema"`
		Name   string          `json:"name"`
	}{Schema: json.RawMessage("{\"description\":\"bad \xff\xfe \xed\xa0\x80 end\"}"), Name: "n\xc3"}
	out, err := jsonToolResult(v, false)
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(out) || !json.Valid(out) {
		t.Fatalf("answer is not UTF-8 JSON: %q", out)
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		Structured struct {
			Schema struct {
				Description string `json:"description"`
			} `json:"inputSchema"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if got, want := res.Structured.Schema.Description, "bad \ufffd \ufffd end"; got != want {
		t.Fatalf("structured description %q, want %q", got, want)
	}
	if len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, "bad \ufffd \ufffd end") {
		t.Fatalf("text: %+v", res.Content)
	}
}
