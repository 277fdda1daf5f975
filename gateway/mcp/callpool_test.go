package mcp

import (
	"context"
	"encoding/json"
	"testing"
)

// TestRoundTripReusesCallRecords: a request answered in turn reuses its
// call record and reply channel, and a tools/call written whole by its
// caller its params and line buffers (7 allocations per tools/call when
// each call made its own record, 4 with records reused, 2 with the buffers
// reused too: the response's line and the id's text). The race detector
// adds allocations and drops pooled items on purpose: there only a looser
// bound holds (8, 6 and 5). A call with a progress callback keeps its own
// record, and what it reports reaches only it.
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
	want := 3.0
	if raceBuild {
		want = 7
	}
	if allocs := testing.AllocsPerRun(300, call); allocs >= want {
		t.Fatalf("%v allocations per tools/call; want fewer than %v (the call record, its channel, the params and line buffers reused)", allocs, want)
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
