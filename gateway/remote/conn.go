package remote

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Transport names, as written in declarations.
const (
	TransportAuto       = "auto"
	TransportStreamable = "streamable-http"
	TransportSSE        = "sse"
)

// Defaults.
const (
	DefaultMaxMessageBytes = 4 << 20
	DefaultConnectTimeout  = 15 * time.Second
	maxConcurrentPosts     = 32
	maxPostAttempts        = 3
	maxStreamResumes       = 5
	maxGetFailures         = 5
	maxErrorBodyBytes      = 64 << 10
	closeDeleteTimeout     = 3 * time.Second
	backoffBase            = 250 * time.Millisecond
	backoffCap             = 4 * time.Second
	maxRetryAfter          = 10 * time.Second
)

// JSON-RPC error code of the responses the transport writes itself when a
// request could not be delivered or answered (-32603, internal error: the
// server never produced an answer of its own).
const codeTransport = -32603

// Authorizer supplies credentials for every HTTP request and is told when
// the server refuses them. gateway/oauth implements it; this package knows
// nothing about OAuth.
type Authorizer interface {
	// Authorization returns the Authorization header value, "" for none.
	Authorization(ctx context.Context) (string, error)
	// Challenge is called when the server answered 401, or 403 with
	// error="insufficient_scope"; wwwAuthenticate holds the response's
	// WWW-Authenticate values. Returning nil means new credentials are in
	// place and the request may be retried once; otherwise the error
	// (wrapping ErrAuthRequired when the user must act) is reported.
	Challenge(ctx context.Context, status int, wwwAuthenticate []string) error
}

// Options configures a Conn. The zero value of every field is the
// documented default; URL is required.
type Options struct {
	Server    string      // server id, named in errors and logs
	URL       string      // the MCP endpoint (streamable HTTP) or the SSE URL (legacy)
	Headers   http.Header // sent on every request; values already resolved
	Transport string      // "" or "auto": streamable HTTP, then legacy SSE; "streamable-http"; "sse"
	// AllowPrivate turns off the SSRF guard's address check (user-scope
	// declarations only; the caller enforces that).
	AllowPrivate    bool
	MaxMessageBytes int           // per message, both directions; default 4 MiB
	ConnectTimeout  time.Duration // legacy SSE: waiting for the endpoint event; default 15s
	Authorizer      Authorizer    // nil: no credentials beyond Headers
	TLSConfig       *tls.Config   // nil: system roots
	UserAgent       string        // default "sluice"
	Logger          *slog.Logger  // default: discard
	// ScrubText, when set, rewrites the body of an HTTP error answer
	// before an error carries it (the gateway hides the credentials it
	// sends there); the messages themselves are the client core's.
	ScrubText func([]byte) []byte
}

const (
	modeUnknown = iota
	modeStreamable
	modeSSE
)

// Conn is one connection to a remote MCP server. Send posts one JSON-RPC
// message; every message the server sends (responses, notifications,
// server->client requests) comes out of Receive in arrival order per
// stream. It implements the MCP client core's Transport (Send, Flush,
// Receive, Close). Every request sent gets exactly one response out of
// Receive: the server's,
// or one the transport writes (code -32603) when the request could not be
// delivered or its stream ended first.
type Conn struct {
	o   Options
	u   *url.URL
	hc  *http.Client
	log *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	in     chan []byte
	done   chan struct{}
	err    error
	sem    chan struct{}
	wg     sync.WaitGroup

	failOnce  sync.Once
	closeOnce sync.Once

	mu         sync.Mutex
	closed     bool
	mode       int
	confirmed  bool // a streamable POST succeeded: never fall back
	session    string
	version    string // negotiated legacy protocol version
	getRunning bool
	getReady   chan struct{} // closed once the first GET attempt has an answer
	pending    map[string]*pendingReq
	legacy     *sseSession
	params     map[string][]paramHeader // tool -> x-mcp-header declarations
	pushes     bool                     // the legacy session has server-initiated messages (GET stream)
}

