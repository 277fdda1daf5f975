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

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lender makes a backend lend every result it returns, as the gateway
// lends a filter's output: a buffer of its own per call, overwritten with
// 0xFF when given back (an answer read from it afterwards is corrupt),
// counted.
type lender struct {
	lent, back, twice atomic.Int64
}

type poisoned struct {
	b    []byte
	l    *lender
	done atomic.Bool
}

func (p *poisoned) Release() {
	if p.done.Swap(true) {
		p.l.twice.Add(1)
		return
	}
	for i := range p.b {
		p.b[i] = 0xFF
	}
	p.l.back.Add(1)
}

func (l *lender) wrap(b *fakeBackend) *fakeBackend {
	call := b.call
	b.call = func(ctx context.Context, r CallRequest, p Peer) (json.RawMessage, error) {
		raw, err := call(ctx, r, p)
		if err != nil || raw == nil {
			return raw, err
		}
		buf := append(make([]byte, 0, len(raw)), raw...)
		if !LoanOf(ctx).Lend(&poisoned{b: buf, l: l}) {
			return nil, fmt.Errorf("the front offered no loan for %s", r.Capability)
		}
		l.lent.Add(1)
		return buf, nil
	}
	return b
}

func (l *lender) check(t *testing.T) {
	t.Helper()
	if l.lent.Load() == 0 || l.back.Load() != l.lent.Load() || l.twice.Load() != 0 {
		t.Fatalf("lent %d results, %d given back, %d given back twice: want every one given back once", l.lent.Load(), l.back.Load(), l.twice.Load())
	}
}

var lentTools = []string{"echo", "structured", "nocontent", "iserror", "upstreammeta", "image", "odd", "extra", "emptytext", "blockmeta", "annotated", "single", "unknown", "notext"}

// TestLentResultsOverStdio: a lent result is given back exactly once on
// the stdio fast path and on the SDK path, in both eras, and only after
// the answer no longer reads it (the answers equal those of a backend
// that lends nothing).
func TestLentResultsOverStdio(t *testing.T) {
	for _, modern := range []bool{false, true} {
		for _, fast := range []bool{false, true} {
			t.Run(fmt.Sprintf("modern=%v/fast=%v", modern, fast), func(t *testing.T) {
				var l lender
				want := stdioAnswers(t, fastBackend(), fast, modern)
				got := stdioAnswers(t, l.wrap(fastBackend()), fast, modern)
				for i := range want {
					if got[i] != want[i] {
						t.Errorf("call %d answered from a result given back:\n got  %s\n want %s", i, got[i], want[i])
					}
				}
				l.check(t)
			})
		}
	}
}

func stdioAnswers(t *testing.T, b Backend, fast, modern bool) []string {
	var taken atomic.Int64
	p := startStdio(t, b, &Options{Mode: ModeFlat, noFastPath: !fast, fastTaken: &taken})
	meta := `"_meta":{}`
	if modern {
		meta = modernMeta("")
		p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`)
	} else {
		p.send(legacyInit)
	}
	p.until(1)
	var out []string
	for i, n := range lentTools {
		id := 10 + i
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__%s","arguments":{"x":1},%s}}`, id, n, meta))
		frames := p.until(id)
		out = append(out, canonical(t, frames[len(frames)-1]))
	}
	p.end()
	if fast && taken.Load() == 0 {
		t.Fatal("the fast path took no call")
	}
	return out
}

// TestLentResultsOverHTTP is TestLentResultsOverStdio for the HTTP front.
func TestLentResultsOverHTTP(t *testing.T) {
	for _, modern := range []bool{false, true} {
		for _, fast := range []bool{false, true} {
			t.Run(fmt.Sprintf("modern=%v/fast=%v", modern, fast), func(t *testing.T) {
				var l lender
				want := httpAnswers(t, fastBackend(), fast, modern)
				got := httpAnswers(t, l.wrap(fastBackend()), fast, modern)
				for i := range want {
					if !sameAnswer(got[i], want[i]) {
						t.Errorf("call %d answered from a result given back:\n got  %v\n want %v", i, got[i], want[i])
					}
				}
				l.check(t)
			})
		}
	}
}

func httpAnswers(t *testing.T, b Backend, fast, modern bool) []answer {
	var taken atomic.Int64
	_, srv := newHTTP(t, b, &Options{Mode: ModeFlat, noFastPath: !fast, fastTaken: &taken})
	a := &httpAgent{t: t, url: srv.URL}
	meta := `"_meta":{}`
	if modern {
		meta = modernMeta("")
		a.version = modernVersion
	} else {
		if got := a.post(legacyInit, nil); got.status != 200 || a.sid == "" {
			t.Fatalf("initialize: %v (session %q)", got, a.sid)
		}
		a.version = "2025-11-25"
		a.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	}
	var out []answer
	for i, n := range lentTools {
		out = append(out, a.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__%s","arguments":{"x":1},%s}}`, 10+i, n, meta), func(h http.Header) {
			if modern {
				h.Set("Mcp-Method", "tools/call")
				h.Set("Mcp-Name", "up__"+n)
			}
		}))
	}
	if fast && taken.Load() == 0 {
		t.Fatal("the fast path took no call")
	}
	for _, x := range out {
		if strings.Contains(x.String(), "\ufffd") {
			t.Fatalf("an answer holds bytes of a result given back: %v", x)
		}
	}
	return out
}

// TestLentInputRequiredHandedToTheSDK: an input_required result the stdio
// fast path hands to the SDK (stashed until the SDK's handler answers from
// it) is copied before the loan is given back: the agent's elicitation
// and the second round work as with a result that is not lent.
func TestLentInputRequiredHandedToTheSDK(t *testing.T) {
	b := newFake()
	b.setItems(KindTools, toolItem("up", "ask", "Asks."))
	b.call = func(ctx context.Context, r CallRequest, _ Peer) (json.RawMessage, error) {
		if len(r.InputResponses) == 0 {
			return json.RawMessage(`{"resultType":"input_required","inputRequests":{"q1":{"method":"elicitation/create","params":{"mode":"form","message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}},"requestState":"st-1"}`), nil
		}
		return textResult("answered " + string(r.InputResponses) + " state " + r.RequestState), nil
	}
	var l lender
	l.wrap(b)
	var taken atomic.Int64
	cr, cw := io.Pipe()
	sr, sw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- ServeStdio(context.Background(), b, &Options{Mode: ModeFlat, Logger: quietLogger(), NoSignals: true, fastTaken: &taken}, cr, sw)
		sw.Close()
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Message != "Name?" {
				return nil, fmt.Errorf("elicitation from a result given back: %q", req.Params.Message)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: sr, Writer: cw}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__ask", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	cs.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if text := resultText(res); !strings.Contains(text, "Ada") || !strings.Contains(text, "state st-1") {
		t.Fatalf("the elicited answer did not reach the upstream: %q", text)
	}
	if taken.Load() == 0 {
		t.Fatal("the fast path took no call")
	}
	l.check(t)
}
