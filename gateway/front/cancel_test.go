package front

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeConn is an mcp.Connection fed from a slice and recording writes.
type fakeConn struct {
	mu     sync.Mutex
	in     []jsonrpc.Message
	writes []jsonrpc.Message
}

func (c *fakeConn) Read(context.Context) (jsonrpc.Message, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.in) == 0 {
		return nil, io.EOF
	}
	m := c.in[0]
	c.in = c.in[1:]
	return m, nil
}

func (c *fakeConn) Write(_ context.Context, m jsonrpc.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, m)
	return nil
}

func (c *fakeConn) Close() error      { return nil }
func (c *fakeConn) SessionID() string { return "" }

func mustID(t *testing.T, v any) jsonrpc.ID {
	t.Helper()
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestCancelConnWithholdsCancelledResponses: a request the agent cancelled
// gets no response; other requests, unknown ids in a cancel notice and
// notifications pass untouched.
func TestCancelConnWithholdsCancelledResponses(t *testing.T) {
	call := func(id any) *jsonrpc.Request {
		return &jsonrpc.Request{ID: mustID(t, id), Method: "tools/call", Params: json.RawMessage(`{}`)}
	}
	cancel := func(id string) *jsonrpc.Request {
		return &jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":` + id + `}`)}
	}
	fc := &fakeConn{in: []jsonrpc.Message{
		call(float64(1)), call("a"), call(float64(3)),
		cancel(`1`), cancel(`"a"`), cancel(`99`), cancel(`null`),
		&jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(`not json`)},
	}}
	c, err := cancelTransport{Transport: fakeTransport{fc}}.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := c.Read(context.Background()); err != nil {
			break
		}
	}
	for _, id := range []any{float64(1), "a", float64(3), float64(99)} {
		if err := c.Write(context.Background(), &jsonrpc.Response{ID: mustID(t, id), Error: errRequestCancelled}); err != nil {
			t.Fatal(err)
		}
	}
	note := &jsonrpc.Request{Method: "notifications/progress", Params: json.RawMessage(`{}`)}
	_ = c.Write(context.Background(), note)
	var got []any
	for _, m := range fc.writes {
		if r, ok := m.(*jsonrpc.Response); ok {
			got = append(got, r.ID.Raw())
		}
	}
	if len(got) != 2 || got[0] != int64(3) || got[1] != int64(99) || len(fc.writes) != 3 {
		t.Fatalf("responses written for %v (%d writes); want only 3 and 99 plus the notification", got, len(fc.writes))
	}
	// An id reused after its response is tracked afresh.
	fc.in = []jsonrpc.Message{call(float64(1))}
	_, _ = c.Read(context.Background())
	_ = c.Write(context.Background(), &jsonrpc.Response{ID: mustID(t, float64(1)), Result: json.RawMessage(`{}`)})
	if len(fc.writes) != 4 {
		t.Fatalf("a reused id's response was withheld")
	}
}

// TestStdioCancelledCallGetsNoResponse: over stdio, a call the agent
// cancels is stopped in the backend and answered with nothing; the session
// stays usable.
func TestStdioCancelledCallGetsNoResponse(t *testing.T) {
	b := newFake()
	started, returned := make(chan struct{}), make(chan struct{})
	b.call = func(ctx context.Context, _ CallRequest, _ Peer) (json.RawMessage, error) {
		close(started)
		<-ctx.Done()
		close(returned)
		return nil, ctx.Err()
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- ServeStdio(context.Background(), b, &Options{Logger: quietLogger(), NoSignals: true, Mode: ModeGateway}, inR, outW)
		outW.Close()
	}()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send := func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func(what string) string {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stdout closed waiting for %s", what)
			}
			return l
		case <-time.After(10 * time.Second): // hang guard
			t.Fatalf("no %s", what)
		}
		return ""
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	next("initialize response")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"call","arguments":{"capability":"fs__x"}}}`)
	<-started
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"user"}}`)
	<-returned
	send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	var rest []string
	for {
		l := next("ping response")
		rest = append(rest, l)
		if strings.Contains(l, `"id":3`) {
			break
		}
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		rest = append(rest, l)
	}
	for _, l := range rest {
		if strings.Contains(l, `"id":2`) {
			t.Fatalf("the cancelled request was answered: %s", l)
		}
	}
}

type fakeTransport struct{ c *fakeConn }

func (t fakeTransport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }
