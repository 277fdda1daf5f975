package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"sluice/gateway/proc"
)

// Defaults and bounds.
const (
	DefaultMaxOutboundBytes  = 4 << 20
	MinOutboundBytes         = 4 << 10
	DefaultInitializeTimeout = 15 * time.Second
	DefaultDiscoverTimeout   = 2 * time.Second
	DefaultRequestTimeout    = 60 * time.Second

	// MaxTools and MaxToolPages bound ListTools; a server offering more is
	// reported as truncated.
	MaxTools     = 500
	MaxToolPages = 100

	noiseKeep       = 16  // lines kept in the noise ring
	noiseLineBytes  = 256 // bytes kept per noise line
	dispatchQueue   = 256 // pending callbacks before new ones are dropped
	maxServerCalls  = 8   // concurrent Options.OnRequest invocations
	closeWaitBound  = 5 * time.Second
	exitStatusGrace = time.Second
)

// Options configures a Client. The zero value (and nil) means the documented
// defaults.
type Options struct {
	Server            string        // server id, named in every error
	MaxLineBytes      int           // inbound line cap; default 4 MiB; declaration field "maxLineBytes"
	MaxOutboundBytes  int           // bytes queued for the server's stdin; default 4 MiB, min 4 KiB
	InitializeTimeout time.Duration // whole handshake (discover probe + initialize); default 15s
	DiscoverTimeout   time.Duration // server/discover probe budget; default 2s
	RequestTimeout    time.Duration // per request when CallOptions.Timeout is 0; default 60s
	Era               string        // "" auto (discover, then initialize), "modern", "legacy"
	NoiseFatal        bool          // non-JSON stdout lines are fatal instead of set aside
	ClientName        string        // default "sluice"
	ClientVersion     string        // default "dev"
	Logger            *slog.Logger  // default: discard

	// OnNotification receives server notifications other than progress and
	// cancelled (tools/list_changed, resources/*, prompts/list_changed,
	// notifications/message ...). It runs on one dispatch goroutine, in
	// arrival order; it must not block for long: while it runs, further
	// callbacks queue (up to 256) and beyond that are dropped and logged.
	OnNotification func(method string, params json.RawMessage)

	// OnRequest answers server->client requests. nil: ping -> {},
	// roots/list -> {"roots":[]}, anything else -> -32601. When set it is
	// asked first; returning ErrMethodNotFound falls back to those answers,
	// returning an *RPCError sends it as the error.
	OnRequest func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)

	// Scrub, when set, rewrites each message the server sends before the
	// client reads it (the gateway hides the credentials it gave the
	// server there); it returns the message itself when nothing changes.
	Scrub func(msg []byte) []byte

	// Capabilities are the client capabilities to advertise; default {}.
	// Advertise only what OnRequest really handles.
	Capabilities json.RawMessage
}

func (o *Options) normalize() Options {
	var n Options
	if o != nil {
		n = *o
	}
	if n.MaxLineBytes <= 0 {
		n.MaxLineBytes = DefaultMaxLineBytes
	}
	if n.MaxOutboundBytes <= 0 {
		n.MaxOutboundBytes = DefaultMaxOutboundBytes
	}
	n.MaxOutboundBytes = max(n.MaxOutboundBytes, MinOutboundBytes)
	if n.InitializeTimeout <= 0 {
		n.InitializeTimeout = DefaultInitializeTimeout
	}
	if n.DiscoverTimeout <= 0 {
		n.DiscoverTimeout = DefaultDiscoverTimeout
	}
	if n.RequestTimeout <= 0 {
		n.RequestTimeout = DefaultRequestTimeout
	}
	if n.ClientName == "" {
		n.ClientName = "sluice"
	}
	if n.ClientVersion == "" {
		n.ClientVersion = "dev"
	}
	if n.Logger == nil {
		n.Logger = slog.New(slog.DiscardHandler)
	}
	return n
}

// State is the client lifecycle: Idle -> Starting -> Ready -> Closed/Failed.
type State int32

// The states.
const (
	Idle State = iota
	Starting
	Ready
	Closed
	Failed
)

func (s State) String() string {
	switch s {
	case Idle:
		return "idle"
	case Starting:
		return "starting"
	case Ready:
		return "ready"
	case Closed:
		return "closed"
	case Failed:
		return "failed"
	}
	return "invalid"
}

// ServerInfo is what the server said about itself during the handshake.
type ServerInfo struct {
	Name, Version, Title string
	Instructions         string
	Capabilities         json.RawMessage
}

// CallOptions tune one request. nil means defaults.
type CallOptions struct {
	Timeout time.Duration // 0: Options.RequestTimeout
	// OnProgress receives the params of each notifications/progress for this
	// request. Setting it makes the client put a unique progressToken into
	// params._meta. It runs on the dispatch goroutine; see OnNotification.
	OnProgress func(params json.RawMessage)
	// Meta is a JSON object merged into params._meta (reserved
	// io.modelcontextprotocol/* keys and progressToken are the client's).
	Meta json.RawMessage
}

