package front

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// codeRequestCancelled is the JSON-RPC error a cancelled request gets where
// a response cannot be withheld (see cancelTransport).
const codeRequestCancelled = -32800

// errRequestCancelled is what a handler returns for a request the agent
// cancelled: a proper JSON-RPC error rather than a bare context error
// (which the SDK would send with code 0).
var errRequestCancelled = &jsonrpc.Error{Code: codeRequestCancelled, Message: "request cancelled"}

// cancelTransport withholds the response to a request the agent cancelled
// with notifications/cancelled: the protocol says the receiver should not
// answer it, and the SDK's connection always answers every request. It
// wraps a stream transport (stdio), where front sees every message; on
// streamable HTTP the SDK owns the connection and a cancelled request gets
// errRequestCancelled instead.
type cancelTransport struct {
	mcp.Transport
	// conn is the connection Connect made, when the caller wants to wait
	// for its responses (see cancelConn.waitAnswered).
	conn **cancelConn
}

func (t cancelTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	cc := &cancelConn{Connection: c, inflight: map[any]bool{}}
	if t.conn != nil {
		*t.conn = cc
	}
	return cc, nil
}

// waitAnswered waits up to bound until every request read so far has had
// its response written (or withheld). A handler returning is not enough
// on shutdown: the SDK writes the response after the handler returns, and
// closing the session in between would lose a call that was drained.
func (c *cancelConn) waitAnswered(bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for {
		c.mu.Lock()
		n := len(c.inflight)
		c.mu.Unlock()
		if n == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type cancelConn struct {
	mcp.Connection
	mu       sync.Mutex
	inflight map[any]bool // request id -> cancelled by the agent
}

func (c *cancelConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return msg, err
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return msg, nil
	}
	switch {
	case req.IsCall():
		c.mu.Lock()
		c.inflight[req.ID.Raw()] = false
		c.mu.Unlock()
	case req.Method == "notifications/cancelled":
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil && p.RequestID != nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				c.mu.Lock()
				if _, ok := c.inflight[id.Raw()]; ok {
					c.inflight[id.Raw()] = true
				}
				c.mu.Unlock()
			}
		}
	}
	return msg, nil
}

func (c *cancelConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID.IsValid() {
		c.mu.Lock()
		cancelled, tracked := c.inflight[resp.ID.Raw()]
		if tracked {
			delete(c.inflight, resp.ID.Raw())
		}
		c.mu.Unlock()
		if cancelled {
			return nil // the agent cancelled it: no response
		}
	}
	return c.Connection.Write(ctx, msg)
}
