package front

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
)

// The HTTP fast path answers a flat-mode tools/call POST without the
// SDK's per-request machinery (see "Why tools/call has a fast path on
// HTTP too" in doc.go). It takes a POST only when every check the SDK's
// streamable handler makes passes and the answer is certain to be the
// SDK's; anything else, and every other request, goes to the SDK.

// fastHTTP is the fast path's state for one Handler.
type fastHTTP struct {
	f     *front
	h     *Handler
	info  []byte // this server's Implementation as JSON (modern _meta)
	seq   atomic.Uint64
	idMu  sync.Mutex
	ids   map[string]identity // modern _meta identity -> what the SDK makes of it
	sesMu sync.Mutex
	ses   map[string]*fastSession // legacy sessions the fast path has served
}

// fastSession is the fast path's view of one legacy SDK session.
type fastSession struct {
	ss   *mcp.ServerSession
	name string // the peer's Conn, as newPeer names it

	mu    sync.Mutex
	calls map[any]context.CancelFunc        // fast-path calls in flight, by JSON-RPC id
	sdk   map[any]int                       // requests handed to the SDK and not yet answered, by JSON-RPC id
	asks  map[string]chan *jsonrpc.Response // requests to the agent awaiting its answer
}

// askPrefix starts the id of every request the fast path sends the agent:
// the SDK numbers its own, so a string id never collides with one.
const askPrefix = "sluice-"

func newFastHTTP(f *front, h *Handler) *fastHTTP {
	if f.opts.noFastPath || (f.opts.Mode == ModeGateway && !f.b.Features().Expose) {
		return nil // no direct tools (flat mode's, or exposed ones) to take
	}
	info, _ := json.Marshal(&mcp.Implementation{Name: f.opts.Name, Title: serverTitle, Version: f.opts.Version})
	return &fastHTTP{f: f, h: h, info: info, ses: map[string]*fastSession{}}
}

// session returns the fast path's state for the live, initialized legacy
// session id, or nil.
func (x *fastHTTP) session(id string) *fastSession {
	x.sesMu.Lock()
	s := x.ses[id]
	x.sesMu.Unlock()
	if s != nil {
		return s
	}
	var ss *mcp.ServerSession
	for c := range x.f.srv.Sessions() {
		if c.ID() == id {
			ss = c
			break
		}
	}
	if ss == nil {
		return nil
	}
	x.sesMu.Lock()
	defer x.sesMu.Unlock()
	if s = x.ses[id]; s != nil {
		return s
	}
	s = &fastSession{ss: ss, name: fmt.Sprintf("session-%p", ss), calls: map[any]context.CancelFunc{}, sdk: map[any]int{}, asks: map[string]chan *jsonrpc.Response{}}
	x.ses[id] = s
	go func() {
		_ = ss.Wait()
		x.sesMu.Lock()
		if x.ses[id] == s {
			delete(x.ses, id)
		}
		x.sesMu.Unlock()
	}()
	return s
}

// known returns the state of a session the fast path already serves.
func (x *fastHTTP) known(id string) *fastSession {
	x.sesMu.Lock()
	defer x.sesMu.Unlock()
	return x.ses[id]
}

// postHeadersOK reports whether a POST passes the SDK handler's checks of
// Content-Type, Accept and Last-Event-ID (the SDK answers those that fail).
func postHeadersOK(r *http.Request) bool {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return false
		}
	}
	if len(r.Header["Last-Event-Id"]) > 0 {
		return false
	}
	jsonOK, streamOK := acceptsBoth(r.Header["Accept"])
	return jsonOK && streamOK
}

