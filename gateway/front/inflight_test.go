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

// TestStdioBoundsRequestsInFlight: an agent that sends calls faster than
// they finish (or never reads its answers) cannot make the gateway hold an
// unbounded number of them: past maxInFlight unanswered requests on one
// connection a request is answered at once with an error naming the
// limit, and once answers went out requests are taken again. Both the
// fast path (flat tools) and the SDK's path (the gateway's call tool).
func TestStdioBoundsRequestsInFlight(t *testing.T) {
	for _, c := range []struct {
		mode Mode
		call func(id int) string
	}{
		{ModeFlat, func(id int) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__wait","arguments":{}}}`, id)
		}},
		{ModeGateway, func(id int) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"call","arguments":{"capability":"up__wait","arguments":{}}}}`, id)
		}},
	} {
		t.Run(string(c.mode), func(t *testing.T) {
			release := make(chan struct{})
			b := newFake()
			b.setItems(KindTools, toolItem("up", "wait", "Waits."))
			b.call = func(ctx context.Context, r CallRequest, p Peer) (json.RawMessage, error) {
				select {
				case <-release:
				case <-ctx.Done():
				}
				return textResult("done"), nil
			}
			p := startStdio(t, b, &Options{Mode: c.mode})
			p.send(legacyInit)
			p.until(1)
			p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			const extra = 3
			for id := 10; id < 10+maxInFlight+extra; id++ {
				p.send(c.call(id))
			}
			// The requests past the limit are refused while the others wait.
			refused := map[string]bool{}
			for len(refused) < extra {
				select {
				case l := <-p.lines:
					var m struct {
						ID    json.RawMessage `json:"id"`
						Error *struct {
							Code    int    `json:"code"`
							Message string `json:"message"`
						} `json:"error"`
					}
					if json.Unmarshal([]byte(l), &m) != nil || m.Error == nil || !strings.Contains(m.Error.Message, fmt.Sprint(maxInFlight)) {
						t.Fatalf("before any call finished, got %s", l)
					}
					refused[string(m.ID)] = true
				case <-time.After(60 * time.Second): // hang guard
					t.Fatalf("%d requests past the limit refused, want %d", len(refused), extra)
				}
			}
			for id := 10 + maxInFlight; id < 10+maxInFlight+extra; id++ {
				if !refused[fmt.Sprint(id)] {
					t.Errorf("request %d (past the limit) was not the one refused: %v", id, refused)
				}
			}
			close(release)
			done := 0
			for done < maxInFlight {
				select {
				case l := <-p.lines:
					if !strings.Contains(l, `"done"`) {
						t.Fatalf("after the release, got %s", l)
					}
					done++
				case <-time.After(60 * time.Second): // hang guard
					t.Fatalf("%d of %d calls answered after the release", done, maxInFlight)
				}
			}
			// Room again: a new call is taken and answered.
			p.send(c.call(5))
			if got := p.until(5); !strings.Contains(got[len(got)-1], `"done"`) {
				t.Fatalf("a call after the others finished: %s", got[len(got)-1])
			}
		})
	}
}

// TestHTTPBoundsBatches: one POST of a legacy session may carry a batch
// (2025-03-26); a batch of more than maxBatch messages is refused whole
// before any of it runs, so one request cannot start thousands of calls.
// A batch within the bound is answered.
func TestHTTPBoundsBatches(t *testing.T) {
	var calls atomic.Int64
	b := newFake()
	b.setItems(KindTools, toolItem("up", "echo", "Echoes."))
	b.call = func(ctx context.Context, r CallRequest, p Peer) (json.RawMessage, error) {
		calls.Add(1)
		return textResult("echo"), nil
	}
	_, srv := newHTTP(t, b, &Options{Mode: ModeFlat})
	const version = "2025-03-26"
	post := func(body, session string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", version)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, _ := post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, "")
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, session)
	}
	if resp, body := post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", resp.StatusCode, body)
	}
	batch := func(n int) string {
		var msgs []string
		for i := 0; i < n; i++ {
			msgs = append(msgs, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__echo","arguments":{}}}`, i+1))
		}
		return "[" + strings.Join(msgs, ",") + "]"
	}
	resp, body := post(batch(maxBatch+1), session)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, fmt.Sprint(maxBatch)) {
		t.Fatalf("a batch of %d: %d %s", maxBatch+1, resp.StatusCode, body)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("a refused batch ran %d calls", n)
	}
	resp, body = post(batch(2), session)
	if resp.StatusCode != http.StatusOK || strings.Count(body, `"echo"`) != 2 {
		t.Fatalf("a batch of 2: %d %s", resp.StatusCode, body)
	}
}

