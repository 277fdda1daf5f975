package front

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPPath is the single MCP endpoint of the HTTP front.
const MCPPath = "/mcp"

// AdminPath is where Options.Admin is served.
const AdminPath = "/admin"

// maxHeaderBytes bounds one request's headers.
const maxHeaderBytes = 64 << 10

// Handler is the HTTP front: /mcp (streamable HTTP, both protocol eras),
// /livez, /healthz, /readyz and /metrics, behind Host, Origin and token
// checks. Every response carries the request's X-Request-ID.
// Create it with NewHTTPHandler and end it with Shutdown.
type Handler struct {
	f         *front
	stateful  *mcp.StreamableHTTPHandler // legacy: initialize + Mcp-Session-Id
	stateless *mcp.StreamableHTTPHandler // 2026-07-28: per-request _meta, no sessions
	token     [32]byte
	hasToken  bool
	posts     atomic.Int64 // /mcp POSTs being served
	sessions  *sessionTable
	fast      *fastHTTP // the tools/call fast path (httpfast.go); nil when off
}

// NewHTTPHandler builds the HTTP front for b and registers its initial
// tool surface. It does not listen; see ServeHTTP. The caller ends it
// with Shutdown and then closes b.
func NewHTTPHandler(b Backend, opts *Options) (*Handler, error) {
	f, err := newFront(b, opts)
	if err != nil {
		return nil, err
	}
	h := &Handler{f: f}
	if f.opts.Token != "" {
		h.token, h.hasToken = sha256.Sum256([]byte(f.opts.Token)), true
	}
	// Idle sessions are closed by the session table, not by the SDK: the
	// fast path serves POSTs the SDK never sees, which must keep a session
	// alive as any other POST does.
	h.sessions = newSessionTable(f.opts.MaxSessions, max(f.opts.SessionTimeout, 0), h.closeSession)
	if h.fast = newFastHTTP(f, h); h.fast != nil {
		f.opts.Metrics.fastCounter() // present at 0 from the start
	}
	getServer := func(*http.Request) *mcp.Server { return f.srv }
	sdkLog := sdkLogger(f.log, "mcp-http")
	h.stateful = mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		// Host and Origin are checked by Handler itself, with the
		// configured allow-lists, before the SDK sees the request.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        f.opts.MaxRequestBytes,
		Logger:                     sdkLog,
	})
	h.stateless = mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		DisableLocalhostProtection:   true,
		MaxRequestBodyBytes:          f.opts.MaxRequestBytes,
		PropagateRequestCancellation: true,
		Logger:                       sdkLog,
	})
	f.start(context.Background())
	return h, nil
}

// Metrics returns the registry the handler records into (Options.Metrics
// or the one it created).
func (h *Handler) Metrics() *Metrics { return h.f.opts.Metrics }