// acceptsBoth is the SDK's reading of Accept: application/json and
// text/event-stream, by exact, type-wildcard or */* entries.
func acceptsBoth(values []string) (jsonOK, streamOK bool) {
	for _, value := range values {
		for raw := range strings.SplitSeq(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}

// wireMsg is one JSON-RPC message read strictly: exactly the members the
// SDK's decoder reads, with their exact names.
type wireMsg struct {
	id     jsonrpc.ID
	idSet  bool
	method string
	isReq  bool
	params []byte
	result []byte
	err    []byte
}

// maxDepth is the SDK decoder's nesting limit.
const maxDepth = 1000

// readMsg decodes body as one JSON-RPC message when the SDK would decode it
// to the same message; ok is false for anything else (a batch, unknown,
// escaped or duplicated members, ids the SDK would convert, nesting near
// its limit), which the SDK then reads and answers itself.
func readMsg(body []byte) (m wireMsg, ok bool) {
	v, ok := wholeValue(body, maxDepth-1)
	if !ok || v[0] != '{' {
		return m, false
	}
	var buf [8]member
	top, ok := plainMembers(buf[:0], v)
	if !ok {
		return m, false
	}
	version := false
	for _, mb := range top {
		switch string(mb.name) {
		case "jsonrpc":
			version = string(mb.value) == `"2.0"`
		case "id":
			id, ok := exactID(mb.value)
			if !ok {
				return m, false
			}
			m.id, m.idSet = id, id.IsValid()
		case "method":
			name, ok := plainString(mb.value)
			if !ok {
				return m, false
			}
			m.method, m.isReq = name, true
		case "params":
			m.params = mb.value
		case "result":
			m.result = mb.value
		case "error":
			m.err = mb.value
		default:
			return m, false
		}
	}
	if !m.isReq {
		// A response: the SDK needs its id and an error it can decode.
		if !m.idSet {
			return m, false
		}
		if m.err != nil && string(m.err) != "null" {
			var je jsonrpc.Error
			if json.Unmarshal(m.err, &je) != nil {
				return m, false
			}
		}
	}
	return m, version
}

// plainString is the text of a JSON string value without escapes.
func plainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
		return "", false
	}
	return string(v[1 : len(v)-1]), true
}

// exactID converts a JSON id the way the SDK does when the result is
// certain: a string, or an integer a float64 holds exactly. null is no id.
func exactID(v []byte) (jsonrpc.ID, bool) {
	if string(v) == "null" {
		return jsonrpc.ID{}, true
	}
	if len(v) > 0 && v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return jsonrpc.ID{}, false
		}
		id, err := jsonrpc.MakeID(s)
		return id, err == nil
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n > 1<<53 || n < -(1<<53) {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(float64(n))
	return id, err == nil
}

// callParams is a tools/call's params as the HTTP fast path reads them:
// name, arguments and _meta (members in order), spans of the request.
type callParams struct {
	name string
	args []byte
	meta []member
}

func (p *callParams) metaValue(key string) ([]byte, bool) {
	for _, m := range p.meta {
		if string(m.name) == key {
			return m.value, true
		}
	}
	return nil, false
}

// readParams reads params, refusing (ok false) anything but name,
// arguments and _meta, so what the SDK would make of the request is never
// in doubt (as parseFast does for stdio).
func readParams(raw []byte) (p callParams, ok bool) {
	var buf [4]member
	top, ok := plainMembers(buf[:0], raw)
	if !ok {
		return p, false
	}
	for _, m := range top {
		switch string(m.name) {
		case "name":
			if string(m.value) == "null" {
				return p, false
			}
			if p.name, ok = plainString(m.value); !ok {
				// A variable of its own: one whose address is taken
				// lives on the heap, and p would be that.
				var name string
				if len(m.value) == 0 || m.value[0] != '"' || json.Unmarshal(m.value, &name) != nil {
					return p, false
				}
				p.name = name
			}
		case "arguments":
			p.args = m.value
		case "_meta":
			if p.meta, ok = plainMembers(make([]member, 0, 8), m.value); !ok || !numbersFit(m.value) {
				return p, false
			}
		default:
			return p, false
		}
	}
	return p, p.name != ""
}

// metaMap is meta as a map (for the hand-over to the SDK).
func (p *callParams) metaMap() map[string]json.RawMessage {
	m := make(map[string]json.RawMessage, len(p.meta)+1)
	for _, mb := range p.meta {
		m[string(mb.name)] = json.RawMessage(mb.value)
	}
	return m
}