// Client speaks MCP to one server over a Transport (a process's stdio, or a
// remote connection). It never restarts
// a dead server: the first fatal error fails every pending request, is
// returned by Err, and leaves the client Failed.
type Client struct {
	opts   Options
	server string
	log    *slog.Logger
	t      Transport

	nextID atomic.Int64
	// infoJSON is clientInfo(), encoded once (the options do not change).
	infoJSON []byte

	mu       sync.Mutex
	state    State
	era      string
	version  string
	info     ServerInfo
	meta     []byte // modern: the reserved _meta members, without braces
	metaVer  []byte // modern: the protocol version member alone (relayedMeta)
	capsSeen []byte // client capabilities relayedMeta checked last, sent as they are
	pending  map[string]*call
	progress map[string]*call
	srvReqs  map[string]context.CancelFunc
	err      *Error
	noiseN   int
	noise    []string
	dropped  int

	done     chan struct{}
	doneOnce sync.Once

	// writer
	wmu     sync.Mutex
	wq      [][]byte
	wqBytes int
	wclosed bool
	wsig    chan struct{}
	writing bool         // a write is under way (the writer goroutine's, or a caller's direct one)
	direct  directSender // nil: every line goes through the writer goroutine

	dispatch chan func()
	// queued counts the callbacks sent to dispatch and not yet run to
	// their end. Only the reading goroutine queues callbacks, so when it
	// reads queued as 0 every notification it read before has been
	// handed over.
	queued    atomic.Int64
	stop      chan struct{}
	stopOnce  sync.Once
	baseCtx   context.Context
	cancelCtx context.CancelFunc
	reqSem    chan struct{}
	handlers  sync.WaitGroup

	readerDone   chan struct{}
	writerDone   chan struct{}
	dispatchDone chan struct{}

	teardownOnce sync.Once
	outcome      proc.Outcome
}

type call struct {
	method     string
	ch         chan reply
	onProgress func(json.RawMessage)
	token      string
	ordered    bool // Extras.Ordered
	finished   atomic.Bool
	inflight   atomic.Int32 // progress callbacks queued and not yet run
}

type reply struct {
	msg Message
	err error
}

// NewClient builds a client over an already-running server's stdout (r) and
// stdin (w): the stdio transport. closer, if not nil, tears the server down;
// it is called once by Close after stdin is closed. If r is an io.Closer it
// is closed after closer returns. Call Handshake before any request.
func NewClient(r io.Reader, w io.WriteCloser, closer func() proc.Outcome, opts *Options) *Client {
	o := opts.normalize()
	return New(newStdio(o.Server, r, w, closer, nil, o.MaxLineBytes), &o)
}

// New builds a client over t (see Transport). Call Handshake before any
// request. The client owns t from now on and closes it.
func New(t Transport, opts *Options) *Client {
	o := opts.normalize()
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{
		opts:         o,
		server:       o.Server,
		log:          o.Logger.With("server", o.Server),
		t:            t,
		pending:      map[string]*call{},
		progress:     map[string]*call{},
		srvReqs:      map[string]context.CancelFunc{},
		done:         make(chan struct{}),
		wsig:         make(chan struct{}, 1),
		dispatch:     make(chan func(), dispatchQueue),
		stop:         make(chan struct{}),
		baseCtx:      ctx,
		cancelCtx:    cancel,
		reqSem:       make(chan struct{}, maxServerCalls),
		readerDone:   make(chan struct{}),
		writerDone:   make(chan struct{}),
		dispatchDone: make(chan struct{}),
	}
	c.infoJSON = c.clientInfo()
	c.direct, _ = t.(directSender)
	if c.direct != nil && !c.direct.canSendDirect() {
		c.direct = nil
	}
	go c.readLoop()
	go c.writeLoop()
	go c.dispatchLoop()
	return c
}

// Start spawns the server described by spec and completes the handshake
// within Options.InitializeTimeout (ctx bounds the handshake only; it does
// not own the process afterwards). On failure the process group is torn
// down and the *Error (CodeSpawn, CodeTimeout, CodeProtocol, ...) carries the
// server's stderr tail.
func Start(ctx context.Context, spec proc.Spec, opts *Options) (*Client, error) {
	o := opts.normalize()
	if o.Server == "" {
		o.Server = spec.Server
	}
	if spec.Server == "" {
		spec.Server = o.Server
	}
	p, err := proc.Start(spec)
	if err != nil {
		return nil, &Error{Code: CodeSpawn, Server: o.Server, Op: "spawn", Message: err.Error(), Err: err}
	}
	c := New(newStdio(o.Server, p.Stdout(), p.Stdin(), p.Close, p, o.MaxLineBytes), &o)
	if err := c.Handshake(ctx); err != nil {
		c.Close()
		var e *Error
		if errors.As(err, &e) {
			cp := *e
			cp.StderrTail = p.StderrTail()
			return nil, &cp
		}
		return nil, err
	}
	return c, nil
}

// State reports the lifecycle state.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Era reports "modern" or "legacy" once the handshake succeeded, else "".
func (c *Client) Era() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.era
}

// ProtocolVersion reports the negotiated protocol version.
func (c *Client) ProtocolVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// ServerInfo reports what the server said about itself.
func (c *Client) ServerInfo() ServerInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info
}

// Done is closed when the client has failed or been closed.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns the first fatal error (a closed error after a clean Close), or
// nil while the client is usable.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		return nil
	}
	return c.err
}

// Noise reports how many stdout lines were set aside as not JSON-RPC, and the
// most recent ones (up to 16, each cut to 256 bytes), oldest first.
func (c *Client) Noise() (count int, recent []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.noiseN, append([]string(nil), c.noise...)
}

// Close tears the server down (Transport.Close: for Start, stdin closed,
// then the process group's SIGTERM/SIGKILL escalation) and waits for the
// client's goroutines. Pending requests fail with CodeClosed. The outcome is
// the process group's teardown; over a transport without a local process it
// is complete. Idempotent.
func (c *Client) Close() proc.Outcome {
	c.mu.Lock()
	if c.err == nil {
		c.state = Closed
	}
	c.mu.Unlock()
	c.fail(&Error{Code: CodeClosed, Server: c.server, Op: "close", Message: "client closed"})
	c.teardown()
	c.waitGoroutines()
	return c.outcome
}

func (c *Client) waitGoroutines() {
	all := make(chan struct{})
	go func() {
		<-c.readerDone
		<-c.writerDone
		<-c.dispatchDone
		c.handlers.Wait()
		close(all)
	}()
	t := time.NewTimer(closeWaitBound)
	defer t.Stop()
	select {
	case <-all:
	case <-t.C:
		c.log.Warn("mcp client goroutines did not stop in time; a callback may be blocking", "bound", closeWaitBound)
	}
}