type pendingReq struct {
	env    envelope
	body   []byte
	ctx    context.Context
	cancel context.CancelFunc
	sent   chan struct{}
	once   sync.Once
}

func (p *pendingReq) markSent() { p.once.Do(func() { close(p.sent) }) }

// Dial checks the options and the URL and returns a connection. Streamable
// HTTP makes no request until the first Send; "sse" opens the event stream
// and waits for its endpoint within ctx and ConnectTimeout.
func Dial(ctx context.Context, opts *Options) (*Conn, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	u, err := CheckURL(o.URL)
	if err != nil {
		return nil, err
	}
	switch o.Transport {
	case "":
		o.Transport = TransportAuto
	case TransportAuto, TransportStreamable, TransportSSE:
	default:
		return nil, fmt.Errorf("remote: transport %q is not auto, streamable-http or sse", o.Transport)
	}
	for k, vs := range o.Headers {
		for _, v := range vs {
			if strings.ContainsAny(v, "\r\n\x00") || strings.ContainsAny(k, "\r\n\x00: ") {
				return nil, fmt.Errorf("remote: header %q holds a control character", k)
			}
		}
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.UserAgent == "" {
		o.UserAgent = "sluice"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	base, cancel := context.WithCancel(context.Background())
	c := &Conn{
		o:       o,
		u:       u,
		hc:      NewHTTPClient(ClientOptions{AllowPrivate: o.AllowPrivate, TLSConfig: o.TLSConfig}),
		log:     o.Logger.With("server", o.Server, "url", Describe(u)),
		ctx:     base,
		cancel:  cancel,
		in:      make(chan []byte, 8),
		done:    make(chan struct{}),
		sem:     make(chan struct{}, maxConcurrentPosts),
		pending: map[string]*pendingReq{},
	}
	switch o.Transport {
	case TransportStreamable:
		c.mode = modeStreamable
	case TransportSSE:
		s, err := c.dialSSE(ctx)
		if err != nil {
			cancel()
			return nil, err
		}
		c.mode = modeSSE
		c.legacy = s
	}
	return c, nil
}

// Transport reports the transport in use: "streamable-http", "sse", or ""
// while auto has not decided.
func (c *Conn) Transport() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.mode {
	case modeStreamable:
		return TransportStreamable
	case modeSSE:
		return TransportSSE
	}
	return ""
}

// SessionID is the Mcp-Session-Id the server assigned, if any.
func (c *Conn) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// Done is closed when the connection fails or is closed.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is the error that ended the connection, nil while it is usable.
func (c *Conn) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

func (c *Conn) fail(err error) {
	c.failOnce.Do(func() {
		c.err = err
		close(c.done)
		c.cancel()
	})
}

// Receive returns the next message from the server (one JSON-RPC object,
// compact). After the connection ends it returns the queued messages, then
// the error that ended it; after Close it returns promptly.
func (c *Conn) Receive() ([]byte, error) { return c.recv(context.Background()) }

// Flush is part of the client core's Transport contract; every Send is
// already on its way, so there is nothing to write out.
func (c *Conn) Flush() error { return nil }

func (c *Conn) recv(ctx context.Context) ([]byte, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.done:
		select {
		case m := <-c.in:
			return m, nil
		default:
		}
		return nil, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close aborts every request and stream, waits for the goroutines, and
// ends a streamable-HTTP session with DELETE (bounded; a 405 is fine).
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		session := c.session
		mode := c.mode
		version := c.version
		c.mu.Unlock()
		c.fail(ErrClosed)
		c.wg.Wait()
		if session != "" && mode == modeStreamable {
			ctx, cancel := context.WithTimeout(context.Background(), closeDeleteTimeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.u.String(), nil)
			if err == nil {
				c.baseHeaders(req, ctx)
				req.Header.Set("Mcp-Session-Id", session)
				if version != "" {
					req.Header.Set("MCP-Protocol-Version", version)
				}
				if resp, err := c.hc.Do(req); err == nil {
					drain(resp)
					c.log.Debug("session deleted", "status", resp.StatusCode)
				} else {
					c.log.Debug("session delete failed", "err", HideURLError(err))
				}
			}
		}
		c.hc.CloseIdleConnections()
	})
	return nil
}