// serveSession is offered every POST of a legacy session (id) before the
// SDK sees it. It answers the agent's answer to a request the fast path
// sent, cancels a fast-path call on notifications/cancelled (the SDK then
// acknowledges the notification as usual) and takes tools/call over when
// it can answer it exactly as the SDK would. It reports whether it
// answered the POST.
func (x *fastHTTP) serveSession(w http.ResponseWriter, r *http.Request, id string, body []byte) bool {
	if x == nil {
		return false
	}
	m, ok := readMsg(body)
	if !ok {
		return false
	}
	switch {
	case !m.isReq:
		return x.answer(w, r, id, m)
	case !m.idSet:
		if m.method == "notifications/cancelled" {
			x.cancelled(id, m.params)
		}
		return false
	case m.method != "tools/call":
		return false
	}
	s := x.session(id)
	if s == nil || !postHeadersOK(r) {
		return false
	}
	init := s.ss.InitializeParams()
	if init == nil || init.ProtocolVersion >= modernVersion {
		return false // the SDK refuses a call before initialize
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && v != init.ProtocolVersion {
		return false
	}
	caps := init.Capabilities
	if caps != nil && (caps.Elicitation != nil || caps.Sampling != nil) {
		// Approvals and forwarded sampling ask the agent on this POST's
		// stream with the SDK's own validation of the answer: SDK path.
		return false
	}
	p, ok := readParams(m.params)
	if !ok || p.name == flatReadResult {
		return false
	}
	for _, k := range [...]string{stashMetaKey, mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientCapabilities, mcp.MetaKeyClientInfo} {
		if _, present := p.metaValue(k); present {
			return false
		}
	}
	ref, ok := x.listed(p.name, false)
	if !ok {
		return false
	}
	who := identity{caps: caps}
	if init.ClientInfo != nil {
		who.client = init.ClientInfo.Name
	}
	return x.run(w, r, m.id, p, ref, who, init.ProtocolVersion, s)
}

// serveModern is offered every sessionless POST the handler routes to the
// stateless SDK handler (2026-07-28). It takes a tools/call over when it
// can answer it exactly as the SDK would, and reports whether it did.
func (x *fastHTTP) serveModern(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if x == nil || r.Header.Get("Mcp-Protocol-Version") != modernVersion || !postHeadersOK(r) {
		return false
	}
	m, ok := readMsg(body)
	if !ok || !m.isReq || !m.idSet || m.method != "tools/call" {
		return false
	}
	if r.Header.Get("Mcp-Method") != "tools/call" {
		return false
	}
	p, ok := readParams(m.params)
	if !ok || p.name == flatReadResult || r.Header.Get("Mcp-Name") != p.name || !numbersFit(p.args) {
		return false // (the SDK decodes a modern request's whole params to check Mcp-Name)
	}
	if _, present := p.metaValue(stashMetaKey); present {
		return false
	}
	if _, present := p.metaValue(mcp.MetaKeyLogLevel); present {
		return false
	}
	if v, _ := p.metaValue(mcp.MetaKeyProtocolVersion); string(v) != metaVersion {
		return false
	}
	caps, _ := p.metaValue(mcp.MetaKeyClientCapabilities)
	info, _ := p.metaValue(mcp.MetaKeyClientInfo)
	who, ok := x.identity(caps, info)
	if !ok || (who.caps != nil && who.caps.Elicitation != nil) {
		return false // unreadable, or an agent the bridge can ask (bridge.go)
	}
	ref, ok := x.listed(p.name, true)
	if !ok {
		return false
	}
	return x.run(w, r, m.id, p, ref, who, modernVersion, nil)
}

// listed returns the owner of a registered flat-mode tool. A modern
// request of a tool whose schema binds arguments to headers
// (x-mcp-header) is left to the SDK, which checks those headers.
func (x *fastHTTP) listed(name string, modern bool) (upstreamRef, bool) {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.flat[KindTools]
	if e == nil {
		return upstreamRef{}, false
	}
	ref, ok := e.owner[name]
	if ok && modern && strings.Contains(e.sig[name], "x-mcp-header") {
		return upstreamRef{}, false
	}
	return ref, ok
}

// identity is what the SDK reads from a modern request's client
// capabilities and client info (ok false when it could not read them and
// would refuse the request), remembered by their bytes.
func (x *fastHTTP) identity(caps, info json.RawMessage) (identity, bool) {
	if !isObject(caps) || (info != nil && !isObject(info)) {
		return identity{}, false
	}
	var kb [512]byte
	k := append(append(append(kb[:0], caps...), 0), info...)
	x.idMu.Lock()
	id, ok := x.ids[string(k)] // no allocation for the lookup
	x.idMu.Unlock()
	if ok {
		return id, true
	}
	key := string(k)
	meta := map[string]json.RawMessage{mcp.MetaKeyProtocolVersion: json.RawMessage(metaVersion), mcp.MetaKeyClientCapabilities: caps}
	if info != nil {
		meta[mcp.MetaKeyClientInfo] = info
	}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Meta: sdkMeta(meta)}}
	if id.caps = req.ClientCapabilities(); id.caps == nil {
		return identity{}, false
	}
	if ci := req.ClientInfo(); ci != nil {
		id.client = ci.Name
	} else if info != nil {
		return identity{}, false
	}
	x.idMu.Lock()
	if x.ids == nil || len(x.ids) >= 16 { // bounded: a new set replaces the old
		x.ids = map[string]identity{}
	}
	x.ids[key] = id
	x.idMu.Unlock()
	return id, true
}

