//go:build unix

package front

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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

// dupWorld is a legacy session on a handler whose up__wait calls run
// until released, with the fast path on or off.
type dupWorld struct {
	a       *httpAgent
	started chan struct{}
	release chan struct{}
	taken   atomic.Int64
	dropped atomic.Int64
}

func newDupWorld(t *testing.T, noFast bool) *dupWorld {
	t.Helper()
	w := &dupWorld{started: make(chan struct{}, 1), release: make(chan struct{})}
	b := newFake()
	b.setItems(KindTools, toolItem("up", "wait", "Waits."), toolItem("up", "echo", "Echoes."))
	b.call = func(ctx context.Context, r CallRequest, _ Peer) (json.RawMessage, error) {
		if r.Capability == "up__wait" {
			w.started <- struct{}{}
			select {
			case <-w.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return textResult(r.Capability), nil
	}
	_, srv := newHTTP(t, b, &Options{Mode: ModeFlat, noFastPath: noFast, fastTaken: &w.taken, postsDropped: &w.dropped})
	w.a = &httpAgent{t: t, url: srv.URL}
	if got := w.a.post(legacyInit, nil); got.status != 200 || w.a.sid == "" {
		t.Fatalf("initialize: %v", got)
	}
	w.a.version = "2025-11-25"
	w.a.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	return w
}

// postFrom sends body on the session from another goroutine with its own
// request id; the answer arrives on the channel.
func (w *dupWorld) postFrom(body string) <-chan answer {
	w.a.rid++
	b := &httpAgent{t: w.a.t, url: w.a.url, sid: w.a.sid, version: w.a.version, rid: w.a.rid - 1}
	done := make(chan answer, 1)
	go func() { done <- b.post(body, nil) }()
	return done
}

// untilFree posts body until the answer is not a refusal of a duplicate
// id (the id is let go once the SDK has written the call's response,
// which a dropped POST's agent never sees) and returns that answer.
func (w *dupWorld) untilFree(body string) answer {
	deadline := time.Now().Add(time.Minute)
	for {
		got := w.a.post(body, nil)
		if got.status != 400 || !strings.Contains(strings.Join(got.events, " "), "duplicate") {
			return got
		}
		if time.Now().After(deadline) {
			w.a.t.Fatalf("the id is still refused a minute after its call ended: %v", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHTTPDroppedPOSTKeepsItsIDInFlight: the agent drops a POST whose call
// the SDK serves; the call goes on, and its id stays in flight until the
// call ends, for the fast path as for the SDK (which refuses the id
// meanwhile). Then the id is free again. The SDK alone answers the same.
func TestHTTPDroppedPOSTKeepsItsIDInFlight(t *testing.T) {
	viaSDK := func(id int, tool string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__%s","arguments":{},"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}`, id, tool)
	}
	viaFast := func(id int, tool string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__%s","arguments":{}}}`, id, tool)
	}
	run := func(t *testing.T, noFast bool) []answer {
		w := newDupWorld(t, noFast)
		req, err := http.NewRequest("POST", w.a.url+MCPPath, strings.NewReader(viaSDK(5, "wait")))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", w.a.sid)
		req.Header.Set("Mcp-Protocol-Version", w.a.version)
		ctx, cancel := context.WithCancel(context.Background())
		gone := make(chan struct{})
		go func() {
			defer close(gone)
			if resp, err := http.DefaultClient.Do(req.WithContext(ctx)); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body) // until the POST is dropped
				resp.Body.Close()
			}
		}()
		<-w.started
		cancel()
		<-gone
		if !noFast {
			// The handler has seen the agent leave (and closed its
			// connection) before the next requests come.
			deadline := time.Now().Add(time.Minute)
			for w.dropped.Load() == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the handler never saw the dropped POST")
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		out := []answer{w.a.post(viaFast(5, "echo"), nil), w.a.post(viaSDK(5, "echo"), nil)}
		close(w.release)
		out = append(out, w.untilFree(viaFast(5, "echo")), w.untilFree(viaSDK(5, "echo")))
		return out
	}
	fast, sdk := run(t, false), run(t, true)
	for i := range fast {
		if !sameAnswer(fast[i], sdk[i]) {
			t.Errorf("answer %d:\nwith the fast path %v\nthe SDK alone     %v", i, fast[i], sdk[i])
		}
	}
	for i, want := range []string{"duplicate in-flight request ID 5", "duplicate in-flight request ID 5", "up__echo", "up__echo"} {
		if got := strings.Join(fast[i].events, "\n"); !strings.Contains(got, want) {
			t.Errorf("answer %d: want %q in\n%v", i, want, fast[i])
		}
	}
}

// TestHTTPDuplicateIDWithAnotherProtocolHeader: while a call holds an id
// on a legacy session, a request with that id sent with another
// MCP-Protocol-Version header (or none, or in a batch, or for another
// method) gets what the SDK alone answers: the refusal of a duplicate
// where the SDK comes as far as its check of ids, the SDK's own refusal
// of the header, batch or method where it does not.
func TestHTTPDuplicateIDWithAnotherProtocolHeader(t *testing.T) {
	echo := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__echo","arguments":{}}}`, id)
	}
	variants := []struct {
		name, header, body string // header "-" removes it
		dup                bool
	}{
		{"older", "2025-06-18", echo(0), true},
		{"oldest", "2024-11-05", echo(0), true},
		{"none", "-", echo(0), true},
		{"batch", "-", "[" + echo(0) + "]", true},
		{"batch-2025-06-18", "2025-06-18", "[" + echo(0) + "]", false},
		{"ping", "2025-06-18", `{"jsonrpc":"2.0","id":0,"method":"ping"}`, true},
		{"unknown-method", "2025-06-18", `{"jsonrpc":"2.0","id":0,"method":"no/such"}`, false},
		{"params-missing", "2025-06-18", `{"jsonrpc":"2.0","id":0,"method":"tools/call"}`, false},
		{"modern", modernVersion, echo(0), false},
		{"future", "2099-01-01", echo(0), false},
		{"unsupported", "1999-01-01", echo(0), false},
		{"meta-version", "2025-06-18", `{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"up__echo","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}}}`, false},
	}
	run := func(t *testing.T, noFast bool) []answer {
		w := newDupWorld(t, noFast)
		var out []answer
		for i, v := range variants {
			id := 20 + i
			first := w.postFrom(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__wait","arguments":{}}}`, id))
			<-w.started
			body := strings.Replace(v.body, `"id":0`, fmt.Sprintf(`"id":%d`, id), 1)
			out = append(out, w.a.post(body, func(h http.Header) {
				if v.header == "-" {
					h.Del("Mcp-Protocol-Version")
				} else {
					h.Set("Mcp-Protocol-Version", v.header)
				}
			}))
			w.release <- struct{}{}
			<-first
		}
		if !noFast && w.taken.Load() != int64(len(variants)) {
			t.Errorf("the fast path took %d of the %d holding calls", w.taken.Load(), len(variants))
		}
		return out
	}
	fast, sdk := run(t, false), run(t, true)
	for i, v := range variants {
		if !sameAnswer(fast[i], sdk[i]) {
			t.Errorf("%s:\nwith the fast path %v\nthe SDK alone     %v", v.name, fast[i], sdk[i])
		}
		dup := fast[i].status == 400 && strings.Contains(strings.Join(fast[i].events, " "), "duplicate in-flight request ID")
		if dup != v.dup {
			t.Errorf("%s: refused as a duplicate: %v, want %v: %v", v.name, dup, v.dup, fast[i])
		}
	}
}