// goRun starts f as a tracked goroutine unless the connection is closed.
func (c *Conn) goRun(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	select {
	case <-c.done:
		return false
	default:
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

func (c *Conn) closedErr() error {
	if err := c.Err(); err != nil && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return ErrClosed
}

// Send delivers one JSON-RPC message. For a request it returns once the
// request has been written (or has failed; the failure then arrives as the
// request's response from Receive), never waiting for the answer; for a
// notification or response once the server accepted it. A request's
// lifetime ends with its response, its cancellation (notifications/cancelled
// for its id) or Close. An error is fatal to the client core; a request
// that cannot be delivered is not an error here but an answer.
func (c *Conn) Send(msg []byte) error {
	ctx := context.Background()
	if len(msg) > c.o.MaxMessageBytes {
		return fmt.Errorf("%w: outbound message of %d bytes (cap %d)", ErrMessageTooLarge, len(msg), c.o.MaxMessageBytes)
	}
	env, err := parseEnvelope(msg)
	if err != nil {
		return err
	}
	select {
	case <-c.done:
		return c.closedErr()
	default:
	}
	if env.method == "notifications/cancelled" && env.cancelled != nil {
		// Closing the request's stream is the cancellation in the modern
		// era (no notification is sent then); in the legacy era it is
		// sent too, and the late response is no longer waited for.
		if modern, found := c.abort(env.cancelled); found && modern {
			return nil
		}
	}
	c.mu.Lock()
	mode, legacy := c.mode, c.legacy
	c.mu.Unlock()
	if mode == modeSSE {
		return legacy.send(ctx, msg, env)
	}
	if env.isRequest() {
		return c.startRequest(ctx, msg, env)
	}
	return c.postOneWay(ctx, msg, env)
}

// abort cancels the POST carrying request id, reporting whether it was
// found and whether it was a modern request.
func (c *Conn) abort(id []byte) (modern, found bool) {
	c.mu.Lock()
	p := c.pending[string(id)]
	c.mu.Unlock()
	if p == nil {
		return false, false
	}
	p.cancel()
	return p.env.version != "", true
}

func (c *Conn) startRequest(ctx context.Context, msg []byte, env envelope) error {
	if env.method == "initialize" && (bytes.Contains(msg, []byte(`"roots"`)) || bytes.Contains(msg, []byte(`"sampling"`)) || bytes.Contains(msg, []byte(`"elicitation"`))) {
		c.mu.Lock()
		c.pushes = true // the server may send requests for what the client offers
		c.mu.Unlock()
	}
	pctx, cancel := context.WithCancel(c.ctx)
	p := &pendingReq{env: env, body: msg, ctx: pctx, cancel: cancel, sent: make(chan struct{})}
	c.mu.Lock()
	c.pending[string(env.id)] = p
	c.mu.Unlock()
	if !c.goRun(func() { c.runRequest(p) }) {
		c.forget(p)
		return c.closedErr()
	}
	select {
	case <-p.sent:
		return nil
	case <-ctx.Done():
		return nil // still in flight; its outcome arrives through Receive
	case <-c.done:
		return c.closedErr()
	}
}

func (c *Conn) forget(p *pendingReq) {
	p.cancel()
	c.mu.Lock()
	if c.pending[string(p.env.id)] == p {
		delete(c.pending, string(p.env.id))
	}
	c.mu.Unlock()
}

// reply delivers a transport-written error response for p.
func (c *Conn) reply(p *pendingReq, err error) {
	if p.ctx.Err() != nil && c.ctx.Err() == nil {
		return // cancelled by the client: it no longer waits for an answer
	}
	msg := "remote server " + strconv.Quote(c.o.Server) + ": " + err.Error()
	data := []byte(nil)
	var he *HTTPError
	if errors.As(err, &he) {
		data = []byte(`{"httpStatus":` + strconv.Itoa(he.Status) + `}`)
	}
	if errors.Is(err, ErrAuthRequired) {
		data = []byte(`{"authRequired":true}`)
	}
	c.emit(errorResponse(p.env.id, codeTransport, msg, data))
}

// emit hands one server message to Receive. Messages are compacted (so they
// hold no raw newline and can be framed as lines) and must be objects.
func (c *Conn) emit(m []byte) bool {
	var b bytes.Buffer
	b.Grow(len(m))
	if err := json.Compact(&b, m); err != nil {
		c.log.Warn("dropped a message that is not JSON", "bytes", len(m))
		return false
	}
	out := b.Bytes()
	if len(out) == 0 || out[0] != '{' {
		c.log.Warn("dropped a JSON-RPC batch or non-object message", "bytes", len(out))
		return false
	}
	select {
	case c.in <- out:
		return true
	case <-c.done:
		return false
	}
}

func (c *Conn) runRequest(p *pendingReq) {
	defer c.forget(p)
	defer p.markSent()
	select {
	case c.sem <- struct{}{}:
	case <-p.ctx.Done():
		c.reply(p, c.closedErr())
		return
	}
	defer func() { <-c.sem }()
	resp, err := c.post(p.ctx, c.u, p.body, p.env, p.markSent, true)
	p.markSent()
	if err != nil {
		c.reply(p, err)
		return
	}
	c.handleResponse(p, resp)
}

// postOneWay sends a notification or a response and waits for 202.
func (c *Conn) postOneWay(ctx context.Context, msg []byte, env envelope) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	unhook := context.AfterFunc(c.ctx, stop)
	defer unhook()
	resp, err := c.post(ctx, c.u, msg, env, nil, true)
	if err != nil {
		return err
	}
	defer drain(resp)
	c.noteSession(resp, env)
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		c.confirm()
		c.mu.Lock()
		pushes := c.pushes
		c.mu.Unlock()
		if env.method == "notifications/initialized" && env.version == "" && pushes {
			// A server request unrelated to a POST (elicitation, sampling,
			// roots) goes only to an open GET stream; a server without an
			// event store drops it otherwise. The next request waits until
			// the stream is open (or refused), within a bound.
			c.waitGet(ctx, c.startGet())
		}
		return nil
	case resp.StatusCode == http.StatusNotFound && c.SessionID() != "":
		c.fail(ErrSessionExpired)
		return ErrSessionExpired
	default:
		return c.httpError(http.MethodPost, resp)
	}
}

