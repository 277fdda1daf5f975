package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
//
// On stdio it also keeps the order and the end of input honest (see
// "Why stdin EOF does not end the session at once" in doc.go): a request
// read right behind initialize waits until initialize is answered, and
// the end of input reaches the SDK only after onEOF returns.
type cancelTransport struct {
	mcp.Transport
	// conn is the connection Connect made, when the caller wants to wait
	// for its responses (see cancelConn.waitAnswered).
	conn **cancelConn
	// onEOF, when set, runs once when the input ends, before the SDK
	// learns of it; it typically waits for every request read so far to
	// be answered.
	onEOF func(*cancelConn)
	// bad, when set, answers a message the SDK refused to decode (id null)
	// and reading goes on; without it such an error ends the session.
	bad func(problem string)
}

func (t cancelTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	cc := &cancelConn{Connection: c, inflight: map[any]bool{}, changed: make(chan struct{}, 1), closed: make(chan struct{}), onEOF: t.onEOF, bad: t.bad}
	if t.conn != nil {
		*t.conn = cc
	}
	return cc, nil
}

// waitAnswered waits up to bound until every request read so far has had
// its response written (or withheld), or the connection is closed. A
// handler returning is not enough on shutdown: the SDK writes the
// response after the handler returns, and closing the session in between
// would lose a call that was drained.
func (c *cancelConn) waitAnswered(bound time.Duration) bool {
	t := time.NewTimer(bound)
	defer t.Stop()
	for {
		c.mu.Lock()
		n := len(c.inflight)
		c.mu.Unlock()
		if n == 0 {
			return true
		}
		select {
		case <-c.changed:
		case <-c.closed:
			return false
		case <-t.C:
			return false
		}
	}
}

type cancelConn struct {
	mcp.Connection
	mu       sync.Mutex
	inflight map[any]bool               // request id -> cancelled by the agent
	changed  chan struct{}              // cap 1: a response was written
	initID   any                        // the initialize request still unanswered, if any
	fastRun  map[any]context.CancelFunc // requests the fast path runs -> their cancel
	initDone chan struct{}              // closed when initID's response is written

	closeOnce sync.Once
	closed    chan struct{}

	// Only the (single) reading goroutine touches these.
	onEOF    func(*cancelConn)
	bad      func(problem string)
	initWait chan struct{}
}

func (c *cancelConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Connection.Close()
}

// claim registers a request the frame filter read (stdioframes.go) as in
// flight before the SDK or the fast path sees it, so that a second
// request with its id is refused however soon it follows: claimDup for
// an id in flight, claimBusy when maxInFlight requests are.
func (c *cancelConn) claim(id jsonrpc.ID) claimResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.inflight[id.Raw()]; dup {
		return claimDup
	}
	if len(c.inflight) >= maxInFlight {
		return claimBusy
	}
	c.inflight[id.Raw()] = false
	return claimOK
}

// adopt registers a request the fast path answers instead of the SDK
// (fastpath.go): it counts as read, so notifications/cancelled cancels it
// (cancel) and withholds its response, and waitAnswered waits for it. It
// waits for an unanswered initialize. The request is one the frame filter
// claimed, which refused a duplicate of an id in flight; one the agent
// cancelled since is cancelled at once. forget drops the cancel function
// once the call is over; the request itself is done when its response is
// written.
func (c *cancelConn) adopt(id jsonrpc.ID, cancel context.CancelFunc) bool {
	c.mu.Lock()
	for c.initID != nil {
		// As the SDK's reader: nothing overtakes an unanswered initialize.
		wait := c.initDone
		c.mu.Unlock()
		select {
		case <-wait:
		case <-c.closed:
			return false
		}
		c.mu.Lock()
	}
	defer c.mu.Unlock()
	if _, running := c.fastRun[id.Raw()]; running {
		return false
	}
	select {
	case <-c.closed:
		return false
	default:
	}
	if cancelled, ok := c.inflight[id.Raw()]; !ok {
		c.inflight[id.Raw()] = false
	} else if cancelled {
		cancel()
	}
	if c.fastRun == nil {
		c.fastRun = map[any]context.CancelFunc{}
	}
	c.fastRun[id.Raw()] = cancel
	return true
}