// run answers one taken tools/call on w. s is the legacy session (nil for
// a modern request). It always answers the POST.
func (x *fastHTTP) run(w http.ResponseWriter, r *http.Request, id jsonrpc.ID, p callParams, ref upstreamRef, who identity, version string, s *fastSession) bool {
	f := x.f
	modern := s == nil
	var token any
	if t, ok := p.metaValue("progressToken"); ok {
		var v any // only here: a variable whose address is taken lives on the heap
		if json.Unmarshal(t, &v) != nil {
			return false
		}
		token = v
	}
	// Legacy: the call outlives its POST, as on the SDK's session
	// connection; modern: the POST is the request (the SDK propagates its
	// cancellation). The call's context is registered once, with the
	// POST's: that one registration stops writes to a POST the agent
	// gives up on and, for a modern request, cancels the call. A hard
	// shutdown reaches the call through its in-flight entry (no
	// registration with f.hard), its end through the deferred cancel. A
	// caller's deadline on the request keeps the registration with the
	// request's context, so the call sees the deadline itself.
	base := context.WithoutCancel(r.Context())
	_, deadline := r.Context().Deadline()
	if modern && deadline {
		base = r.Context()
	}
	ctx, cancel := context.WithCancel(base)
	defer cancel()
	out := newFastStream(w, x, s, modern)
	out.cancel = cancel
	if s != nil {
		s.mu.Lock()
		if _, dup := s.calls[id.Raw()]; dup || s.sdk[id.Raw()] > 0 {
			s.mu.Unlock()
			refuseDuplicate(w, id)
			return true
		}
		s.calls[id.Raw()] = cancel
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.calls, id.Raw())
			s.mu.Unlock()
		}()
	}
	out.hard.cancel = cancel
	if !f.inflight.addCancel(&out.hard) {
		return false // shutting down: the SDK path answers as such
	}
	defer f.inflight.doneCancel(&out.hard)

	rid := r.Header.Get(requestIDKey) // settled by tagRequestID
	if !validRequestID(rid) {
		rid = f.newRequestID(nil)
	}
	defer out.close()
	// A POST the agent gives up on gets nothing more written to it.
	release := context.AfterFunc(r.Context(), out.gone)
	defer release()
	pr := &peer{f: f, rid: rid, reqCtx: ctx, token: token, caps: who.caps, version: version, client: who.client, out: out}
	if s != nil {
		pr.ss, pr.conn = s.ss, s.name
	} else {
		pr.connSeq = x.seq.Add(1) // named by Conn when asked
	}
	pr.traceparent, pr.tracestate = traceContext(&p, r.Header)
	if n := f.opts.fastTaken; n != nil {
		n.Add(1)
	}
	f.opts.Metrics.fastCall()

	resp := &jsonrpc.Response{ID: id}
	handed := false
	q := &fastCall{name: p.name, args: p.args, capability: ref.capability(), rid: rid, modern: modern, serverInfo: x.info, late: true}
	func() {
		defer func() {
			// As guardMiddleware: a bug answers this request, it does not
			// end the process.
			if rec := recover(); rec != nil {
				f.log.Error("panic in handler", "request_id", rid, "method", "tools/call", "panic", fmt.Sprint(rec), "stack", string(debug.Stack()))
				resp = &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error (request " + rid + ")"}}
			}
		}()
		q.handOver = handOverFunc(func(raw json.RawMessage) bool { return x.handOver(w, r, id, p, raw, out, modern) })
		handed = f.answerFast(ctx, q, pr, resp)
	}()
	if !handed {
		out.respond(resp)
	}
	if q.call != nil {
		// Counted and logged once the agent has its answer: neither is on
		// the answer's path (the line's duration is the call's).
		q.call.finish(ctx, q.outcome)
	}
	return true
}

// finished counts and logs a fast-path call now, or, for a transport that
// does it once the answer is written (late), keeps what to finish.
func (q *fastCall) finished(ctx context.Context, c *invoked, outcome string) {
	if q.late {
		c.end = time.Now()
		q.call, q.outcome = c, outcome
		return
	}
	c.finish(ctx, outcome)
}

