package front

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHTTPFastPathShutdownCancelsCalls: a fast-path call still running
// when Shutdown's bound is reached is cancelled (its in-flight entry, not
// a registration with the hard context, carries that) and answered, in
// both eras.
func TestHTTPFastPathShutdownCancelsCalls(t *testing.T) {
	for _, version := range []string{"2025-11-25", modernVersion} {
		t.Run(version, func(t *testing.T) {
			b := newFake()
			b.setItems(KindTools, toolItem("up", "wait", "Waits."))
			started, stopped := make(chan struct{}, 1), make(chan error, 1)
			b.call = func(ctx context.Context, _ CallRequest, _ Peer) (json.RawMessage, error) {
				started <- struct{}{}
				select {
				case <-ctx.Done():
					stopped <- ctx.Err()
				case <-time.After(20 * time.Second): // hang guard
					stopped <- nil
				}
				return nil, ctx.Err()
			}
			var taken atomic.Int64
			h, srv := newHTTP(t, b, &Options{Mode: ModeFlat, ShutdownTimeout: 100 * time.Millisecond, fastTaken: &taken})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs := sdkAgent(t, ctx, srv.URL, version)
			answered := make(chan struct{})
			go func() {
				defer close(answered)
				_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__wait", Arguments: map[string]any{}})
			}()
			<-started
			h.Shutdown(context.Background())
			if err := <-stopped; err == nil {
				t.Fatal("the running call was not cancelled by the shutdown")
			}
			select {
			case <-answered:
			case <-time.After(20 * time.Second):
				t.Fatal("the cancelled call was never answered")
			}
			if taken.Load() != 1 {
				t.Fatalf("the fast path took %d of 1 calls", taken.Load())
			}
		})
	}
}

// TestInflightCancelAll: cancelAll cancels the calls in flight, not the
// finished ones, and every call added after it at once.
func TestInflightCancelAll(t *testing.T) {
	var fl inflight
	var mu sync.Mutex
	cancelled := map[int]int{}
	links := make([]*hardLink, 4)
	for i := range links {
		links[i] = &hardLink{cancel: func() { mu.Lock(); cancelled[i]++; mu.Unlock() }}
		if !fl.addCancel(links[i]) {
			t.Fatalf("call %d not admitted", i)
		}
	}
	fl.doneCancel(links[0]) // the head
	fl.doneCancel(links[2]) // the middle
	fl.cancelAll()
	late := &hardLink{cancel: func() { mu.Lock(); cancelled[4]++; mu.Unlock() }}
	if !fl.addCancel(late) {
		t.Fatal("a call after cancelAll was not admitted")
	}
	if got, want := fmt.Sprint(cancelled), "map[1:1 3:1 4:1]"; got != want {
		t.Fatalf("cancelled %s, want %s", got, want)
	}
	for _, l := range []*hardLink{links[1], links[3], late} {
		fl.doneCancel(l)
	}
	if fl.n != 0 || fl.calls != nil {
		t.Fatalf("after every call ended: n=%d, list %v", fl.n, fl.calls)
	}
}

// TestHTTPFastPathConnPerRequest: each stateless request is a connection
// of its own, and a peer names its connection the same way every time.
func TestHTTPFastPathConnPerRequest(t *testing.T) {
	b := newFake()
	b.setItems(KindTools, toolItem("up", "echo", "Echoes."))
	var mu sync.Mutex
	var conns []string
	b.call = func(_ context.Context, _ CallRequest, p Peer) (json.RawMessage, error) {
		a, c := p.Conn(), p.Conn()
		if a != c || a == "" {
			return nil, fmt.Errorf("conn %q then %q", a, c)
		}
		mu.Lock()
		conns = append(conns, a)
		mu.Unlock()
		return textResult("echo"), nil
	}
	var taken atomic.Int64
	_, srv := newHTTP(t, b, &Options{Mode: ModeFlat, fastTaken: &taken})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := sdkAgent(t, ctx, srv.URL, modernVersion)
	for range 2 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("call: %v %v", res, err)
		}
	}
	if taken.Load() != 2 || len(conns) != 2 || conns[0] == conns[1] {
		t.Fatalf("fast calls %d, conns %q: want two distinct", taken.Load(), conns)
	}
}

// sdkAgent connects a Go SDK client speaking version to the HTTP front at
// url, closed when the test ends.
func sdkAgent(t *testing.T, ctx context.Context, url, version string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + MCPPath, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestPeerWantsProgress: progress can reach the agent when it sent a
// token, or when the call runs under the bridge (a retry may bring one);
// not otherwise, and a Peer that does not say is taken to want it.
func TestPeerWantsProgress(t *testing.T) {
	if (&peer{}).WantsProgress() {
		t.Error("a peer without a progressToken wants progress")
	}
	if !(&peer{token: float64(1)}).WantsProgress() {
		t.Error("a peer with a progressToken does not want progress")
	}
	if !(&peer{job: &job{}}).WantsProgress() {
		t.Error("a bridged peer does not want progress")
	}
	if !ProgressWanted(struct{ Peer }{}) {
		t.Error("a Peer that does not say is taken to want no progress")
	}
}