// forget drops the cancel function of a call adopt registered, once the
// call is over.
func (c *cancelConn) forget(id jsonrpc.ID) {
	c.mu.Lock()
	delete(c.fastRun, id.Raw())
	c.mu.Unlock()
}

// maxInFlight bounds the requests of one connection read and not yet
// answered. An agent that sends calls faster than they finish, or never
// reads its answers, would otherwise make the gateway hold every one of
// them (a goroutine, the request and its result each): past the bound a
// request is answered at once with errTooBusy and never run.
const maxInFlight = 1024

func (c *cancelConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, busy, err := c.read(ctx)
		if busy {
			req := msg.(*jsonrpc.Request)
			if werr := c.Connection.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: errTooBusy}); werr != nil {
				return nil, werr
			}
			continue
		}
		return msg, err
	}
}

// errTooBusy answers a request read while maxInFlight others wait.
var errTooBusy = &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
	Message: fmt.Sprintf("Too many requests in flight: %d on this connection are unanswered; wait for answers before sending more", maxInFlight)}

// room registers a request read (one already registered, handed over by
// the fast path, keeps its state) and reports false, registering nothing,
// when maxInFlight others are unanswered.
func (c *cancelConn) room(id jsonrpc.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.inflight[id.Raw()]; ok {
		return true
	}
	if len(c.inflight) >= maxInFlight {
		return false
	}
	c.inflight[id.Raw()] = false
	return true
}

// read reads the next message; busy reports a request refused for want of
// room (see maxInFlight), which Read answers.
func (c *cancelConn) read(ctx context.Context) (_ jsonrpc.Message, busy bool, _ error) {
	if w := c.initWait; w != nil {
		// The SDK handles initialize in order, but a request read behind it
		// can still overtake it at the end of input (the SDK cancels what is
		// queued); nothing is read until initialize is answered.
		select {
		case <-w:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-c.closed:
			return nil, false, io.EOF
		}
		c.initWait = nil
	}
	msg, err := c.Connection.Read(ctx)
	for err != nil && c.bad != nil && !errors.Is(err, io.EOF) && ctx.Err() == nil && !isClosedErr(err) {
		// A frame the SDK's connection refused after decoding it (a batch
		// in an era without batches): answer it and read on.
		c.bad(err.Error())
		msg, err = c.Connection.Read(ctx)
	}
	if err != nil {
		if errors.Is(err, io.EOF) && c.onEOF != nil {
			eof := c.onEOF
			c.onEOF = nil
			eof(c)
		}
		return msg, false, err
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return msg, false, nil
	}
	switch {
	case req.IsCall():
		if !c.room(req.ID) {
			return msg, true, nil
		}
		c.mu.Lock()
		if req.Method == "initialize" && c.initID == nil {
			c.initID = req.ID.Raw()
			c.initDone = make(chan struct{})
			c.initWait = c.initDone
		}
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
				cancel := c.fastRun[id.Raw()]
				c.mu.Unlock()
				if cancel != nil {
					cancel()
				}
			}
		}
	}
	return msg, false, nil
}

func (c *cancelConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID.IsValid() {
		return c.answer(resp.ID, func() error { return c.Connection.Write(ctx, msg) })
	}
	return c.Connection.Write(ctx, msg)
}

// writeFrame writes frame, an encoded response to id exactly as the SDK's
// connection would encode it, straight to out (where the connection
// writes, one whole frame per Write), with Write's bookkeeping.
func (c *cancelConn) writeFrame(id jsonrpc.ID, frame []byte, out io.Writer) error {
	return c.answer(id, func() error {
		_, err := out.Write(frame)
		return err
	})
}

// answer sends the response to id with send unless the agent cancelled
// the request, and then forgets the request.
func (c *cancelConn) answer(id jsonrpc.ID, send func() error) error {
	c.mu.Lock()
	cancelled, tracked := c.inflight[id.Raw()]
	c.mu.Unlock()
	var err error
	if !cancelled {
		err = send()
	}
	// Forget the request only once its response is out: waitAnswered
	// must not see it answered before it is.
	c.mu.Lock()
	if tracked {
		delete(c.inflight, id.Raw())
	}
	if c.initID != nil && c.initID == id.Raw() {
		c.initID = nil
		close(c.initDone)
	}
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
	return err // nil when withheld: the agent cancelled it
}