// TestStdioDuplicateIDInFlightRunsOnce: a request whose id is that of a
// call still in flight is not run, on either path, and is answered: the
// SDK alone would drop it without a word (it clears the id so as not to
// name the request in flight), so the frame filter answers it with
// -32600 and id null, naming the id.
func TestStdioDuplicateIDInFlightRunsOnce(t *testing.T) {
	for _, off := range []bool{true, false} {
		t.Run(fmt.Sprintf("noFastPath=%v", off), func(t *testing.T) {
			release := make(chan struct{})
			var calls atomic.Int64
			b := newFake()
			b.setItems(KindTools, toolItem("up", "wait", "Waits."))
			b.call = func(ctx context.Context, r CallRequest, p Peer) (json.RawMessage, error) {
				calls.Add(1)
				select {
				case <-release:
				case <-ctx.Done():
				}
				return textResult("done " + string(r.Arguments)), nil
			}
			p := startStdio(t, b, &Options{Mode: ModeFlat, noFastPath: off})
			p.send(legacyInit)
			p.until(1)
			p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			p.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"up__wait","arguments":{"n":1}}}`)
			for calls.Load() < 1 {
				time.Sleep(5 * time.Millisecond) // until the first runs (not a timing assertion)
			}
			p.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"up__wait","arguments":{"n":2}}}`)
			p.send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"up__wait","arguments":{"n":3}}}`)
			for calls.Load() < 2 {
				time.Sleep(5 * time.Millisecond)
			}
			close(release)
			// Answers to 5 and 6 (in any order), then to a ping sent after.
			var lines []string
			for !strings.Contains(strings.Join(lines, "\n"), `"id":5,`) || !strings.Contains(strings.Join(lines, "\n"), `"id":6,`) {
				select {
				case l := <-p.lines:
					lines = append(lines, l)
				case <-time.After(60 * time.Second): // hang guard
					t.Fatalf("no answers to 5 and 6: %q", lines)
				}
			}
			p.send(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
			got := strings.Join(append(lines, p.until(7)...), "\n")
			if n := strings.Count(got, `"id":5,`); n != 1 {
				t.Fatalf("%d answers to id 5:\n%s", n, got)
			}
			if strings.Contains(got, `{\"n\":2}`) || calls.Load() != 2 {
				t.Fatalf("the duplicate ran (%d calls):\n%s", calls.Load(), got)
			}
			if n := strings.Count(got, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: request id 5 is already in use by a request in flight`); n != 1 {
				t.Fatalf("%d answers refusing the duplicate:\n%s", n, got)
			}
		})
	}
}

// TestStdioNullIDIsAnswered: a request whose id is null is no
// notification (that has no id) and no valid request (MCP ids are strings
// or integers): the SDK reads it as a notification and answers nothing
// (a tools/call would run unanswered). On either path it is answered with
// -32600, id null, and not run; the last id member is the one that
// counts, as in the SDK's decoder.
func TestStdioNullIDIsAnswered(t *testing.T) {
	for _, off := range []bool{true, false} {
		t.Run(fmt.Sprintf("noFastPath=%v", off), func(t *testing.T) {
			var calls atomic.Int64
			b := newFake()
			b.setItems(KindTools, toolItem("up", "echo", "Echoes."))
			b.call = func(ctx context.Context, r CallRequest, p Peer) (json.RawMessage, error) {
				calls.Add(1)
				return textResult("ran"), nil
			}
			p := startStdio(t, b, &Options{Mode: ModeFlat, noFastPath: off})
			p.send(legacyInit)
			p.until(1)
			p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			frames := []string{
				`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"up__echo","arguments":{}}}`,
				`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
				`{"jsonrpc":"2.0","id":null,"method":"tools/list"}`,
				`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"up__echo","arguments":{}},"id":null}`,
				`{"jsonrpc":"2.0","\u0069d":null,"method":"tools/call","params":{"name":"up__echo","arguments":{}}}`,
			}
			for _, f := range frames {
				p.send(f)
			}
			// A notification is still no request: nothing answers it.
			p.send(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
			p.send(`{"jsonrpc":"2.0","id":9,"method":"ping"}`)
			got := p.until(9)
			want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: the request id is null; an id must be a string or an integer (a notification has no id member)"}}`
			if n := strings.Count(strings.Join(got, "\n"), want); n != len(frames) || len(got) != len(frames)+1 {
				t.Fatalf("%d of %d null-id requests refused, %d frames:\n%s", n, len(frames), len(got), strings.Join(got, "\n"))
			}
			if calls.Load() != 0 {
				t.Fatalf("a null-id tools/call ran %d times", calls.Load())
			}
		})
	}
}