// fail records the first fatal error, fails every pending request and starts
// the teardown. Later calls are no-ops.
func (c *Client) fail(e *Error) {
	if e.Server == "" {
		e.Server = c.server
	}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = e
	if c.state != Closed {
		c.state = Failed
	}
	pend := c.pending
	c.pending = map[string]*call{}
	c.progress = map[string]*call{}
	c.mu.Unlock()
	c.doneOnce.Do(func() { close(c.done) })
	for _, cl := range pend {
		cl.ch <- reply{err: c.callErr(cl.method, e)}
	}
	if e.Op != "close" {
		msg := e.Message
		if msg == "" && e.Err != nil {
			msg = e.Err.Error() // a transport's *Error may carry only its cause
		}
		c.log.Error("mcp server failed", "code", string(e.Code), "op", e.Op, "error", msg)
		go c.teardown()
	}
}

// callErr turns the fatal error into what a pending call returns.
func (c *Client) callErr(method string, fatal *Error) *Error {
	msg := fatal.Message
	if fatal.Op != "" && fatal.Op != method {
		msg = fatal.Op + ": " + msg
	}
	return &Error{Code: fatal.Code, Server: c.server, Op: method, Message: msg, RPC: fatal.RPC, Err: fatal}
}

func (c *Client) teardown() {
	c.teardownOnce.Do(func() {
		c.stopOnce.Do(func() { close(c.stop) })
		c.cancelCtx()
		c.wmu.Lock()
		c.wclosed = true
		c.wq = nil
		c.wqBytes = 0
		c.wmu.Unlock()
		if err := c.t.Close(); err != nil {
			c.log.Warn("closing the transport failed", "error", err.Error())
		}
		c.outcome = proc.Outcome{Complete: true, Stage: "exited"}
		if pt, ok := c.t.(processTransport); ok {
			c.outcome = pt.outcome()
		}
	})
}

// ---- reading ----

func (c *Client) readLoop() {
	defer close(c.readerDone)
	for {
		line, err := c.t.Receive()
		if err != nil {
			c.readFailed(err)
			return
		}
		if c.opts.Scrub != nil {
			line = c.opts.Scrub(line)
		}
		m, err := Classify(line)
		if err != nil {
			if errors.Is(err, ErrNoise) {
				if c.noiseLine(m.Raw) {
					continue
				}
				return
			}
			c.readFailed(err)
			return
		}
		c.handle(m)
		if m.Kind == KindResponse || m.Kind == KindError {
			c.yieldToCaller()
		}
	}
}

// messageHolder is a transport that knows whether its next Receive
// returns without reading (stdio's framer holds a whole line).
type messageHolder interface{ holdsMessage() bool }

// yieldToCaller lets the caller a response just went to run before the
// reader reads on, when there is nothing more to hand out: the read that
// follows finds the pipe empty (one system call that returns EAGAIN, and
// the poller armed), and on one thread (sluice serve on stdio runs Go code
// on one) it would otherwise come before the caller's answer leaves.
// With more lines buffered the reader goes on handing them out first.
func (c *Client) yieldToCaller() {
	if h, ok := c.t.(messageHolder); ok && !h.holdsMessage() {
		runtime.Gosched()
	}
}

// readFailed ends the client on a receive or classification error: the
// transport's own *Error as it is, anything else as the server going away.
func (c *Client) readFailed(err error) {
	select {
	case <-c.stop:
		if !c.failTyped(err) {
			c.fail(&Error{Code: CodeClosed, Server: c.server, Op: "read", Message: "client closed", Err: err})
		}
		return
	default:
	}
	if c.failTyped(err) {
		return
	}
	msg := "the server closed the connection"
	if err != io.EOF {
		msg = "receiving from the server failed: " + err.Error()
	}
	c.fail(&Error{Code: CodeClosed, Server: c.server, Op: "read", Message: msg, Err: err})
}

// failTyped fails the client with err when it is an *Error (a transport's
// or the classifier's), naming this client's server.
func (c *Client) failTyped(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	cp := *e
	cp.Server = c.server
	c.fail(&cp)
	return true
}

// noiseLine sets a non-JSON-RPC line aside; it reports false if the line was
// fatal.
func (c *Client) noiseLine(raw []byte) bool {
	if c.opts.NoiseFatal {
		c.fail(&Error{Code: CodeProtocol, Server: c.server, Op: "read", Err: ErrNoise,
			Message: fmt.Sprintf("server wrote a %d-byte line on stdout that is not a JSON-RPC message (stdoutNoise: fatal)", len(raw))})
		return false
	}
	s := truncUTF8(raw, noiseLineBytes)
	c.mu.Lock()
	c.noiseN++
	if len(c.noise) == noiseKeep {
		copy(c.noise, c.noise[1:])
		c.noise = c.noise[:noiseKeep-1]
	}
	c.noise = append(c.noise, s)
	n := c.noiseN
	c.mu.Unlock()
	if n <= noiseKeep || n&(n-1) == 0 { // the first lines, then at powers of two
		c.log.Warn("mcp server wrote a non-JSON-RPC line on stdout; set aside", "bytes", len(raw), "line", s, "count", n)
	}
	return true
}

func truncUTF8(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n])
}