// handOver serves the request through the SDK with its answer (an
// upstream input_required result) stashed, so the SDK's multi round-trip
// handling runs as for any call; the backend is not called again. It
// reports false when the request cannot be rebuilt (answerFast then
// converts the result by the SDK path's rules).
func (x *fastHTTP) handOver(w http.ResponseWriter, r *http.Request, id jsonrpc.ID, req callParams, raw json.RawMessage, out *fastStream, modern bool) bool {
	tok := x.f.answered.put(raw)
	meta := req.metaMap()
	meta[stashMetaKey], _ = json.Marshal(tok)
	params := map[string]json.RawMessage{"_meta": nil}
	params["_meta"], _ = json.Marshal(meta)
	params["name"], _ = json.Marshal(req.name)
	if req.args != nil {
		params["arguments"] = json.RawMessage(req.args)
	}
	rawID, _ := json.Marshal(id.Raw())
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(rawID), "method": "tools/call", "params": params})
	if err != nil {
		x.f.answered.take(tok)
		return false
	}
	// What the fast path wrote stays the head of the answer: the SDK
	// goes on on the same stream.
	out.mu.Lock()
	started := out.started
	out.done = true
	out.mu.Unlock()
	var sw http.ResponseWriter = w
	if started {
		sw = startedWriter{w}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	if modern {
		x.h.stateless.ServeHTTP(sw, r)
	} else {
		x.h.stateful.ServeHTTP(sw, r)
	}
	return true
}

// startedWriter is a ResponseWriter whose head is already written.
type startedWriter struct{ http.ResponseWriter }

func (startedWriter) WriteHeader(int) {}

func (w startedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// traceContext is traceContextOf for a fast-path request: traceparent
// and tracestate from _meta, else from the HTTP headers, both dropped when
// either is too long.
func traceContext(p *callParams, h http.Header) (traceparent, tracestate string) {
	if raw, ok := p.metaValue("traceparent"); ok {
		var tp, ts string // decoded here, so the results stay off the heap
		_ = json.Unmarshal(raw, &tp)
		if raw, ok := p.metaValue("tracestate"); ok {
			_ = json.Unmarshal(raw, &ts)
		}
		traceparent, tracestate = tp, ts
	}
	if traceparent == "" {
		traceparent, tracestate = h.Get("Traceparent"), h.Get("Tracestate")
	}
	if len(traceparent) > 128 || len(tracestate) > 512 {
		return "", ""
	}
	return traceparent, tracestate
}

// cancelled cancels the fast-path call a notifications/cancelled names.
func (x *fastHTTP) cancelled(sid string, params json.RawMessage) {
	s := x.known(sid)
	if s == nil {
		return
	}
	var cp struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &cp) != nil || cp.RequestID == nil {
		return
	}
	id, err := jsonrpc.MakeID(cp.RequestID)
	if err != nil {
		return
	}
	s.mu.Lock()
	cancel := s.calls[id.Raw()]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// answer takes the agent's answer to a request the fast path sent it and
// acknowledges it as the SDK acknowledges any answer (202). Answers to
// the SDK's own requests go to the SDK.
func (x *fastHTTP) answer(w http.ResponseWriter, r *http.Request, sid string, m wireMsg) bool {
	ask, _ := m.id.Raw().(string)
	if !strings.HasPrefix(ask, askPrefix) || !postHeadersOK(r) {
		return false
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v >= modernVersion {
		return false
	}
	s := x.known(sid)
	if s == nil {
		return false
	}
	s.mu.Lock()
	ch := s.asks[ask]
	delete(s.asks, ask)
	s.mu.Unlock()
	if ch == nil {
		return false
	}
	resp := &jsonrpc.Response{ID: m.id, Result: m.result}
	if m.err != nil && string(m.err) != "null" {
		var je jsonrpc.Error
		_ = json.Unmarshal(m.err, &je) // readMsg checked it decodes
		resp.Error = &je
	}
	ch <- resp // buffered
	w.WriteHeader(http.StatusAccepted)
	return true
}

// writeRPCError answers a POST with one JSON-RPC error, as the SDK's
// handler answers requests it refuses.
func writeRPCError(w http.ResponseWriter, status int, id jsonrpc.ID, jerr *jsonrpc.Error) {
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: jerr})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err == nil {
		_, _ = w.Write(data)
	}
}

// fastStream is one fast-path POST's response. A call that sends the
// agent nothing before its response is answered with one JSON message
// (application/json, with its Content-Length, in one write): the agent
// has the whole answer as soon as it arrives and no event stream to
// parse. One that sends notifications or requests first gets an SSE
// stream, as the SDK answers every call, carrying them and then its
// response. Streamable HTTP lets a server answer a POST either way, and
// every client must take both.
type fastStream struct {
	w      http.ResponseWriter
	x      *fastHTTP
	s      *fastSession // nil for a modern request
	modern bool

	mu      sync.Mutex
	started bool // the head of an SSE answer is written
	done    bool // the response is written or the POST is gone

	cancel context.CancelFunc // the call's
	hard   hardLink           // the call's in-flight entry (see inflight.addCancel)
}

// The SDK's head of an SSE answer. The slices are shared by every answer:
// the server only reads them, and a later Set replaces them.
var (
	sseCacheControl = []string{"no-cache, no-transform"}
	sseContentType  = []string{"text/event-stream"}
	sseConnection   = []string{"keep-alive"}
)

