package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"sluice/gateway/proc"
)

// fake is an in-memory MCP server driven by a handler, over io.Pipes.
type fake struct {
	t      *testing.T
	out    *io.PipeWriter // server -> client
	in     *io.PipeReader // client -> server
	wmu    sync.Mutex
	mu     sync.Mutex
	got    []Message
	gotCh  chan Message
	handle func(f *fake, m Message)
	done   chan struct{}
}

// legacyServer answers like a typical TS-SDK v1 server.
func legacyServer(version string, next func(f *fake, m Message)) func(f *fake, m Message) {
	return func(f *fake, m Message) {
		switch m.Method {
		case "server/discover":
			f.errorReply(m, -32601, "Method not found")
		case "initialize":
			f.reply(m, `{"protocolVersion":"`+version+`","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"fake","version":"1.2.3","title":"Fake"},"instructions":"be nice"}`)
		case "notifications/initialized", "notifications/cancelled":
		default:
			if next != nil {
				next(f, m)
			} else if m.Kind == KindRequest {
				f.errorReply(m, -32601, "Method not found")
			}
		}
	}
}

func modernServer(next func(f *fake, m Message)) func(f *fake, m Message) {
	return func(f *fake, m Message) {
		switch m.Method {
		case "server/discover":
			f.reply(m, `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"instructions":"modern","ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern-fake","version":"9"}}}`)
		case "initialize":
			f.errorReply(m, -32022, "use modern")
		default:
			if next != nil {
				next(f, m)
			}
		}
	}
}

func newFake(t *testing.T, opts *Options, handle func(f *fake, m Message)) (*Client, *fake) {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	f := &fake{t: t, out: sw, in: sr, handle: handle, gotCh: make(chan Message, 1024), done: make(chan struct{})}
	if opts == nil {
		opts = &Options{}
	}
	if opts.Server == "" {
		opts.Server = "srv"
	}
	c := NewClient(cr, cw, func() proc.Outcome {
		sr.Close()
		sw.Close()
		<-f.done
		return proc.Outcome{Complete: true, Stage: "exited"}
	}, opts)
	go f.serve()
	t.Cleanup(func() { c.Close() })
	return c, f
}

func (f *fake) serve() {
	defer close(f.done)
	fr := NewFramer(f.in, 0)
	for {
		m, err := fr.Next()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.got = append(f.got, m)
		h := f.handle
		f.mu.Unlock()
		select {
		case f.gotCh <- m:
		default:
		}
		if h != nil {
			h(f, m)
		}
	}
}

func (f *fake) send(line string) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	_, _ = io.WriteString(f.out, line+"\n")
}

func (f *fake) reply(m Message, result string) {
	f.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + result + `}`)
}

func (f *fake) errorReply(m Message, code int, msg string) {
	b, _ := json.Marshal(msg)
	f.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":` + itoa(code) + `,"message":` + string(b) + `}}`)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// messages returns what the server received with the given method.
func (f *fake) messages(method string) []Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Message
	for _, m := range f.got {
		if m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

// await waits (hang guard only) for a message with the given method.
func (f *fake) await(method string) Message {
	f.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if ms := f.messages(method); len(ms) > 0 {
			return ms[len(ms)-1]
		}
		select {
		case <-f.gotCh:
		case <-deadline:
			f.t.Fatalf("server never received %s", method)
		}
	}
}

func handshake(t *testing.T, c *Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Handshake(ctx); err != nil {
		t.Fatalf("handshake: %v", err)
	}
}

func mustCode(t *testing.T, err error, want Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want code %q", want)
	}
	if got := CodeOf(err); got != want {
		t.Fatalf("code %q (%v), want %q", got, err, want)
	}
	if !strings.Contains(err.Error(), `"srv"`) && !strings.Contains(err.Error(), `mcp server "`) {
		t.Errorf("error does not name the server: %v", err)
	}
}

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func asError(err error, target **Error) bool { return errors.As(err, target) }