func (c *Client) handle(m Message) {
	switch m.Kind {
	case KindResponse, KindError:
		key := idKey(m.ID)
		c.mu.Lock()
		if key == "null" {
			key = c.nullIDTarget()
		}
		cl := c.pending[key]
		if cl != nil {
			delete(c.pending, key)
			if cl.token != "" {
				delete(c.progress, cl.token)
			}
		}
		c.mu.Unlock()
		if cl == nil {
			c.log.Debug("dropped a response to no pending request (late, cancelled or unknown)", "id", string(m.ID))
			return
		}
		if cl.inflight.Load() > 0 || (cl.ordered && c.queued.Load() > 0) {
			// Progress callbacks for this call (or, for an ordered call,
			// any notification such as a log message) are still queued:
			// deliver the response after them, so the caller sees every
			// notification that arrived before its result. With nothing
			// queued the response goes to the caller at once: one
			// goroutine hand-off instead of two.
			c.queued.Add(1)
			select {
			case c.dispatch <- func() { cl.ch <- reply{msg: m} }:
				return
			default:
				c.queued.Add(-1)
			}
		}
		cl.ch <- reply{msg: m}
	case KindRequest:
		c.serveRequest(m)
	case KindNotification:
		switch m.Method {
		case "notifications/progress":
			tok := member(m.Params, "progressToken")
			if tok == nil {
				return
			}
			c.mu.Lock()
			cl := c.progress[idKey(tok)]
			c.mu.Unlock()
			if cl == nil || cl.onProgress == nil {
				c.log.Debug("dropped progress for no active request", "token", string(tok))
				return
			}
			params := m.Params
			cl.inflight.Add(1)
			if !c.enqueueCallback(func() {
				defer cl.inflight.Add(-1)
				if !cl.finished.Load() {
					cl.onProgress(params)
				}
			}) {
				cl.inflight.Add(-1)
			}
		case "notifications/cancelled":
			id := member(m.Params, "requestId")
			if id == nil {
				return
			}
			c.mu.Lock()
			cancel := c.srvReqs[idKey(id)]
			c.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		default:
			if c.opts.OnNotification == nil {
				return
			}
			method, params := m.Method, m.Params
			c.enqueueCallback(func() { c.opts.OnNotification(method, params) })
		}
	}
}

// nullIDTarget attributes an error with a null id (the server could not
// read our request's id). Only a lone server/discover probe is attributed:
// any error means legacy there, so the guess cannot do harm and saves the
// probe's timeout. Everything else is logged and dropped. c.mu is held.
func (c *Client) nullIDTarget() string {
	if len(c.pending) == 1 {
		for k, cl := range c.pending {
			if cl.method == "server/discover" {
				return k
			}
		}
	}
	c.log.Warn("server reported an error for a request it could not identify (null id)")
	return "null"
}

func (c *Client) enqueueCallback(f func()) bool {
	c.queued.Add(1)
	select {
	case c.dispatch <- f:
		return true
	default:
		c.queued.Add(-1)
		c.mu.Lock()
		c.dropped++
		n := c.dropped
		c.mu.Unlock()
		c.log.Warn("notification callback queue full; dropped a notification", "dropped", n)
		return false
	}
}

func (c *Client) dispatchLoop() {
	defer close(c.dispatchDone)
	for {
		select {
		case f := <-c.dispatch:
			f()
			c.queued.Add(-1)
		case <-c.stop:
			return
		}
	}
}

// ---- server -> client requests ----

func (c *Client) serveRequest(m Message) {
	if c.opts.OnRequest == nil {
		res, e := builtinAnswer(m.Method)
		c.answer(m.ID, res, e)
		return
	}
	select {
	case c.reqSem <- struct{}{}:
	default:
		c.answer(m.ID, nil, &RPCError{Code: rpcInternalError, Message: "too many concurrent requests from the server"})
		return
	}
	key := idKey(m.ID)
	ctx, cancel := context.WithCancel(c.baseCtx)
	c.mu.Lock()
	c.srvReqs[key] = cancel
	c.mu.Unlock()
	c.handlers.Add(1)
	go func() {
		defer c.handlers.Done()
		defer func() { <-c.reqSem }()
		defer func() {
			c.mu.Lock()
			delete(c.srvReqs, key)
			c.mu.Unlock()
			cancel()
		}()
		res, err := c.opts.OnRequest(ctx, m.Method, m.Params)
		if ctx.Err() != nil {
			return // cancelled by the server or closing: no reply
		}
		var rpcErr *RPCError
		switch {
		case errors.Is(err, ErrMethodNotFound):
			res, e := builtinAnswer(m.Method)
			c.answer(m.ID, res, e)
		case errors.As(err, &rpcErr):
			c.answer(m.ID, nil, rpcErr)
		case err != nil:
			c.log.Warn("OnRequest failed", "method", m.Method, "error", err.Error())
			c.answer(m.ID, nil, &RPCError{Code: rpcInternalError, Message: "internal error"})
		default:
			if len(res) == 0 {
				res = json.RawMessage("{}")
			}
			if m.Method == "elicitation/create" {
				res = withElicitDefaults(m.Params, res)
			}
			out, verr := outboundJSON(res)
			if verr != nil {
				c.log.Warn("OnRequest returned invalid JSON", "method", m.Method)
				c.answer(m.ID, nil, &RPCError{Code: rpcInternalError, Message: "internal error"})
				return
			}
			c.answer(m.ID, out, nil)
		}
	}()
}

func builtinAnswer(method string) (json.RawMessage, *RPCError) {
	switch method {
	case "ping":
		return json.RawMessage(`{}`), nil
	case "roots/list":
		return json.RawMessage(`{"roots":[]}`), nil
	}
	return nil, &RPCError{Code: rpcMethodNotFound, Message: "Method not found"}
}

func (c *Client) answer(id json.RawMessage, result json.RawMessage, e *RPCError) {
	b := make([]byte, 0, 64+len(result))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	if e != nil {
		eb, _ := json.Marshal(e)
		b = append(b, `,"error":`...)
		b = append(b, eb...)
	} else {
		b = append(b, `,"result":`...)
		b = append(b, result...)
	}
	b = append(b, '}')
	_ = c.enqueue(b, "respond")
}

// ---- writing ----

// enqueue queues one encoded line (or writes it at once, see sendDirect);
// the client owns line from now on, its spare capacity included. A line
// larger than the cap on its own is
// refused (CodeOverload, not fatal); a queue that would cross the cap means
// the server stopped reading: fatal CodeOverload.
func (c *Client) enqueue(line []byte, op string) error {
	_, err := c.send(line, op, false)
	return err
}