// The head of a JSON answer: the SDK's, as it writes one in its JSON
// response mode.
var jsonContentType = []string{"application/json"}

func newFastStream(w http.ResponseWriter, x *fastHTTP, s *fastSession, modern bool) *fastStream {
	return &fastStream{w: w, x: x, s: s, modern: modern}
}

// startSSE sets the head of an SSE answer (o.mu held), before the first
// event is written.
func (o *fastStream) startSSE() {
	if o.started {
		return
	}
	o.started = true
	h := o.w.Header()
	h["Cache-Control"] = sseCacheControl
	h["Content-Type"] = sseContentType
	h["Connection"] = sseConnection
}

// writeJSON writes the whole answer as one JSON message of len(head)+
// len(body)+len(tail) bytes and flushes it (o.mu held): the server sends
// head and answer in one write with their Content-Length, and the
// handler's remaining work (the call's log line and metrics) comes after.
func (o *fastStream) writeJSON(status int, head, body, tail []byte) {
	h := o.w.Header()
	h["Cache-Control"] = sseCacheControl
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(len(head) + len(body) + len(tail))}
	h["Date"] = httpDate()
	if status != 0 {
		o.w.WriteHeader(status)
	}
	_, err := o.w.Write(head)
	if err == nil && len(body) > 0 {
		_, err = o.w.Write(body)
	}
	if err == nil && len(tail) > 0 {
		_, err = o.w.Write(tail)
	}
	if fl, ok := o.w.(http.Flusher); ok && err == nil {
		fl.Flush()
	}
}

// httpDate is the Date header of a fast-path answer: the one net/http
// would write, formatted once per second instead of per answer.
func httpDate() []string {
	now := time.Now()
	if d := cachedDate.Load(); d != nil && d.sec == now.Unix() {
		return d.v
	}
	d := &dateValue{sec: now.Unix(), v: []string{now.UTC().Format(http.TimeFormat)}}
	cachedDate.Store(d)
	return d.v
}

type dateValue struct {
	sec int64
	v   []string // shared by every answer in that second: only read
}

var cachedDate atomic.Pointer[dateValue]

var errStreamClosed = errors.New("front: write to closed stream")

// event writes one SSE message event with data and flushes it.
func (o *fastStream) event(data []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return errStreamClosed
	}
	return o.writeEvent(data, true)
}

// writeEvent writes one SSE message event (o.mu held), flushed when
// flush is set.
func (o *fastStream) writeEvent(data []byte, flush bool) error {
	o.startSSE()
	_, err := io.WriteString(o.w, "event: message\ndata: ")
	if err == nil {
		_, err = o.w.Write(data)
	}
	if err == nil {
		_, err = io.WriteString(o.w, "\n\n")
	}
	if flush {
		_ = http.NewResponseController(o.w).Flush()
	}
	return err
}

// notify sends a notification on the stream.
func (o *fastStream) notify(method string, params any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Request{Method: method, Params: raw})
	if err != nil {
		return err
	}
	return o.event(data)
}

// log sends a log message when the agent's level admits it, as
// ServerSession.Log decides: a legacy session's logging/setLevel level
// (nothing before one), a modern request's _meta level (the fast path
// takes only requests without one: nothing).
func (o *fastStream) log(params *mcp.LoggingMessageParams) error {
	if o.s == nil {
		return nil
	}
	level := o.x.f.levels.of(o.s.ss)
	if level == "" || levelRank(string(params.Level)) < levelRank(level) {
		return nil
	}
	return o.notify("notifications/message", params)
}

// levelRank orders MCP log levels as the SDK does (unknown = debug).
func levelRank(l string) int {
	switch l {
	case "info":
		return 1
	case "notice":
		return 2
	case "warning":
		return 3
	case "error":
		return 4
	case "critical":
		return 5
	case "alert":
		return 6
	case "emergency":
		return 7
	}
	return 0
}

