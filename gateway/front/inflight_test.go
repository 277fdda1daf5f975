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