func (c *Conn) confirm() {
	c.mu.Lock()
	if c.mode == modeUnknown {
		c.mode = modeStreamable
	}
	c.confirmed = true
	c.mu.Unlock()
}

// noteSession records the session id a legacy-era response assigns. The
// 2026-07-28 era has no sessions: an id on a modern response is ignored.
func (c *Conn) noteSession(resp *http.Response, env envelope) {
	s := resp.Header.Get("Mcp-Session-Id")
	if s == "" || env.version != "" {
		return
	}
	if len(s) > 1024 || strings.IndexFunc(s, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
		c.log.Warn("ignored an invalid Mcp-Session-Id")
		return
	}
	c.mu.Lock()
	if c.session == "" {
		c.session = s
	}
	c.mu.Unlock()
}

func (c *Conn) baseHeaders(req *http.Request, ctx context.Context) error {
	for k, vs := range c.o.Headers {
		req.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	req.Header.Set("User-Agent", c.o.UserAgent)
	if c.o.Authorizer != nil {
		v, err := c.o.Authorizer.Authorization(ctx)
		if err != nil {
			return err
		}
		if v != "" {
			req.Header.Set("Authorization", v)
		}
	}
	return nil
}

// post sends body with POST to target, retrying transient failures with
// backoff: a connect failure, 429, 502, 503, 504 — except that a
// tools/call is retried only when no connection was ever made (nothing
// was sent), since a tool may have side effects. One retry follows an
// Authorizer challenge that put new credentials in place.
func (c *Conn) post(ctx context.Context, target *url.URL, body []byte, env envelope, onSent func(), streamable bool) (*http.Response, error) {
	sideEffects := env.method == "tools/call"
	authRetried := false
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		if err := c.baseHeaders(req, ctx); err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		if streamable {
			req.Header.Set("Accept", "application/json, text/event-stream")
			c.mcpHeaders(req, env, body)
		}
		var connected atomic.Bool
		trace := &httptrace.ClientTrace{
			GotConn: func(httptrace.GotConnInfo) { connected.Store(true) },
			WroteRequest: func(i httptrace.WroteRequestInfo) {
				if i.Err == nil && onSent != nil {
					onSent()
				}
			},
		}
		req = req.WithContext(httptrace.WithClientTrace(ctx, trace))
		resp, err := c.hc.Do(req)
		last := attempt+1 >= maxPostAttempts
		if err != nil {
			if ctx.Err() != nil {
				return nil, c.ctxErr(ctx)
			}
			var be *BlockedError
			retry := !last && !errors.As(err, &be) && !certErr(err) && (!sideEffects || (!connected.Load() && dialErr(err)))
			if !retry {
				return nil, unwrapURLError(err)
			}
			c.log.Debug("retrying after a transport error", "method", env.method, "attempt", attempt+1, "err", HideURLError(err))
			if !sleepCtx(ctx, backoff(attempt)) {
				return nil, c.ctxErr(ctx)
			}
			continue
		}
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			if resp.StatusCode == http.StatusForbidden && !insufficientScope(resp.Header.Values("WWW-Authenticate")) {
				return resp, nil
			}
			if c.o.Authorizer == nil || authRetried {
				return resp, nil
			}
			authRetried = true
			www := resp.Header.Values("WWW-Authenticate")
			status := resp.StatusCode
			drain(resp)
			if err := c.o.Authorizer.Challenge(ctx, status, www); err != nil {
				return nil, err
			}
			attempt-- // an auth round does not count as a transient retry
			continue
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			if sideEffects || last {
				return resp, nil
			}
			wait := backoff(attempt)
			if ra := retryAfter(resp.Header.Get("Retry-After")); ra > 0 {
				wait = ra
			}
			drain(resp)
			c.log.Debug("retrying after a transient status", "method", env.method, "status", resp.StatusCode, "attempt", attempt+1)
			if !sleepCtx(ctx, wait) {
				return nil, c.ctxErr(ctx)
			}
			continue
		}
		return resp, nil
	}
}