// request sends a request to the agent on the stream and waits for its
// answer (the agent POSTs it to the session; see fastHTTP.answer). Only
// roots/list gets here: agents that could be asked for elicitation or
// sampling take the SDK path. ctx bounds the wait; when it ends first the
// agent is told, as the SDK tells it, with notifications/cancelled.
func (o *fastStream) request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if o.s == nil || method != "roots/list" {
		return nil, &unsupportedError{fmt.Sprintf("%q", method), "the request cannot be forwarded on this path"}
	}
	id := askPrefix + strconv.FormatUint(o.x.seq.Add(1), 10)
	jid, _ := jsonrpc.MakeID(id)
	ch := make(chan *jsonrpc.Response, 1)
	o.s.mu.Lock()
	o.s.asks[id] = ch
	o.s.mu.Unlock()
	forget := func() {
		o.s.mu.Lock()
		delete(o.s.asks, id)
		o.s.mu.Unlock()
	}
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Request{ID: jid, Method: method, Params: params})
	if err == nil {
		err = o.event(data)
	}
	if err != nil {
		forget()
		return nil, fmt.Errorf("front: %s failed: %w", method, err)
	}
	select {
	case resp := <-ch:
		// Errors read as the SDK's session reports them (its call wraps a
		// refusal and an undecodable answer alike in "calling <method>").
		if resp.Error != nil {
			return nil, fmt.Errorf("front: %s failed: calling %q: %w", method, method, resp.Error)
		}
		var res mcp.ListRootsResult
		if err := json.Unmarshal(resp.Result, &res); err != nil {
			return nil, fmt.Errorf("front: %s failed: calling %q: %w", method, method, err)
		}
		return json.Marshal(&res)
	case <-ctx.Done():
		forget()
		_ = o.notify("notifications/cancelled", &mcp.CancelledParams{Reason: ctx.Err().Error(), RequestID: id})
		return nil, fmt.Errorf("front: %s failed: %w", method, ctx.Err())
	}
}

// respond writes the call's response and ends the stream: as one JSON
// message when nothing was streamed before it, else as the stream's last
// event. A modern protocol error the SDK maps to an HTTP status is
// written as plain JSON with that status, as the SDK writes it.
func (o *fastStream) respond(resp *jsonrpc.Response) {
	if resp.Error == nil {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.done {
			return
		}
		o.done = true
		// The SDK's encoding of a response, without re-validating the
		// result this path produced; its pieces go straight into the
		// server's buffer (no copy of the result is made).
		var head [64]byte
		h := append(appendID(append(head[:0], `{"jsonrpc":"2.0","id":`...), resp.ID), `,"result":`...)
		if !o.started {
			o.writeJSON(0, h, resp.Result, []byte("}"))
			return
		}
		// SSE data must stay on one line.
		result := resp.Result
		if bytes.ContainsAny(result, "\r\n") {
			var c bytes.Buffer
			if json.Compact(&c, result) != nil {
				return
			}
			result = c.Bytes()
		}
		// The last event is not flushed: the handler returns at once and
		// the server writes it with the end of the response, in one write.
		if _, err := io.WriteString(o.w, "event: message\ndata: "); err == nil {
			if _, err = o.w.Write(h); err == nil {
				if _, err = o.w.Write(result); err == nil {
					_, _ = io.WriteString(o.w, "}\n\n")
				}
			}
		}
		return
	}
	data, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return
	}
	o.done = true
	status := modernErrorStatus(o.modern, resp)
	if !o.started {
		o.writeJSON(status, data, nil, nil)
		return
	}
	if status != 0 {
		o.w.Header().Set("Content-Type", "application/json")
		_, _ = o.w.Write(data)
		return
	}
	// The last event is not flushed: the handler returns at once and the
	// server writes it with the end of the response, in one write.
	_ = o.writeEvent(data, false)
}

// close ends the stream: nothing more is written to the POST.
func (o *fastStream) close() {
	o.mu.Lock()
	o.done = true
	o.mu.Unlock()
}

// gone is what the POST's end does to its call: nothing more is written
// to it, and a modern call (the POST is the request) is cancelled.
func (o *fastStream) gone() {
	o.close()
	if o.modern && o.cancel != nil {
		o.cancel()
	}
}

// modernErrorStatus is the HTTP status the SDK gives a 2026-07-28 error
// response (SEP-2575), 0 for none.
func modernErrorStatus(modern bool, resp *jsonrpc.Response) int {
	if !modern || resp.Error == nil {
		return 0
	}
	var je *jsonrpc.Error
	if !errors.As(resp.Error, &je) {
		return 0
	}
	switch je.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return 0
}

// levelTable remembers the log level each HTTP session set with
// logging/setLevel (the SDK keeps it private), for the fast path.
type levelTable struct {
	mu sync.Mutex
	m  map[*mcp.ServerSession]string
}

func (t *levelTable) set(ss *mcp.ServerSession, level string) {
	if ss == nil || ss.ID() == "" {
		return // stdio and stateless sessions never reach the HTTP fast path
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[*mcp.ServerSession]string{}
	}
	if _, seen := t.m[ss]; !seen {
		go func() {
			_ = ss.Wait()
			t.mu.Lock()
			delete(t.m, ss)
			t.mu.Unlock()
		}()
	}
	t.m[ss] = level
}