// send is enqueue; direct allows the caller to write line itself (see
// sendDirect): a request with no other in flight. Requests that overlap
// queue, so the writer goroutine sends them together in one write.
// written reports that the caller's own write took the whole line: line
// is then the caller's again (nothing else holds it). Otherwise line, or
// its tail, may wait in the queue and must be left alone for good.
func (c *Client) send(line []byte, op string, direct bool) (written bool, _ error) {
	c.wmu.Lock()
	if c.wclosed {
		c.wmu.Unlock()
		return false, c.closedErr(op)
	}
	if len(line) > c.opts.MaxOutboundBytes {
		c.wmu.Unlock()
		return false, &Error{Code: CodeOverload, Server: c.server, Op: op,
			Message: fmt.Sprintf("outbound message of %d bytes exceeds the %d-byte outbound cap", len(line), c.opts.MaxOutboundBytes)}
	}
	if c.wqBytes+len(line) > c.opts.MaxOutboundBytes {
		queued := c.wqBytes
		c.wmu.Unlock()
		e := &Error{Code: CodeOverload, Server: c.server, Op: op,
			Message: fmt.Sprintf("server stopped reading its stdin: %d bytes already queued, cap %d", queued, c.opts.MaxOutboundBytes)}
		c.fail(e)
		return false, e
	}
	c.wqBytes += len(line)
	if direct && c.direct != nil && !c.writing && len(c.wq) == 0 {
		// Nothing is queued or being written: the caller writes its
		// line itself, sparing the hand-off to the writer goroutine.
		c.writing = true
		c.wmu.Unlock()
		return c.sendDirect(line), nil
	}
	c.wq = append(c.wq, line)
	c.wmu.Unlock()
	c.signalWriter()
	return false, nil
}

func (c *Client) signalWriter() {
	select {
	case c.wsig <- struct{}{}:
	default:
	}
}

// directWait bounds a caller's own write of its line (see sendDirect) on
// a pipe written through os.File: a pipe with room takes a line at once;
// a full one means the server is not reading, and the caller must not
// wait on it. A pipe written with raw system calls takes what it has
// room for and the caller never waits.
const directWait = time.Millisecond

// sendDirect writes line from the caller's goroutine (c.writing set by
// the caller). What the transport did not take at once (errNotTaken) is
// put first in the queue for the writer goroutine, which finishes the
// line without a deadline: the framing stays whole and the caller returns
// to waiting for its answer, which its context and timeout bound as ever.
//
// It reports whether the transport took the whole line (and its newline):
// only then is nothing left of line in the queue.
func (c *Client) sendDirect(line []byte) (written bool) {
	n, err := c.direct.sendDirect(line)
	c.wmu.Lock()
	c.writing = false
	if err == nil {
		c.wqBytes -= len(line)
		more := len(c.wq) > 0
		c.wmu.Unlock()
		if more {
			c.signalWriter()
		}
		return true
	}
	if errors.Is(err, errNotTaken) && !c.wclosed {
		// n < len(line)+1: the rest of the line (Send adds the newline).
		c.wqBytes -= n
		c.wq = append([][]byte{line[n:]}, c.wq...)
		c.wmu.Unlock()
		c.signalWriter()
		return false
	}
	c.wmu.Unlock()
	c.writeFailed(err)
	return false
}

func (c *Client) closedErr(op string) error {
	c.mu.Lock()
	e := c.err
	c.mu.Unlock()
	if e != nil {
		return c.callErr(op, e)
	}
	return &Error{Code: CodeClosed, Server: c.server, Op: op, Message: "client closed"}
}

// coalesceBytes is the stdio transport's write buffer: small messages
// queued together leave in one write.
const coalesceBytes = 64 << 10

// writerHold is set by tests only (nil otherwise: one load per wake of
// the writer): it runs in the writer goroutine before each look at the
// queue, so a test can hold the writer while a line's tail waits there.
var writerHold atomic.Pointer[func(*Client)]

// writeLoop drains the outbound queue into the transport, in order, and
// flushes it whenever the queue runs empty.
func (c *Client) writeLoop() {
	defer close(c.writerDone)
	for {
		if h := writerHold.Load(); h != nil {
			(*h)(c)
		}
		c.wmu.Lock()
		if c.writing || len(c.wq) == 0 {
			// A caller writing directly signals when it is done.
			c.wmu.Unlock()
			select {
			case <-c.wsig:
				continue
			case <-c.stop:
				return
			}
		}
		q := c.wq
		c.wq = nil
		c.writing = true
		c.wmu.Unlock()
		for i, msg := range q {
			err := c.t.Send(msg)
			if err == nil && i == len(q)-1 {
				c.wmu.Lock()
				more := len(c.wq) > 0
				c.wmu.Unlock()
				if !more {
					err = c.t.Flush()
				}
			}
			c.wmu.Lock()
			c.wqBytes -= len(msg)
			c.wmu.Unlock()
			if err != nil {
				c.writeFailed(err)
				return
			}
		}
		c.wmu.Lock()
		c.writing = false
		c.wmu.Unlock()
	}
}

// writeFailed ends the client on a send error (unless it is closing).
func (c *Client) writeFailed(err error) {
	select {
	case <-c.stop:
		return
	default:
	}
	if c.failTyped(err) {
		return
	}
	c.fail(&Error{Code: CodeClosed, Server: c.server, Op: "write", Message: "sending to the server failed: " + err.Error(), Err: err})
}

// ---- requests ----

// Request sends a request and waits for its result (raw JSON). Params must be
// a JSON object (or nil). In the modern era the client adds the reserved
// _meta fields. A JSON-RPC error answer is an *Error with CodeServer and the
// error object in RPC.
func (c *Client) Request(ctx context.Context, method string, params json.RawMessage, o *CallOptions) (json.RawMessage, error) {
	if err := c.ready(method); err != nil {
		return nil, err
	}
	return c.request(ctx, method, params, o, false, nil)
}