func (c *Conn) ctxErr(ctx context.Context) error {
	if c.ctx.Err() != nil {
		return c.closedErr()
	}
	return ctx.Err()
}

// mcpHeaders sets the protocol headers: for a modern (2026-07-28) request
// the version from its _meta, Mcp-Method and Mcp-Name; for the legacy era
// the negotiated version and the session id.
func (c *Conn) mcpHeaders(req *http.Request, env envelope, body []byte) {
	if env.version != "" {
		req.Header.Set("MCP-Protocol-Version", env.version)
		req.Header.Set("Mcp-Method", env.method)
		switch env.method {
		case "tools/call", "resources/read", "prompts/get":
			if env.name != "" {
				req.Header.Set("Mcp-Name", headerValue(env.name))
			}
		}
		if env.method == "tools/call" {
			for _, h := range c.paramHeaders(env.name, body) {
				req.Header.Set(h[0], h[1])
			}
		}
		return
	}
	c.mu.Lock()
	session, version := c.session, c.version
	c.mu.Unlock()
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
}

// headerValue encodes a value for an Mcp-* header: printable ASCII without
// surrounding whitespace goes as is, anything else as =?base64?...?=.
func headerValue(s string) string {
	plain := s == strings.TrimSpace(s) && !(strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?="))
	for i := 0; plain && i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			plain = false
		}
	}
	if plain {
		return s
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}