func (t *levelTable) of(ss *mcp.ServerSession) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[ss]
}

// fastCounter is the counter of calls the HTTP fast path answered,
// registered with the first HTTP front.
func (m *Metrics) fastCounter() prometheus.Counter {
	if m == nil {
		return nil
	}
	m.fastOnce.Do(func() {
		m.fast = prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_http_fast_path_calls_total",
			Help: "tools/call requests over HTTP answered by the native fast path instead of the MCP library's request handling (the rest of the calls went through it).",
		})
		m.reg.MustRegister(m.fast)
	})
	return m.fast
}

func (m *Metrics) fastCall() {
	if c := m.fastCounter(); c != nil {
		c.Inc()
	}
}

// passResult appends to dst the backend's raw tool result as the SDK would
// send it, without decoding it (both fast paths, through answerFast):
// content an array of text blocks, isError true
// when present, structuredContent anything but null, _meta an object
// (reserved io.modelcontextprotocol/* keys dropped), resultType dropped;
// content defaults to [], and a modern request gets this server's
// serverInfo and "resultType":"complete". ok is false for anything else,
// which takes the SDK's conversion (toResult).
func passResult(dst, raw []byte, modern bool, serverInfo []byte) (out []byte, outcome string, ok bool) {
	// One pass validates the result and finds its members.
	var buf [8]member
	v, top, ok := wholeObject(buf[:0], raw, maxDepth-1)
	if !ok || v[0] != '{' || !plainNames(top) {
		return dst, "", false
	}
	outcome = "ok"
	var content, sc []byte
	var meta []member
	for _, m := range top {
		switch string(m.name) {
		case "content":
			if !textBlockArray(m.value) {
				return dst, "", false
			}
			content = m.value
		case "isError":
			if string(m.value) != "true" {
				return dst, "", false
			}
			outcome = "tool_error"
		case "structuredContent":
			if string(m.value) == "null" {
				return dst, "", false
			}
			sc = m.value
		case "_meta":
			var mbuf [8]member
			all, ok := plainMembers(mbuf[:0], m.value)
			if !ok {
				return dst, "", false
			}
			for _, mm := range all {
				if !bytes.HasPrefix(mm.name, []byte(reservedMetaPrefix)) {
					meta = append(meta, mm)
				}
			}
		case "resultType":
		default:
			return dst, "", false
		}
	}
	dst = append(dst, `{"content":`...)
	if content != nil {
		dst = append(dst, content...)
	} else {
		dst = append(dst, `[]`...)
	}
	if sc != nil {
		dst = append(append(dst, `,"structuredContent":`...), sc...)
	}
	if outcome == "tool_error" {
		dst = append(dst, `,"isError":true`...)
	}
	if len(meta) > 0 || modern {
		dst = append(dst, `,"_meta":{`...)
		if modern {
			dst = append(append(dst, `"`+mcp.MetaKeyServerInfo+`":`...), serverInfo...)
		}
		for i, m := range meta {
			if i > 0 || modern {
				dst = append(dst, ',')
			}
			dst = append(append(append(append(dst, '"'), m.name...), `":`...), m.value...)
		}
		dst = append(dst, '}')
	}
	if modern {
		dst = append(dst, `,"resultType":"complete"`...)
	}
	return append(dst, '}'), outcome, true
}

// textBlockArray reports whether v is an array of text content blocks
// the SDK passes through unchanged: "type":"text", a string "text",
// optionally a _meta object with members, nothing else.
func textBlockArray(v []byte) bool {
	var buf [4][]byte
	blocks, ok := elements(buf[:0], v)
	if !ok {
		return false
	}
	var mbuf [4]member
	for _, b := range blocks {
		ms, ok := plainMembers(mbuf[:0], b)
		if !ok {
			return false
		}
		typed, text := false, false
		for _, m := range ms {
			switch string(m.name) {
			case "type":
				if string(m.value) != `"text"` {
					return false
				}
				typed = true
			case "text":
				if m.value[0] != '"' {
					return false
				}
				text = true
			case "_meta":
				if m.value[0] != '{' || emptyObject(m.value) { // the SDK drops an empty one
					return false
				}
			default:
				return false
			}
		}
		if !typed || !text {
			return false
		}
	}
	return true
}

// appendID appends a JSON-RPC id as JSON.
func appendID(dst []byte, id jsonrpc.ID) []byte {
	switch v := id.Raw().(type) {
	case int64:
		return strconv.AppendInt(dst, v, 10)
	case string:
		b, _ := json.Marshal(v)
		return append(dst, b...)
	}
	return append(dst, "null"...)
}
