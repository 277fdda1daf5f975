package mcp

import (
	"context"
	"encoding/json"
	"testing"
)

// TestRoundTripReusesCallRecords: a request answered in turn reuses its
// call record and reply channel (7 allocations per tools/call when each
// call made its own, 4 when reused; with the race detector, which adds
// allocations and drops some pooled records on purpose, 8 and 6); a call with a progress callback keeps its
// own record, and what it reports reaches only it.
func TestRoundTripReusesCallRecords(t *testing.T) {
	c, _ := benchClient(t)
	defer c.Close()
	ctx := context.Background()
	call := func() {
		if _, err := c.CallTool(ctx, "echo", benchArgs, nil); err != nil {
			t.Fatal(err)
		}
	}
	call()
	if allocs := testing.AllocsPerRun(300, call); allocs >= 7 {
		t.Fatalf("%v allocations per tools/call; want fewer than 7 (the call record and its channel reused)", allocs)
	}
	cl := getCall("tools/call", func(json.RawMessage) {})
	cl.token = `"p1"`
	putCall(cl)
	if cl.token != `"p1"` || cl.onProgress == nil {
		t.Fatal("a record with a progress token was reset for reuse")
	}
	cl = getCall("tools/call", nil)
	cl.ch <- reply{}
	putCall(cl)
	if len(cl.ch) != 1 || cl.method != "tools/call" {
		t.Fatal("a record with an undelivered reply was reset for reuse")
	}
}