// request is Request once the client is ready; checked says params are
// CallTool's own (see relayedMeta). isError, when set, receives the
// result's isError member (nil: none), looked up in the walk that finds
// its resultType.
func (c *Client) request(ctx context.Context, method string, params json.RawMessage, o *CallOptions, checked bool, isError *[]byte) (json.RawMessage, error) {
	if o == nil {
		o = &CallOptions{}
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = c.opts.RequestTimeout
	}
	for round := 0; ; round++ {
		m, err := c.roundTrip(ctx, method, params, o, timeout, true, checked && round == 0)
		if err != nil {
			return nil, err
		}
		var rt []byte // the result's resultType, looked up once
		if m.Kind == KindResponse {
			if isError != nil {
				rt, *isError = member2(m.Result, "resultType", "isError")
			} else {
				rt = member(m.Result, "resultType")
			}
		}
		asks := string(rt) == `"input_required"`
		x := extrasFrom(ctx)
		if x != nil && x.InputRequired && (x.Method == "" || x.Method == method) && asks {
			return m.Result, nil // relayed as is (see Extras)
		}
		if !asks || c.Era() != EraModern { // not inputRequired(m)
			return c.result(method, m, rt)
		}
		if round >= maxInputRounds {
			return nil, &Error{Code: CodeProtocol, Server: c.server, Op: method, Message: "the server still asks for input after " + strconv.Itoa(maxInputRounds) + " retries"}
		}
		// Multi-round-trip (see mrtr.go): answer, then retry under a new id.
		if params, err = c.answerInput(ctx, method, params, m.Result); err != nil {
			return nil, err
		}
		if x != nil && len(x.Params) > 0 {
			// A relayed retry's params were for the first round only.
			y := *x
			y.Params = nil
			ctx = WithExtras(ctx, y)
		}
	}
}

// result turns a response into a raw result or a typed error; rt is the
// result's resultType member (nil: none).
func (c *Client) result(method string, m Message, rt []byte) (json.RawMessage, error) {
	if m.Kind == KindError {
		return nil, &Error{Code: CodeServer, Server: c.server, Op: method, RPC: m.Error}
	}
	if len(m.Result) == 0 || m.Result[0] != '{' {
		return nil, &Error{Code: CodeProtocol, Server: c.server, Op: method, Message: "malformed result: not a JSON object"}
	}
	if c.Era() == "modern" {
		if err := resultTypeProblem(rt); err != "" {
			return nil, &Error{Code: CodeProtocol, Server: c.server, Op: method, Message: err}
		}
	}
	return m.Result, nil
}

// checkResultType applies the 2026-07-28 rule: missing resultType means
// complete; input_required is answered by request (MRTR, mrtr.go) and seen
// here only when that stopped; anything else is invalid.
func checkResultType(res []byte) string {
	return resultTypeProblem(member(res, "resultType"))
}

// resultTypeProblem is checkResultType for the resultType member rt.
func resultTypeProblem(rt []byte) string {
	switch string(rt) {
	case "", `"complete"`:
		return ""
	case `"input_required"`:
		return "server asked for client input (resultType input_required), which sluice does not provide"
	}
	return "malformed result: unknown resultType " + truncUTF8(rt, 64)
}

func (c *Client) ready(op string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.callErr(op, c.err)
	}
	if c.state != Ready {
		return &Error{Code: CodeClosed, Server: c.server, Op: op, Message: "client is not ready (state " + c.state.String() + "); call Handshake first"}
	}
	return nil
}

// roundTrip sends one request and waits for its response. cancellable=false
// (initialize, discover) never sends notifications/cancelled.
func (c *Client) roundTrip(ctx context.Context, method string, params json.RawMessage, o *CallOptions, timeout time.Duration, cancellable, checked bool) (Message, error) {
	id := c.nextID.Add(1)
	idText := strconv.FormatInt(id, 10)
	cl := getCall(method, o.OnProgress)
	x := extrasFrom(ctx)
	if !cancellable {
		x = nil
	}
	if x != nil {
		cl.ordered = x.Ordered
	}
	if o.OnProgress != nil {
		cl.token = `"p` + idText + `"`
	}
	var line []byte
	var done bool
	var err error
	lb := getBuf()
	if x != nil && len(x.ClientCapabilities) > 0 {
		line, done, err = c.relayedMeta(appendEnvelope(lb.room(256+len(params)+len(x.ClientCapabilities)+len(c.infoJSON)+len(cl.token)), idText, method), method, params, o.Meta, cl.token, x, checked)
	}
	if done {
		line = append(line, '}')
	} else {
		var p json.RawMessage
		p, err = c.withMeta(params, o.Meta, cl.token)
		if err == nil && x != nil {
			p, err = c.applyExtras(method, p, x)
		}
		line = appendRequest(lb.room(64+len(method)+len(p)), idText, method, p)
	}
	if err != nil {
		putBuf(lb, nil)
		return Message{}, &Error{Code: CodeProtocol, Server: c.server, Op: method, Message: "invalid params: " + err.Error(), Err: err}
	}

	c.mu.Lock()
	if c.err != nil {
		e := c.callErr(method, c.err)
		c.mu.Unlock()
		return Message{}, e
	}
	c.pending[idText] = cl
	alone := len(c.pending) == 1
	if cl.token != "" {
		c.progress[cl.token] = cl
	}
	c.mu.Unlock()

	written, err := c.send(line, method, alone)
	if written {
		putBuf(lb, line) // written whole by this goroutine: nothing else holds it
	}
	if err != nil {
		cl.finished.Store(true)
		c.unregister(idText, cl)
		return Message{}, err
	}
	t := getTimer(timeout)
	defer putTimer(t)
	select {
	case r := <-cl.ch:
		cl.finished.Store(true)
		putCall(cl)
		return r.msg, r.err
	case <-ctx.Done():
		cl.finished.Store(true)
		code, why := CodeAborted, "cancelled by the caller"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			code, why = CodeTimeout, "caller's deadline expired"
		}
		if c.unregister(idText, cl) && cancellable {
			c.cancelRemote(idText, why)
		}
		return Message{}, &Error{Code: code, Server: c.server, Op: method, Message: why, Err: ctx.Err()}
	case <-c.done:
		cl.finished.Store(true)
		select {
		case r := <-cl.ch:
			return r.msg, r.err
		default:
		}
		c.unregister(idText, cl)
		return Message{}, c.closedErr(method)
	case <-t.C:
		cl.finished.Store(true)
		why := "no response within " + timeout.String()
		if c.unregister(idText, cl) && cancellable {
			c.cancelRemote(idText, "timed out after "+timeout.String())
		}
		return Message{}, &Error{Code: CodeTimeout, Server: c.server, Op: method, Message: why}
	}
}

