//go:build unix

package front

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
)

// TestHTTPDuplicateInFlightIDsAcrossPaths: on one legacy session a
// request id in flight is refused for a second request whichever path
// serves each of the two (the SDK's handler or the tools/call fast path),
// with the answer the SDK gives a duplicate of its own; once the first is
// answered the id is free again. The SDK alone (fast path off) answers
// the same conversation the same way.
func TestHTTPDuplicateInFlightIDsAcrossPaths(t *testing.T) {
	// viaSDK is a call the fast path leaves to the SDK (a client identity
	// in _meta is the SDK's to read); the other goes the fast path.
	viaSDK := func(id int, tool string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__%s","arguments":{},"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}`, id, tool)
	}
	viaFast := func(id int, tool string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__%s","arguments":{}}}`, id, tool)
	}
	run := func(t *testing.T, noFast bool) (answers []answer, taken int64) {
		b := newFake()
		b.setItems(KindTools, toolItem("up", "wait", "Waits."), toolItem("up", "echo", "Echoes."))
		started, release := make(chan struct{}, 1), make(chan struct{})
		b.call = func(ctx context.Context, r CallRequest, _ Peer) (json.RawMessage, error) {
			if r.Capability == "up__wait" {
				started <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return textResult(r.Capability), nil
		}
		var n atomic.Int64
		_, srv := newHTTP(t, b, &Options{Mode: ModeFlat, noFastPath: noFast, fastTaken: &n})
		a := &httpAgent{t: t, url: srv.URL}
		if got := a.post(legacyInit, nil); got.status != 200 || a.sid == "" {
			t.Fatalf("initialize: %v", got)
		}
		a.version = "2025-11-25"
		a.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
		// first: the call that holds the id (runs until released); then
		// the duplicate, then the same id once the first is answered.
		pair := func(id int, first, dup, again func(int, string) string) {
			a.rid++ // the first POST's X-Request-ID, sent from a goroutine
			firstDone := make(chan answer, 1)
			go func() {
				b := &httpAgent{t: t, url: a.url, sid: a.sid, version: a.version, rid: a.rid - 1}
				firstDone <- b.post(first(id, "wait"), nil)
			}()
			<-started
			answers = append(answers, a.post(dup(id, "echo"), nil))
			release <- struct{}{}
			answers = append(answers, <-firstDone)
			answers = append(answers, a.post(again(id, "echo"), nil))
		}
		pair(7, viaSDK, viaFast, viaFast)   // the SDK's call holds 7
		pair(8, viaFast, viaSDK, viaSDK)    // a fast-path call holds 8
		pair(9, viaSDK, viaSDK, viaSDK)     // the SDK's own check
		pair(10, viaFast, viaFast, viaFast) // the fast path's own check
		return answers, n.Load()
	}
	fast, taken := run(t, false)
	sdk, _ := run(t, true)
	for i := range fast {
		if !sameAnswer(fast[i], sdk[i]) {
			t.Errorf("answer %d:\nwith the fast path %v\nthe SDK alone     %v", i, fast[i], sdk[i])
		}
	}
	for i, want := range []string{"duplicate in-flight request ID 7", `up__wait`, `up__echo`, "duplicate in-flight request ID 8", `up__wait`, `up__echo`,
		"duplicate in-flight request ID 9", `up__wait`, `up__echo`, "duplicate in-flight request ID 10", `up__wait`, `up__echo`} {
		if got := strings.Join(fast[i].events, "\n"); !strings.Contains(got, want) {
			t.Errorf("answer %d: want %q in\n%v", i, want, fast[i])
		}
		if dup := strings.HasPrefix(want, "duplicate"); dup != (fast[i].status == 400) {
			t.Errorf("answer %d: status %d", i, fast[i].status)
		}
	}
	// The fast path took the calls meant for it: 7's retry, 8 and its
	// first POST, 10 and its retry (the refusals are not calls).
	if taken != 4 {
		t.Errorf("the fast path took %d calls, want 4", taken)
	}
}