// Shutdown stops admitting calls, waits for running ones up to
// ShutdownTimeout (or ctx), cancels the rest and closes every session. It
// does not close the backend.
func (h *Handler) Shutdown(ctx context.Context) {
	bound := h.f.opts.ShutdownTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < bound {
		bound = time.Until(dl)
	}
	start := time.Now()
	h.f.drain(bound)
	// A finished call's response is written after its handler returns;
	// let those POSTs complete before closing the sessions under them.
	for h.posts.Load() > 0 && time.Since(start) < bound+time.Second {
		time.Sleep(5 * time.Millisecond)
	}
	for ss := range h.f.srv.Sessions() {
		_ = ss.Close()
	}
	h.f.close()
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rid := tagRequestID(w, r)
	if h.f.opts.Admin != nil && (r.URL.Path == AdminPath || strings.HasPrefix(r.URL.Path, AdminPath+"/")) {
		// The dashboard runs its own gate (loopback peer, Host, Origin,
		// login, CSRF), at least as strict as the checks below, and puts
		// its security headers on every answer, refusals included.
		h.f.opts.Admin.ServeHTTP(w, r)
		return
	}
	if !h.hostAllowed(r.Host) {
		h.f.log.Warn("rejected request: Host not allowed", "host", r.Host, "remote", r.RemoteAddr, "request_id", rid)
		reject(w, "Forbidden: Host header not allowed (DNS rebinding protection)", http.StatusForbidden)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !h.originAllowed(o) {
		h.f.log.Warn("rejected request: Origin not allowed", "origin", o, "remote", r.RemoteAddr, "request_id", rid)
		reject(w, "Forbidden: Origin not allowed", http.StatusForbidden)
		return
	}
	if r.URL.Path != MCPPath && r.ContentLength != 0 {
		// Only /mcp reads a body; elsewhere the server would wait for one
		// before answering, and after. Answer and close instead.
		w.Header().Set("Connection", "close")
		defer dropBody(w)
	}
	if r.URL.Path == "/livez" {
		// Liveness: the process answers HTTP. No I/O, no backend, no token.
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "live\n")
		return
	}
	if r.URL.Path == "/healthz" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
		return
	}
	if h.hasToken && !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sluice"`)
		if r.Header.Get("Authorization") != "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sluice", error="invalid_token"`)
		}
		reject(w, "Unauthorized: send Authorization: Bearer <token> (the token sluice serve was started with)", http.StatusUnauthorized)
		return
	}
	switch r.URL.Path {
	case "/readyz":
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := h.f.b.Ready(ctx); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %v\n", err)
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	case "/metrics":
		h.f.opts.Metrics.Handler().ServeHTTP(w, r)
	case MCPPath:
		h.serveMCP(w, r)
	default:
		reject(w, "404 page not found", http.StatusNotFound)
	}
}

// reject answers a request front will not serve and closes its
// connection: the server then neither waits for the rest of a body nobody
// reads (a client trickling one would hold the answer back) nor keeps the
// connection for another request.
func reject(w http.ResponseWriter, msg string, code int) {
	w.Header().Set("Connection", "close")
	http.Error(w, msg, code)
	dropBody(w)
}

// dropBody stops the server from reading what is left of a request body
// after the handler (it would otherwise read up to 256 KiB, for as long
// as the client takes): the answer is flushed, then reads fail at once
// and the connection closes.
func dropBody(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	_ = rc.SetReadDeadline(time.Now())
}

// serveMCP routes a request to the legacy (session) or modern (stateless)
// SDK handler. The SDK serves 2026-07-28 requests only statelessly and
// server-to-client requests (elicitation, sampling) only with sessions,
// so one endpoint needs both.
func (h *Handler) serveMCP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		h.posts.Add(1)
		defer h.posts.Add(-1)
	}
	// The whole body is read here, within the read timeout and the size
	// cap, before any SDK handler sees the request.
	body, err := readBody(http.MaxBytesReader(w, r.Body, h.f.opts.MaxRequestBytes), r.ContentLength, h.f.opts.MaxRequestBytes)
	if err != nil {
		var mbe *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &mbe):
			reject(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
		case errors.As(err, &ne) && ne.Timeout():
			h.f.opts.Metrics.HTTPLimit("read_timeout")
			h.f.log.Warn("rejected request: body not received within the read timeout", "remote", r.RemoteAddr, "read_timeout", h.f.opts.ReadTimeout.String(), "request_id", r.Header.Get(RequestIDHeader))
			reject(w, fmt.Sprintf("Request Timeout: the request was not received within %s", h.f.opts.ReadTimeout), http.StatusRequestTimeout)
		default:
			reject(w, "cannot read request body", http.StatusBadRequest)
		}
		return
	}
	if n := batchLen(body); n > maxBatch {
		reject(w, fmt.Sprintf("Bad Request: a batch of %d messages; at most %d are taken in one request", n, maxBatch), http.StatusBadRequest)
		return
	}
	if r.Method == http.MethodPost && refuseBadIDs(w, body) {
		return
	}
	// The body, read to its end, is closed: the server then has nothing
	// left to discard after the handler. The SDK reads it from memory.
	_ = r.Body.Close()
	sdkBody := func() { r.Body = io.NopCloser(bytes.NewReader(body)) }
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		defer h.sessions.use(id, r.Method == http.MethodPost)()
		if r.Method == http.MethodPost {
			if h.fast.serveSession(w, r, id, body) {
				return
			}
			sw, sr, done, answered := h.fast.sdkBound(w, r, id, body)
			if answered {
				return
			}
			defer done()
			w, r = sw, sr
		}
		sdkBody()
		h.stateful.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodPost {
		sdkBody()
		if r.Method == http.MethodGet || r.Method == http.MethodDelete {
			// Without a session these are modern-era requests: 405.
			h.stateless.ServeHTTP(w, r)
			return
		}
		h.stateful.ServeHTTP(w, r)
		return
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v >= modernVersion || modernBody(body) {
		if h.fast.serveModern(w, r, body) {
			return
		}
		sdkBody()
		h.stateless.ServeHTTP(w, r)
		return
	}
	sdkBody()
	h.newSession(w, r)
}

// maxBatch bounds the messages of one JSON-RPC batch (legacy sessions of
// 2025-03-26 may send them): the SDK runs every call of a batch at once,
// so without a bound one 4 MiB request could start tens of thousands.
const maxBatch = 64

// batchLen is how many messages body holds when it is a batch (a JSON
// array), else 0. A malformed array counts 0: the SDK refuses it.
func batchLen(body []byte) int {
	b := bytes.TrimLeft(body, " \t\r\n")
	if len(b) == 0 || b[0] != '[' {
		return 0
	}
	var msgs []json.RawMessage
	if json.Unmarshal(b, &msgs) != nil {
		return 0
	}
	return len(msgs)
}

// readBody reads a whole body into one buffer sized by its declared
// length (within max), instead of growing one from 512 bytes.
func readBody(r io.Reader, declared, max int64) ([]byte, error) {
	if declared <= 0 || declared > max {
		return io.ReadAll(r)
	}
	buf := make([]byte, 0, declared+1) // +1: a read at the end sees io.EOF
	for {
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}

// newSession serves a legacy POST without a session id (initialize), which
// opens a session, within MaxSessions.
func (h *Handler) newSession(w http.ResponseWriter, r *http.Request) {
	evicted, ok := h.sessions.admit(h.liveSessions, h.closeSession)
	if evicted != "" {
		h.f.opts.Metrics.HTTPLimit("session_evicted")
		h.f.log.Info("session cap reached: closed the session idle the longest", "evicted_session", evicted, "cap", h.f.opts.MaxSessions)
	}
	if !ok {
		h.f.opts.Metrics.HTTPLimit("session_refused")
		h.f.log.Warn("refused a new session: the session cap is reached and every session is busy", "cap", h.f.opts.MaxSessions, "remote", r.RemoteAddr)
		w.Header().Set("Retry-After", "5")
		reject(w, fmt.Sprintf("Service Unavailable: sluice already serves %d sessions and none is idle; retry later, or end unused sessions (DELETE with their Mcp-Session-Id)", h.f.opts.MaxSessions), http.StatusServiceUnavailable)
		return
	}
	id := ""
	defer func() { h.sessions.admitted(id) }()
	h.stateful.ServeHTTP(w, r)
	if sid := w.Header().Get("Mcp-Session-Id"); sid != "" && h.liveSessions()[sid] {
		id = sid
	}
}

// liveSessions is the set of session ids the SDK server holds open.
func (h *Handler) liveSessions() map[string]bool {
	m := map[string]bool{}
	for ss := range h.f.srv.Sessions() {
		if id := ss.ID(); id != "" {
			m[id] = true
		}
	}
	return m
}

func (h *Handler) closeSession(id string) {
	for ss := range h.f.srv.Sessions() {
		if ss.ID() == id {
			_ = ss.Close()
			return
		}
	}
}

// modernBody reports whether a JSON-RPC request follows the 2026-07-28
// protocol: server/discover, or a protocolVersion in params._meta.
func modernBody(body []byte) bool {
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return false
	}
	if msg.Method == "server/discover" {
		return true
	}
	_, ok := msg.Params.Meta["io.modelcontextprotocol/protocolVersion"]
	return ok && msg.Method != "initialize"
}

func (h *Handler) authorized(r *http.Request) bool {
	a := r.Header.Get("Authorization")
	if len(a) < 7 || !strings.EqualFold(a[:7], "bearer ") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(a[7:])))
	return subtle.ConstantTimeCompare(got[:], h.token[:]) == 1
}

func (h *Handler) hostAllowed(host string) bool {
	if host == "" {
		return false
	}
	for _, a := range h.f.opts.AllowedHosts {
		if strings.EqualFold(a, host) || strings.EqualFold(a, hostname(host)) {
			return true
		}
	}
	if h.f.opts.AllowRemote && len(h.f.opts.AllowedHosts) == 0 {
		return true
	}
	return isLoopbackName(hostname(host))
}

func (h *Handler) originAllowed(origin string) bool {
	for _, a := range h.f.opts.AllowedOrigins {
		if strings.EqualFold(strings.TrimSuffix(a, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	return isLoopbackName(u.Hostname())
}

// hostname strips an optional port and IPv6 brackets.
func hostname(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

func isLoopbackName(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// ServeHTTP listens on addr (host:port; loopback only unless
// Options.AllowRemote) and serves the HTTP front until ctx is cancelled or
// (unless Options.NoSignals) SIGTERM or SIGINT arrives. It then stops
// accepting, drains running calls within ShutdownTimeout, closes every
// session and calls b.Close. onListen, if not nil, receives the bound address
// (useful with port 0). A clean shutdown returns nil.
func ServeHTTP(ctx context.Context, addr string, b Backend, opts *Options, onListen func(net.Addr)) error {
	var o Options
	if opts != nil {
		o = *opts
	}
	ln, err := listen(addr, o.AllowRemote)
	if err != nil {
		return err
	}
	h, err := NewHTTPHandler(b, opts)
	if err != nil {
		ln.Close()
		return err
	}
	defer func() {
		if cerr := b.Close(); cerr != nil {
			h.f.log.Warn("closing the backend failed", "err", cerr)
		}
	}()
	if !h.f.opts.NoSignals {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
		defer stop()
	}
	// Slow and greedy clients are bounded four ways: headers within
	// readHeaderTimeout, the whole request within ReadTimeout, idle
	// keep-alives closed after IdleTimeout, and at most MaxConnsPerClient
	// connections per remote address (the rest answered 503 at accept).
	// There is no write timeout: a response may be a long SSE stream.
	ln = newConnLimiter(ln, h.f.opts.MaxConnsPerClient, h.f.opts.Metrics, h.f.log)
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       h.f.opts.ReadTimeout,
		IdleTimeout:       h.f.opts.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(h.f.log.Handler(), slog.LevelWarn),
	}
	if h.f.opts.AllowRemote && !h.hasToken {
		h.f.log.Warn("remote access is allowed without a token: anyone who can reach this address can call every tool")
	}
	h.f.log.Info("serving MCP over HTTP", "addr", ln.Addr().String(), "path", MCPPath, "mode", string(h.f.opts.Mode), "token", h.hasToken)
	if onListen != nil {
		onListen(ln.Addr())
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	var result error
	select {
	case err := <-serveErr:
		result = err
	case <-ctx.Done():
	}
	h.f.log.Info("shutting down the HTTP front", "bound", h.f.opts.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), h.f.opts.ShutdownTimeout+3*time.Second)
	defer cancel()
	shutdownDone := make(chan error, 1)
	go func() { shutdownDone <- srv.Shutdown(sctx) }()
	h.Shutdown(sctx)
	if err := <-shutdownDone; err != nil {
		h.f.log.Warn("connections still open after the drain bound; closing them", "err", err)
		_ = srv.Close()
	}
	if result != nil && !errors.Is(result, http.ErrServerClosed) {
		return result
	}
	return nil
}

// listen refuses non-loopback addresses unless allowRemote.
func listen(addr string, allowRemote bool) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &BindError{Addr: addr, Reason: "want host:port, e.g. 127.0.0.1:8181", Err: err}
	}
	if !allowRemote {
		switch {
		case strings.EqualFold(host, "localhost"):
			host = "127.0.0.1"
		case host == "":
			return nil, &BindError{Addr: addr, Reason: "an empty host listens on every interface; use 127.0.0.1, or allow remote access explicitly", Err: ErrRemoteBind}
		default:
			ip := net.ParseIP(host)
			if ip == nil || !ip.IsLoopback() {
				return nil, &BindError{Addr: addr, Reason: "not a loopback address; use 127.0.0.1 or ::1, or allow remote access explicitly (and set a token)", Err: ErrRemoteBind}
			}
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, &BindError{Addr: addr, Reason: err.Error(), Err: err}
	}
	return ln, nil
}