// calls are the requests' call records and reply channels, reused. A
// record goes back only from a call that received its reply and never
// registered a progress token: then nothing else holds it (whoever sends
// the reply is done with the record once the buffered send returns, and
// no progress callback can name it). A call that gives up (cancelled,
// timed out, client closed) leaves its record to the collector, since the
// reader may still be about to deliver to it.
var calls sync.Pool

func getCall(method string, onProgress func(json.RawMessage)) *call {
	if cl, ok := calls.Get().(*call); ok {
		cl.method, cl.onProgress = method, onProgress
		return cl
	}
	return &call{method: method, ch: make(chan reply, 1), onProgress: onProgress}
}

func putCall(cl *call) {
	if cl.token != "" || cl.inflight.Load() != 0 || len(cl.ch) != 0 {
		return
	}
	ch := cl.ch
	*cl = call{ch: ch}
	calls.Put(cl)
}

// bufs are the buffers requests are built in (CallTool's params and the
// request's line), reused. A params buffer goes back when its request has
// returned (its line was built from a copy); a line only when the caller
// wrote it whole itself (Client.send reports written): a line handed to
// the writer goroutine, or whose tail is queued after a partial write, is
// left to the collector, since the writer may still be reading it. A
// buffer that grew beyond maxPooledBuf is not kept.
var bufs sync.Pool

// maxPooledBuf bounds what bufs keeps: a large argument's buffer is not
// worth holding for the next small call.
const maxPooledBuf = 16 << 10

// buf is a reusable byte buffer (its box goes round the pool with it, so
// a give-back allocates nothing).
type buf struct{ b []byte }

func getBuf() *buf {
	if b, ok := bufs.Get().(*buf); ok {
		return b
	}
	return &buf{}
}

// room returns the buffer emptied, with room for at least n bytes.
func (b *buf) room(n int) []byte {
	if cap(b.b) < n {
		b.b = make([]byte, 0, n)
	}
	return b.b[:0]
}

// putBuf gives b back holding used, the bytes last built in it (they may
// have moved to a larger array while appended to; nil: b's own).
func putBuf(b *buf, used []byte) {
	if used != nil {
		b.b = used
	}
	if cap(b.b) > maxPooledBuf {
		return
	}
	b.b = b.b[:0]
	bufs.Put(b)
}

// timers are the requests' response timers, reused: since Go 1.23 a
// stopped timer's channel delivers nothing stale, so a timer stopped by
// one request is as good as new for the next.
var timers sync.Pool

func getTimer(d time.Duration) *time.Timer {
	if t, ok := timers.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

func putTimer(t *time.Timer) {
	t.Stop()
	timers.Put(t)
}

// unregister removes a pending call; it reports whether it was still pending.
func (c *Client) unregister(id string, cl *call) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl.token != "" {
		delete(c.progress, cl.token)
	}
	if c.pending[id] == cl {
		delete(c.pending, id)
		return true
	}
	return false
}