func insufficientScope(www []string) bool {
	for _, v := range www {
		if strings.Contains(strings.ToLower(v), "insufficient_scope") {
			return true
		}
	}
	return false
}

func (c *Conn) handleResponse(p *pendingReq, resp *http.Response) {
	defer drain(resp)
	c.noteSession(resp, p.env)
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		c.confirm()
		switch {
		case resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent:
			if p.env.version != "" {
				c.reply(p, fmt.Errorf("the server accepted a request without answering it (HTTP %d)", resp.StatusCode))
				return
			}
			c.startGet() // a legacy server may answer on the GET stream
		case ct == "text/event-stream":
			c.readPostStream(p, resp.Body)
		case ct == "application/json" || ct == "":
			body, err := readCapped(resp.Body, c.o.MaxMessageBytes)
			if err != nil {
				c.reply(p, err)
				return
			}
			if p.env.method == "initialize" {
				c.noteVersion(body)
			}
			if p.env.method == "tools/list" {
				body = c.noteTools(body)
			}
			if !c.emit(body) {
				c.reply(p, errors.New("the server's response is not a JSON-RPC object"))
			}
		default:
			c.reply(p, fmt.Errorf("unexpected response Content-Type %q", ct))
		}
	case resp.StatusCode == http.StatusNotFound && p.env.version == "" && c.SessionID() != "":
		c.reply(p, ErrSessionExpired)
		c.fail(ErrSessionExpired)
	default:
		c.mu.Lock()
		fallback := c.mode == modeUnknown && !c.confirmed && p.env.method == "initialize" &&
			(resp.StatusCode == 400 || resp.StatusCode == 404 || resp.StatusCode == 405)
		c.mu.Unlock()
		if fallback {
			c.fallbackToSSE(p, resp.StatusCode)
			return
		}
		body, _ := readCapped(resp.Body, maxErrorBodyBytes)
		if _, errObj, ok := rpcErrorBody(body); ok {
			c.emit(withID(p.env.id, errObj))
			return
		}
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			c.reply(p, c.authRefusal(resp.StatusCode))
			return
		}
		if c.o.ScrubText != nil {
			body = c.o.ScrubText(body) // before the cut, which could leave a part
		}
		c.reply(p, &HTTPError{Method: http.MethodPost, Status: resp.StatusCode, Body: sanitize(body)})
	}
}

// noteVersion records the protocol version of a legacy initialize result,
// sent as MCP-Protocol-Version from then on.
func (c *Conn) noteVersion(body []byte) {
	var r struct {
		Result struct {
			ProtocolVersion string          `json:"protocolVersion"`
			Capabilities    json.RawMessage `json:"capabilities"`
		} `json:"result"`
	}
	if json.Unmarshal(body, &r) == nil && r.Result.ProtocolVersion != "" && len(r.Result.ProtocolVersion) < 64 {
		caps := string(r.Result.Capabilities)
		c.mu.Lock()
		c.version = r.Result.ProtocolVersion
		// The GET stream only carries what the server pushes on its own:
		// list changes, subscriptions, log messages.
		c.pushes = c.pushes || strings.Contains(caps, `"listChanged":true`) || strings.Contains(caps, `"subscribe":true`) || strings.Contains(caps, `"logging"`)
		c.mu.Unlock()
	}
}

