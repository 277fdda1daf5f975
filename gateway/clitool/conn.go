package clitool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
)

// JSON-RPC error codes a Conn answers with.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
)

// maxConnQueue bounds the answers waiting to be received; a request whose
// answer does not fit waits (inside its own call) until the client reads.
const maxConnQueue = 64

// Conn is an in-process MCP server for a set of tools, speaking JSON-RPC
// messages (not lines) through Send and Receive: the shape of a client
// transport, so a client core can talk to CLI tools exactly as it talks to
// a server process. It answers initialize (any requested revision: it
// offers tools only), ping, tools/list and tools/call, honours
// notifications/cancelled, and answers every other request with
// "method not found" (server/discover included, which makes a dual-era
// client fall back to the initialize handshake). Each tools/call runs in
// its own goroutine; Close cancels them all and returns only when every
// process group they started has been torn down.
type Conn struct {
	name, version string
	tools         map[string]*Tool
	list          json.RawMessage

	out     chan []byte
	closing chan struct{}
	once    sync.Once
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu       sync.Mutex
	inflight map[string]context.CancelFunc // by request id (raw JSON text)
}

// NewConn serves tools (names must be distinct; a later duplicate is
// ignored) as server name at version.
func NewConn(name, version string, tools []*Tool) *Conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn{name: name, version: version, tools: map[string]*Tool{},
		out: make(chan []byte, maxConnQueue), closing: make(chan struct{}),
		ctx: ctx, cancel: cancel, inflight: map[string]context.CancelFunc{}}
	var b bytes.Buffer
	b.WriteString(`{"tools":[`)
	n := 0
	for _, t := range tools {
		if _, dup := c.tools[t.Name()]; dup {
			continue
		}
		c.tools[t.Name()] = t
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(t.Definition())
		n++
	}
	b.WriteString(`]}`)
	c.list = b.Bytes()
	return c
}

type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// Send takes one JSON-RPC message from the client. It never waits for a
// tool to run; answers arrive through Receive.
func (c *Conn) Send(msg []byte) error {
	select {
	case <-c.closing:
		return io.ErrClosedPipe
	default:
	}
	var m rpcMessage
	if err := json.Unmarshal(msg, &m); err != nil || m.JSONRPC != "2.0" {
		if err != nil {
			c.reply(json.RawMessage("null"), nil, codeParseError, "parse error: the message is not a JSON-RPC 2.0 object")
		} else {
			c.reply(idOrNull(m.ID), nil, codeInvalidRequest, "invalid request: jsonrpc must be \"2.0\"")
		}
		return nil
	}
	isRequest := len(m.ID) > 0 && string(m.ID) != "null"
	if m.Method == "" {
		return nil // a response to nothing we asked: ignore
	}
	if !isRequest {
		if m.Method == "notifications/cancelled" {
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			if json.Unmarshal(m.Params, &p) == nil {
				c.mu.Lock()
				if cancel, ok := c.inflight[string(bytes.TrimSpace(p.RequestID))]; ok {
					cancel()
				}
				c.mu.Unlock()
			}
		}
		return nil
	}
	switch m.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(m.Params, &p)
		v := p.ProtocolVersion
		if v == "" {
			v = "2025-11-25"
		}
		res, _ := json.Marshal(map[string]any{
			"protocolVersion": v,
			"capabilities":    map[string]any{"tools": map[string]any{"listChanged": false}},
			"serverInfo":      map[string]any{"name": c.name, "version": c.version},
		})
		c.reply(m.ID, res, 0, "")
	case "ping":
		c.reply(m.ID, json.RawMessage(`{}`), 0, "")
	case "tools/list":
		c.reply(m.ID, c.list, 0, "")
	case "tools/call":
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil {
			c.reply(m.ID, nil, codeInvalidParams, "invalid params: tools/call needs {name, arguments}")
			return nil
		}
		t, ok := c.tools[p.Name]
		if !ok {
			c.reply(m.ID, nil, codeInvalidParams, "unknown tool "+quoteShort(p.Name))
			return nil
		}
		c.call(m.ID, t, p.Arguments)
	default:
		c.reply(m.ID, nil, codeMethodNotFound, "method not found: "+quoteShort(m.Method))
	}
	return nil
}

func (c *Conn) call(id json.RawMessage, t *Tool, args json.RawMessage) {
	key := string(bytes.TrimSpace(id))
	ctx, cancel := context.WithCancel(c.ctx)
	c.mu.Lock()
	if _, busy := c.inflight[key]; busy {
		c.mu.Unlock()
		cancel()
		c.reply(id, nil, codeInvalidRequest, "invalid request: id "+quoteShort(key)+" is already in use")
		return
	}
	c.inflight[key] = cancel
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		res, err := t.Call(ctx, args)
		cancelled := ctx.Err() != nil
		c.mu.Lock()
		delete(c.inflight, key)
		c.mu.Unlock()
		cancel()
		if cancelled && errors.Is(err, context.Canceled) {
			return // the client gave up on it; an answer would be to nothing
		}
		if err != nil {
			res = ErrorResult(err)
		}
		c.reply(id, res, 0, "")
	}()
}

func idOrNull(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return json.RawMessage("null")
	}
	return id
}

func quoteShort(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// reply queues one response; it waits for room, or gives up on Close.
func (c *Conn) reply(id, result json.RawMessage, code int, msg string) {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	if code != 0 {
		b.WriteString(`,"error":{"code":`)
		j, _ := json.Marshal(code)
		b.Write(j)
		b.WriteString(`,"message":`)
		writeString(&b, msg)
		b.WriteString(`}}`)
	} else {
		b.WriteString(`,"result":`)
		b.Write(result)
		b.WriteByte('}')
	}
	select {
	case c.out <- b.Bytes():
	case <-c.closing:
	}
}

// Flush has nothing to do: answers are handed over whole.
func (c *Conn) Flush() error { return nil }

// Receive returns the next answer; io.EOF once the Conn is closed.
func (c *Conn) Receive() ([]byte, error) {
	select {
	case m := <-c.out:
		return m, nil
	case <-c.closing:
		return nil, io.EOF
	}
}

// Close cancels every running call and waits until their process groups
// are gone. It is idempotent.
func (c *Conn) Close() error {
	c.once.Do(func() {
		close(c.closing)
		c.cancel()
		c.wg.Wait()
	})
	return nil
}
