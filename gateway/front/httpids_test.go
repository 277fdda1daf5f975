//go:build unix

package front

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
)

// TestHTTPNullAndBatchDuplicateIDs: on HTTP, as on stdio, a request whose
// id is null is answered -32600 with id null, whichever path would serve
// it (the tools/call fast path, the SDK, a batch, a stateless modern
// request, a session's initialize); a batch in which two requests share
// an id (7 and 7.0 are one id to the SDK) is refused whole. None of them
// runs anything; a batch whose ids differ only in type (7 and "7") runs.
func TestHTTPNullAndBatchDuplicateIDs(t *testing.T) {
	for _, noFast := range []bool{false, true} {
		name := "fast path on"
		if noFast {
			name = "fast path off"
		}
		t.Run(name, func(t *testing.T) {
			b := newFake()
			b.setItems(KindTools, toolItem("up", "echo", "Echoes."))
			var calls atomic.Int64
			b.call = func(_ context.Context, r CallRequest, _ Peer) (json.RawMessage, error) {
				calls.Add(1)
				return textResult(r.Capability), nil
			}
			_, srv := newHTTP(t, b, &Options{Mode: ModeFlat, noFastPath: noFast})
			fresh := &httpAgent{t: t, url: srv.URL}
			refused := func(what string, got answer, fragment string) {
				t.Helper()
				body := strings.Join(got.events, "\n")
				if got.status != 400 || !strings.HasPrefix(got.head, "application/json") ||
					!strings.Contains(body, `"id":null`) || !strings.Contains(body, `"code":-32600`) || !strings.Contains(body, fragment) {
					t.Errorf("%s: %v, want 400 -32600 with id null and %q", what, got, fragment)
				}
			}
			refused("initialize with id null", fresh.post(strings.Replace(legacyInit, `"id":1`, `"id":null`, 1), nil), "the request id is null")
			if fresh.sid != "" {
				t.Errorf("an initialize with id null opened a session")
			}

			a := &httpAgent{t: t, url: srv.URL}
			if got := a.post(strings.Replace(legacyInit, "2025-11-25", "2025-03-26", 1), nil); got.status != 200 || a.sid == "" {
				t.Fatalf("initialize: %v", got)
			}
			a.version = "2025-03-26" // batches are of 2025-03-26
			a.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
			call := func(id string) string {
				return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"up__echo","arguments":{}}}`
			}
			refused("tools/call", a.post(call("null"), nil), "the request id is null")
			refused("tools/list", a.post(`{"jsonrpc":"2.0","id":null,"method":"tools/list"}`, nil), "the request id is null")
			refused("id member twice, the last null", a.post(`{"jsonrpc":"2.0","id":3,"id":null,"method":"tools/list"}`, nil), "the request id is null")
			refused("batch with a null id", a.post("["+call("4")+","+call("null")+"]", nil), "message 2 of the batch")
			refused("batch with a duplicate id", a.post("["+call("7")+`,{"jsonrpc":"2.0","id":5,"method":"ping"},`+call("7.0")+"]", nil), "used by two requests of this batch")
			refused("batch with a duplicate string id", a.post(`[{"jsonrpc":"2.0","id":"x","method":"ping"},{"jsonrpc":"2.0","id":"x","method":"ping"}]`, nil), "used by two requests of this batch")
			if n := calls.Load(); n != 0 {
				t.Fatalf("%d refused calls ran", n)
			}

			got := a.post("["+call("7")+","+call(`"7"`)+"]", nil)
			if got.status != 200 || len(got.events) != 2 || calls.Load() != 2 {
				t.Fatalf("a batch of ids 7 and \"7\": %v (calls %d)", got, calls.Load())
			}
			// A null inside arguments is no null id.
			if got := a.post(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"up__echo","arguments":{"x":null}}}`, nil); got.status != 200 || calls.Load() != 3 {
				t.Fatalf("a call with a null argument: %v", got)
			}

			m := &httpAgent{t: t, url: srv.URL, version: modernVersion}
			refused("stateless modern request", m.post(`{"jsonrpc":"2.0","id":null,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"`+modernVersion+`"}}}`, nil), "the request id is null")
		})
	}
}