// readPostStream reads the SSE response to p until p's response. A legacy
// stream that ends early after giving an event id is resumed with GET and
// Last-Event-ID (the server's retry delay first); a modern one cannot be.
func (c *Conn) readPostStream(p *pendingReq, body io.ReadCloser) {
	var lastID string
	delay := backoffBase
	resumes := 0
	for {
		got, progressed, err := c.readStream(body, p, &lastID, &delay)
		body.Close()
		if got {
			return
		}
		if p.ctx.Err() != nil {
			c.reply(p, c.ctxErr(p.ctx))
			return
		}
		if errors.Is(err, ErrMessageTooLarge) || p.env.version != "" || lastID == "" {
			if err == nil {
				err = ErrStreamClosed
			}
			c.reply(p, fmt.Errorf("%w before the response to %s", err, p.env.method))
			return
		}
		if progressed {
			resumes = 0
		}
		resumes++
		if resumes > maxStreamResumes {
			c.reply(p, fmt.Errorf("%w: gave up resuming after %d attempts", ErrStreamClosed, maxStreamResumes))
			return
		}
		if !sleepCtx(p.ctx, delay) {
			c.reply(p, c.ctxErr(p.ctx))
			return
		}
		resp, err := c.openGet(p.ctx, lastID)
		if err != nil {
			c.reply(p, fmt.Errorf("resuming the stream: %w", err))
			return
		}
		body = resp.Body
	}
}

// readStream dispatches message events from one SSE body. It reports
// whether p's response was seen (p may be nil for the GET stream) and
// whether any event arrived.
func (c *Conn) readStream(body io.Reader, p *pendingReq, lastID *string, delay *time.Duration) (got, progressed bool, err error) {
	r := newSSEReader(body, c.o.MaxMessageBytes)
	for {
		ev, err := r.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return false, progressed, err
		}
		progressed = true
		if ev.hasID {
			*lastID = ev.id
		}
		if ev.hasRetry {
			*delay = ev.retry
		}
		if len(ev.data) == 0 || (ev.typ != "" && ev.typ != "message") {
			continue
		}
		in, ok := peekInbound(ev.data)
		if p != nil && p.env.method == "initialize" && ok && in.response {
			c.noteVersion(ev.data)
		}
		if p != nil && p.env.method == "tools/list" && ok && in.response {
			ev.data = c.noteTools(ev.data)
		}
		if !c.emit(ev.data) {
			if c.Err() != nil {
				return false, progressed, c.closedErr()
			}
			continue
		}
		if p != nil && ok && in.response && bytes.Equal(in.id, p.env.id) {
			return true, true, nil
		}
	}
}

func (c *Conn) openGet(ctx context.Context, lastID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.u.String(), nil)
	if err != nil {
		return nil, err
	}
	if err := c.baseHeaders(req, ctx); err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	c.mcpHeaders(req, envelope{}, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, unwrapURLError(err)
	}
	if resp.StatusCode/100 != 2 {
		defer drain(resp)
		if resp.StatusCode == http.StatusNotFound && c.SessionID() != "" {
			c.fail(ErrSessionExpired)
			return nil, ErrSessionExpired
		}
		return nil, c.httpError(http.MethodGet, resp)
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "text/event-stream" {
		drain(resp)
		return nil, ErrNotSSE
	}
	return resp, nil
}

// startGet opens the legacy GET stream for server-initiated messages, once.
// The channel it returns is closed when the first attempt has an answer
// (the stream's headers, a refusal or a failure).
func (c *Conn) startGet() <-chan struct{} {
	c.mu.Lock()
	if c.getRunning || c.mode != modeStreamable {
		ready := c.getReady
		c.mu.Unlock()
		if ready == nil {
			ready = make(chan struct{})
			close(ready)
		}
		return ready
	}
	c.getRunning = true
	ready := make(chan struct{})
	c.getReady = ready
	c.mu.Unlock()
	if !c.goRun(func() { c.getLoop(ready) }) {
		close(ready)
	}
	return ready
}

// getOpenWait bounds how long the handshake waits for the GET stream's
// headers: a server that holds them back delays only the first request.
// A variable so a test on a loaded machine can wait longer.
var getOpenWait = 2 * time.Second

