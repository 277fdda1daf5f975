//go:build unix

package front

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestLentInputRequiredAnsweredWhenNotHandedOver: an upstream
// input_required result on loan that the fast path cannot hand to the SDK
// (stdin reached its end meanwhile, so the frame cannot be injected) is
// answered by the SDK path's rules from a copy: the answer equals that of
// a backend that lends nothing, not one read from the bytes given back.
func TestLentInputRequiredAnsweredWhenNotHandedOver(t *testing.T) {
	const ask = `{"resultType":"input_required","inputRequests":{"q1":{"method":"elicitation/create","params":{"mode":"form","message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}},"requestState":"st-1"}`
	answer := func(b *fakeBackend) string {
		b.setItems(KindTools, toolItem("up", "ask", "Asks."))
		f, err := newFront(b, &Options{Mode: ModeFlat, Logger: quietLogger(), NoSignals: true})
		if err != nil {
			t.Fatal(err)
		}
		handed := false
		q := &fastCall{name: "up__ask", capability: "up__ask", rid: "r-1", handOver: handOverFunc(func(json.RawMessage) bool {
			handed = true
			return false // as when the SDK's pipe is closed
		})}
		var resp jsonrpc.Response
		if f.answerFast(context.Background(), q, nil, &resp) || !handed {
			t.Fatalf("answerFast handed the call over (%v) or never tried (%v)", !handed, handed)
		}
		if resp.Error != nil {
			t.Fatalf("answered with an error: %v", resp.Error)
		}
		return string(resp.Result)
	}
	plain := newFake()
	plain.call = func(context.Context, CallRequest, Peer) (json.RawMessage, error) { return json.RawMessage(ask), nil }
	want := answer(plain)
	var l lender
	lent := newFake()
	lent.call = plain.call
	got := answer(l.wrap(lent))
	if got != want {
		t.Errorf("answered from a result given back:\n got  %s\n want %s", got, want)
	}
	l.check(t)
}