func (c *Client) cancelRemote(id, reason string) {
	rb, _ := json.Marshal(reason)
	line := make([]byte, 0, 96+len(rb))
	line = append(line, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`...)
	line = append(line, id...)
	line = append(line, `,"reason":`...)
	line = append(line, rb...)
	line = append(line, "}}"...)
	_ = c.enqueue(line, "notifications/cancelled")
}

// Notify sends a notification.
func (c *Client) Notify(method string, params json.RawMessage) error {
	c.mu.Lock()
	if c.err != nil {
		e := c.callErr(method, c.err)
		c.mu.Unlock()
		return e
	}
	c.mu.Unlock()
	var p json.RawMessage
	if len(params) > 0 {
		var err error
		if p, err = outboundJSON(params); err != nil {
			return &Error{Code: CodeProtocol, Server: c.server, Op: method, Message: "invalid params: " + err.Error(), Err: err}
		}
	}
	b := make([]byte, 0, 64+len(p))
	b = append(b, `{"jsonrpc":"2.0","method":`...)
	b = appendString(b, method)
	if p != nil {
		b = append(b, `,"params":`...)
		b = append(b, p...)
	}
	b = append(b, '}')
	return c.enqueue(b, method)
}

func encodeRequest(id, method string, params json.RawMessage) []byte {
	return appendRequest(make([]byte, 0, 64+len(method)+len(params)), id, method, params) // room for the stdio newline too
}

// appendRequest appends a request's line to b (encodeRequest's bytes).
func appendRequest(b []byte, id, method string, params json.RawMessage) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"method":`...)
	b = appendString(b, method)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// appendEnvelope appends a request's line up to its params' value; the
// params and a closing brace complete it (encodeRequest's bytes).
func appendEnvelope(b []byte, id, method string) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"method":`...)
	b = appendString(b, method)
	return append(b, `,"params":`...)
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// ---- tools ----

// Tool is one tool as listed by the server. Schemas and annotations stay raw.
type Tool struct {
	Name, Title, Description string
	InputSchema              json.RawMessage
	OutputSchema             json.RawMessage
	Annotations              json.RawMessage
	Raw                      json.RawMessage // the whole tool object as sent
}

// ToolList is the result of ListTools.
type ToolList struct {
	Tools     []Tool
	Truncated bool // the server offered more than MaxTools tools or MaxToolPages pages
}

// ListTools lists the server's tools, following nextCursor. It stops at
// MaxTools tools or MaxToolPages pages (Truncated). A repeated cursor is a
// protocol error. In the modern era an empty-string cursor is a cursor; in
// the legacy era it ends the list.
func (c *Client) ListTools(ctx context.Context) (*ToolList, error) {
	out := &ToolList{}
	truncated, err := c.paginate(ctx, "tools/list", "tools", MaxTools, func(page, i int, raw json.RawMessage) error {
		t, err := parseTool(raw)
		if err != nil {
			return &Error{Code: CodeProtocol, Server: c.server, Op: "tools/list",
				Message: fmt.Sprintf("malformed tool %d on page %d: %s", i, page+1, err.Error())}
		}
		out.Tools = append(out.Tools, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	out.Truncated = truncated
	return out, nil
}

// List returns every item of a paginated list method (resources/list,
// resources/templates/list, prompts/list ...): the raw members of the
// result's field array across pages, under the same rules and bounds as
// ListTools (at most MaxTools items and MaxToolPages pages; truncated says
// the server offered more).
func (c *Client) List(ctx context.Context, method, field string) (items []json.RawMessage, truncated bool, err error) {
	truncated, err = c.paginate(ctx, method, field, MaxTools, func(_, _ int, raw json.RawMessage) error {
		items = append(items, raw)
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return items, truncated, nil
}

// paginate is the one cursor loop: it requests method page by page and
// hands each member of field to each, stopping after max items or
// MaxToolPages pages (truncated). A repeated cursor is a protocol error; in
// the modern era an empty-string cursor is a cursor, in the legacy era it
// ends the list.
func (c *Client) paginate(ctx context.Context, method, field string, max int, each func(page, i int, raw json.RawMessage) error) (truncated bool, err error) {
	if err := c.ready(method); err != nil {
		return false, err
	}
	modern := c.Era() == "modern"
	seen := map[string]bool{}
	n := 0
	var cursor json.RawMessage
	for page := 0; ; page++ {
		if page == MaxToolPages {
			return true, nil
		}
		var params json.RawMessage
		if cursor != nil {
			params = append(append(json.RawMessage(`{"cursor":`), cursor...), '}')
		}
		res, err := c.request(ctx, method, params, nil, false, nil)
		if err != nil {
			return false, err
		}
		var pg map[string]json.RawMessage
		var list []json.RawMessage
		if err := json.Unmarshal(res, &pg); err != nil || json.Unmarshal(pg[field], &list) != nil || list == nil && pg[field] == nil {
			return false, &Error{Code: CodeProtocol, Server: c.server, Op: method, Message: fmt.Sprintf("malformed result: %q is not an array", field), Err: err}
		}
		for i, raw := range list {
			if n == max {
				return true, nil
			}
			if err := each(page, i, raw); err != nil {
				return false, err
			}
			n++
		}
		next := pg["nextCursor"]
		if len(next) == 0 || string(next) == "null" || (!modern && string(next) == `""`) {
			return false, nil
		}
		if next[0] != '"' {
			return false, &Error{Code: CodeProtocol, Server: c.server, Op: method, Message: "malformed result: \"nextCursor\" is not a string"}
		}
		k := idKey(next)
		if seen[k] {
			return false, &Error{Code: CodeProtocol, Server: c.server, Op: method,
				Message: fmt.Sprintf("server repeated cursor %s on page %d; stopping to avoid a loop", truncUTF8(next, 64), page+1)}
		}
		seen[k] = true
		if n == max {
			return true, nil
		}
		cursor = next
	}
}

func parseTool(raw json.RawMessage) (Tool, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return Tool{}, errors.New("not an object")
	}
	var w struct {
		Name         *string         `json:"name"`
		Title        string          `json:"title"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
		Annotations  json.RawMessage `json:"annotations"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return Tool{}, err
	}
	if w.Name == nil || *w.Name == "" {
		return Tool{}, errors.New("no name")
	}
	return Tool{Name: *w.Name, Title: w.Title, Description: w.Description,
		InputSchema: w.InputSchema, OutputSchema: w.OutputSchema, Annotations: w.Annotations, Raw: raw}, nil
}

// CallTool calls a tool and returns its raw result. args must be a JSON
// object (nil means {}). A result whose isError is present but not a boolean
// is a protocol error; a JSON-RPC error answer is CodeServer.
func (c *Client) CallTool(ctx context.Context, name string, args json.RawMessage, o *CallOptions) (json.RawMessage, error) {
	if err := c.ready("tools/call"); err != nil {
		return nil, err
	}
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	a, err := outboundJSON(args)
	if err != nil || a[0] != '{' {
		if err == nil {
			err = errors.New("arguments are not a JSON object")
		}
		return nil, &Error{Code: CodeProtocol, Server: c.server, Op: "tools/call", Message: "invalid arguments: " + err.Error(), Err: err}
	}
	pb := getBuf()
	p := pb.room(32 + len(name) + len(a))
	p = append(p, `{"name":`...)
	p = appendString(p, name)
	p = append(p, `,"arguments":`...)
	p = append(p, a...)
	p = append(p, '}')
	var ie []byte
	res, err := c.request(ctx, "tools/call", p, o, true, &ie)
	// The request's line was made from a copy of p, and nothing else
	// keeps it (not an error, not a retry: both end with request).
	putBuf(pb, p)
	if err != nil {
		return nil, err
	}
	if ie != nil && string(ie) != "true" && string(ie) != "false" {
		return nil, &Error{Code: CodeProtocol, Server: c.server, Op: "tools/call", Message: "malformed result: \"isError\" is not a boolean"}
	}
	return res, nil
}