func (c *Conn) waitGet(ctx context.Context, ready <-chan struct{}) {
	t := time.NewTimer(getOpenWait)
	defer t.Stop()
	select {
	case <-ready:
	case <-t.C:
		c.log.Debug("the GET event stream has not opened yet; going on")
	case <-ctx.Done():
	case <-c.ctx.Done():
	}
}

func (c *Conn) getLoop(ready chan struct{}) {
	var lastID string
	delay := backoffBase
	failures := 0
	var once sync.Once
	opened := func() { once.Do(func() { close(ready) }) }
	defer opened()
	for c.ctx.Err() == nil {
		resp, err := c.openGet(c.ctx, lastID)
		opened()
		if err != nil {
			var he *HTTPError
			if errors.As(err, &he) && he.Status == http.StatusMethodNotAllowed {
				c.log.Debug("the server offers no GET stream")
				return
			}
			if c.ctx.Err() != nil || errors.Is(err, ErrSessionExpired) {
				return
			}
			failures++
			if failures >= maxGetFailures {
				c.log.Warn("gave up on the GET event stream", "err", err)
				return
			}
			sleepCtx(c.ctx, backoff(failures))
			continue
		}
		_, progressed, err := c.readStream(resp.Body, nil, &lastID, &delay)
		resp.Body.Close()
		if err != nil && c.ctx.Err() == nil {
			c.log.Warn("GET event stream failed", "err", err)
		}
		if progressed {
			failures = 0
		} else {
			failures++
			if failures >= maxGetFailures {
				return
			}
		}
		sleepCtx(c.ctx, delay)
	}
}

func (c *Conn) httpError(method string, resp *http.Response) error {
	body, _ := readCapped(resp.Body, maxErrorBodyBytes)
	if resp.StatusCode == http.StatusUnauthorized || (resp.StatusCode == http.StatusForbidden && insufficientScope(resp.Header.Values("WWW-Authenticate"))) {
		return c.authRefusal(resp.StatusCode)
	}
	if c.o.ScrubText != nil {
		body = c.o.ScrubText(body)
	}
	return &HTTPError{Method: method, Status: resp.StatusCode, Body: sanitize(body)}
}

// authRefusal describes a 401/403 the Authorizer could not answer. A
// declared Authorization header turns OAuth off, so its value is what the
// server refused, and `sluice auth` would not help.
func (c *Conn) authRefusal(status int) error {
	if c.o.Authorizer == nil && c.o.Headers.Get("Authorization") != "" {
		return fmt.Errorf("%w (HTTP %d): the server refused the declared Authorization header; check its value (a token in the environment may have expired), or remove the header to use OAuth with `sluice auth %s`", ErrAuthRequired, status, c.o.Server)
	}
	return fmt.Errorf("%w (HTTP %d); run `sluice auth %s`", ErrAuthRequired, status, c.o.Server)
}

// readCapped reads all of r, failing with ErrMessageTooLarge past max.
func readCapped(r io.Reader, max int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > max {
		return nil, fmt.Errorf("%w: a response body exceeds %d bytes", ErrMessageTooLarge, max)
	}
	return b, nil
}

// drain discards a bounded rest of the body so the connection can be
// reused, then closes it.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// sanitize shortens an error body and removes control characters.
func sanitize(b []byte) string {
	const max = 300
	s := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, string(bytes.TrimSpace(b)))
	if len(s) > max {
		s = s[:max]
		for len(s) > 0 && !utf8ValidEnd(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return s
}

func utf8ValidEnd(s string) bool { return strings.ToValidUTF8(s, "") == s }

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func backoff(attempt int) time.Duration {
	d := backoffBase << min(attempt, 8)
	if d > backoffCap {
		d = backoffCap
	}
	return d/2 + rand.N(d/2+1)
}

func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return min(time.Duration(n)*time.Second, maxRetryAfter)
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(time.Until(t), 0), maxRetryAfter)
	}
	return 0
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
