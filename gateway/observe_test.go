package gateway

import (
	"context"
	"encoding/json"
	"testing"

	"sluice/gateway/trace"
)

// TestTraceparentGoesUpstream: the span context in ctx is added to the
// upstream request's _meta, keeping what _meta already held.
func TestTraceparentGoesUpstream(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := trace.Extract(context.Background(), tp, "k=v")
	out := withTraceMeta(ctx, json.RawMessage(`{"progressToken":7}`))
	var m map[string]json.RawMessage
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err, string(out))
	}
	if string(m["traceparent"]) != `"`+tp+`"` || string(m["tracestate"]) != `"k=v"` || string(m["progressToken"]) != "7" {
		t.Fatalf("_meta: %s", out)
	}
	// No span: _meta is passed on as it was, byte for byte.
	in := json.RawMessage(`{"a": 1}`)
	if got := withTraceMeta(context.Background(), in); string(got) != string(in) {
		t.Fatalf("without a span: %s", got)
	}
	if got := withTraceMeta(context.Background(), nil); got != nil {
		t.Fatalf("nil _meta became %s", got)
	}
}
