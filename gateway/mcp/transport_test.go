package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"sluice/gateway/mcp"
	"sluice/gateway/mcp/mcptest"
)

// msgTransport is a message-oriented Transport, the shape of a remote one:
// Send hands each message to the server whole (no framing from the core),
// answers arrive on a queue filled by another goroutine, and the server
// behind it is the fixture served in-process.
type msgTransport struct {
	toServer *io.PipeWriter
	inbox    chan []byte
	fatal    chan error // a transport-level failure to report from Receive
	stop     chan struct{}
	once     sync.Once
	served   chan struct{}

	mu   sync.Mutex
	sent [][]byte
}

func newMsgTransport(t *testing.T, opts *mcptest.Options) *msgTransport {
	t.Helper()
	sr, sw := io.Pipe() // client -> server
	cr, cw := io.Pipe() // server -> client
	m := &msgTransport{toServer: sw, inbox: make(chan []byte, 64), fatal: make(chan error, 1), stop: make(chan struct{}), served: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(m.served)
		_ = mcptest.Serve(ctx, sr, cw, io.Discard, opts)
		cw.Close()
	}()
	go func() {
		sc := bufio.NewScanner(cr)
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			select {
			case m.inbox <- append([]byte(nil), sc.Bytes()...):
			case <-m.stop:
				return
			}
		}
		close(m.inbox)
	}()
	t.Cleanup(func() {
		cancel()
		sr.Close()
		cr.Close()
		<-m.served
	})
	return m
}

func (m *msgTransport) Send(msg []byte) error {
	if bytes.HasSuffix(msg, []byte("\n")) || !json.Valid(msg) {
		return errors.New("the core sent framing or invalid JSON")
	}
	m.mu.Lock()
	m.sent = append(m.sent, append([]byte(nil), msg...))
	m.mu.Unlock()
	_, err := m.toServer.Write(append(append([]byte(nil), msg...), '\n'))
	return err
}

func (m *msgTransport) sentContains(sub string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, b := range m.sent {
		if strings.Contains(string(b), sub) {
			return true
		}
	}
	return false
}

func (m *msgTransport) Flush() error { return nil }

func (m *msgTransport) Receive() ([]byte, error) {
	select {
	case b, ok := <-m.inbox:
		if !ok {
			return nil, io.EOF
		}
		return b, nil
	case err := <-m.fatal:
		return nil, err
	case <-m.stop:
		return nil, io.EOF
	}
}

func (m *msgTransport) Close() error {
	m.once.Do(func() {
		close(m.stop)
		m.toServer.Close()
	})
	return nil
}

// TestClientOverAMessageTransport: the client core (handshake, calls,
// pagination) runs unchanged over a transport that is not stdio, and the
// messages it hands over are whole JSON objects without framing.
func TestClientOverAMessageTransport(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			tr := newMsgTransport(t, &mcptest.Options{Modes: []mcptest.Mode{mcptest.ModePaginated}})
			c := mcp.New(tr, &mcp.Options{Server: "remote", Era: era})
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := c.Handshake(ctx); err != nil {
				t.Fatal(err)
			}
			if c.Era() != era {
				t.Fatalf("era %q, want %q", c.Era(), era)
			}
			tl, err := c.ListTools(ctx)
			if err != nil || len(tl.Tools) < 2 {
				t.Fatalf("tools %+v, %v", tl, err)
			}
			res, err := c.CallTool(ctx, "echo", json.RawMessage(`{"text":"over the seam"}`), nil)
			if err != nil || !strings.Contains(string(res), "over the seam") {
				t.Fatalf("call: %s, %v", res, err)
			}
			tr.mu.Lock()
			n := len(tr.sent)
			tr.mu.Unlock()
			if n < 3 {
				t.Fatalf("%d messages sent, want the handshake, the listing and the call", n)
			}
			if out := c.Close(); !out.Complete {
				t.Fatalf("outcome %+v, want complete for a transport without a process", out)
			}
		})
	}
}

// TestTransportFatalErrorReachesCalls: a typed error from Receive ends the
// client, and a request in flight fails with its code and diagnostics.
func TestTransportFatalErrorReachesCalls(t *testing.T) {
	tr := newMsgTransport(t, nil)
	c := mcp.New(tr, &mcp.Options{Server: "remote", Era: "legacy"})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Handshake(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "slow", json.RawMessage(`{"ms":3600000}`), nil)
		done <- err
	}()
	for !tr.sentContains(`"tools/call"`) { // the call is in flight
		time.Sleep(time.Millisecond)
	}
	tr.fatal <- &mcp.Error{Code: mcp.CodeClosed, Op: "read", Message: "the session was terminated by the server (HTTP 404)", StderrTail: "404 page not found"}
	err := <-done
	var me *mcp.Error
	if !errors.As(err, &me) || me.Code != mcp.CodeClosed || !strings.Contains(err.Error(), "HTTP 404") {
		t.Fatalf("call error %v, want the transport's CodeClosed error", err)
	}
	tail := ""
	for e := error(me); e != nil; e = errors.Unwrap(e) {
		if x, ok := e.(*mcp.Error); ok && x.StderrTail != "" {
			tail = x.StderrTail
		}
	}
	if tail != "404 page not found" {
		t.Fatalf("diagnostics %q lost on the way to the call", tail)
	}
	if c.State() != mcp.Failed || mcp.CodeOf(c.Err()) != mcp.CodeClosed {
		t.Fatalf("state %v err %v, want failed with the transport's error", c.State(), c.Err())
	}
}
