package front

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stdio fast path answers a flat-mode tools/call without the SDK's
// per-request machinery (see "Why tools/call has a fast path on stdio" in
// doc.go). It takes a request only when it can answer exactly as the SDK
// would; everything else, and every other method, goes to the SDK.

// stashMetaKey marks a request the fast path handed to the SDK after the
// backend had already answered it (an upstream input_required result,
// which only the SDK can turn into elicitation for a legacy agent). The
// flat handler then returns the stashed answer instead of calling the
// backend a second time. _meta is never forwarded upstream.
const stashMetaKey = "sluice.internal/answered"

// fastStdio is the fast path's state for one stdio connection.
type fastStdio struct {
	f    *front
	base context.Context // the connection's context: its values, never cancelled
	// inject hands a frame to the SDK as if the agent had sent it.
	inject func(frame []byte) error
	// ready is closed once Connect returned; ss and conn are set then
	// (unless it failed). The frame filter may see a request before.
	ready chan struct{}
	ss    *mcp.ServerSession
	conn  *cancelConn
	name  string // the peer's Conn

	serverInfo []byte    // this server's Implementation as JSON (modern _meta)
	out        io.Writer // where the connection writes its frames (whole frames per Write); nil: through the connection
	workers    *workers

	idMu               sync.Mutex
	ids                map[string]identity // modern _meta identity -> what the SDK makes of it
	last               *identity           // the last modern request's, with its bytes:
	lastCaps, lastInfo json.RawMessage
	legacy             *identity // the session's, from initialize (legacy era)
	init               *mcp.InitializeParams

	// Only take touches these: the frame filter offers one request at a
	// time, from whichever goroutine reads.
	memo    metaMemo    // the last _meta read
	lastRef upstreamRef // the last call's tool and its capability name
	lastCap string
}

// identity is what a request's _meta (or the session's initialize) says
// about the agent.
type identity struct {
	caps     *mcp.ClientCapabilities
	capsJSON json.RawMessage // caps as Peer.ClientCapabilities returns them
	client   string
}

// capsJSON is caps as peer.ClientCapabilities encodes them.
func capsJSON(caps *mcp.ClientCapabilities) json.RawMessage {
	p := peer{caps: caps}
	return p.ClientCapabilities()
}

// legacyIdentity is what the session's initialize says about the agent,
// worked out once per session.
func (s *fastStdio) legacyIdentity(init *mcp.InitializeParams) identity {
	s.idMu.Lock()
	defer s.idMu.Unlock()
	if s.legacy != nil && s.init == init {
		return *s.legacy
	}
	id := identity{caps: init.Capabilities, capsJSON: capsJSON(init.Capabilities)}
	if init.ClientInfo != nil {
		id.client = init.ClientInfo.Name
	}
	s.legacy, s.init = &id, init
	return id
}

func newFastStdio(f *front, base context.Context, inject func([]byte) error) *fastStdio {
	info, _ := json.Marshal(&mcp.Implementation{Name: f.opts.Name, Title: serverTitle, Version: f.opts.Version})
	// Every call ends when the drain bound expires (f.hard): f.inflight
	// cancels it (take's addCancel), so its context registers with no
	// parent (base is never cancelled: ServeStdio passes it without).
	return &fastStdio{f: f, base: base, inject: inject, serverInfo: info, ready: make(chan struct{}), workers: newWorkers()}
}

// stash holds answers the fast path handed over to the SDK, by token.
// An entry is normally taken at once by the SDK's handler of the
// handed-over request; one the SDK refused before its handler ran would
// stay forever, so entries expire after stashTTL and the stash never holds
// more than stashMax (the oldest go first).
type stash struct {
	mu  sync.Mutex
	m   map[string]stashEntry
	now func() time.Time // nil: time.Now
}

type stashEntry struct {
	raw json.RawMessage
	at  time.Time
}

const (
	stashTTL = 10 * time.Minute
	stashMax = 1024
)

func (s *stash) put(raw json.RawMessage) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now
	if s.now != nil {
		now = s.now
	}
	t := now()
	if s.m == nil {
		s.m = map[string]stashEntry{}
	}
	for k, e := range s.m {
		if t.Sub(e.at) >= stashTTL {
			delete(s.m, k)
		}
	}
	for len(s.m) >= stashMax {
		var oldest string
		var at time.Time
		for k, e := range s.m {
			if oldest == "" || e.at.Before(at) {
				oldest, at = k, e.at
			}
		}
		delete(s.m, oldest)
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	s.m[tok] = stashEntry{raw: raw, at: t}
	return tok
}

func (s *stash) take(tok string) (json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[tok]
	delete(s.m, tok)
	return e.raw, ok
}

// len reports how many answers are held (tests).
func (s *stash) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// stashed returns the answer stashed for req, if it carries a stash token.
func (f *front) stashed(req *mcp.CallToolRequest) (json.RawMessage, bool) {
	if req.Params == nil || req.Params.Meta == nil {
		return nil, false
	}
	tok, ok := req.Params.Meta[stashMetaKey].(string)
	if !ok {
		return nil, false
	}
	return f.answered.take(tok)
}

// fastParams is a tools/call's params as the fast path reads them.
type fastParams struct {
	name string
	args json.RawMessage
	meta []member // _meta's members: plain, distinct names
}

// metaValue is _meta[key] and whether it is present.
func (p *fastParams) metaValue(key string) (json.RawMessage, bool) {
	for i := range p.meta {
		if string(p.meta[i].name) == key {
			return p.meta[i].value, true
		}
	}
	return nil, false
}

// metaMap is _meta as a map (nil when absent), for the SDK's decoding.
func (p *fastParams) metaMap() map[string]json.RawMessage {
	if p.meta == nil {
		return nil
	}
	m := make(map[string]json.RawMessage, len(p.meta))
	for _, mb := range p.meta {
		m[string(mb.name)] = mb.value
	}
	return m
}

// parseFast reads params, refusing (ok false) anything but name, arguments
// and _meta, so what the SDK would make of the request is never in doubt.
func parseFast(raw json.RawMessage) (p fastParams, ok bool) {
	return parseFastInto(raw, make([]member, 0, 8), nil)
}

// parseFastInto is parseFast with _meta's members appended to meta, and,
// when memo is set, _meta read through it (see metaMemo).
func parseFastInto(raw json.RawMessage, meta []member, memo *metaMemo) (p fastParams, ok bool) {
	// raw is validated JSON (the whole frame was); a key that is not
	// written plainly, or one written twice, is left to the SDK, and so is
	// a _meta member name that is escaped or not UTF-8 (decoders rewrite
	// those) or written twice, or a number in _meta the SDK's float64
	// would not hold.
	var top [4]member
	ms, ok := members(top[:0], bytes.TrimSpace(raw))
	if !ok {
		return p, false
	}
	seen := 0
	for _, m := range ms {
		if m.escaped {
			return p, false
		}
		switch string(m.name) {
		case "name":
			if seen&1 != 0 {
				return p, false
			}
			seen |= 1
			if s, plain := asciiString(m.value); plain {
				p.name = s
			} else {
				// Decoded into a variable of its own: one whose address
				// is taken lives on the heap, and p would be that.
				var name string
				if json.Unmarshal(m.value, &name) != nil {
					return p, false
				}
				p.name = name
			}
		case "arguments":
			if seen&2 != 0 {
				return p, false
			}
			seen |= 2
			p.args = m.value
		case "_meta":
			if seen&4 != 0 || !isObject(m.value) {
				return p, false
			}
			seen |= 4
			if memo != nil {
				p.meta, ok = memo.members(meta, m.value)
			} else {
				p.meta, ok = plainMembers(meta, m.value)
				ok = ok && numbersFit(m.value)
			}
			if !ok {
				return p, false
			}
		default:
			return p, false
		}
	}
	return p, p.name != ""
}

// metaMemo remembers where the members of the last _meta object read on a
// stdio connection lie: an agent sends the same _meta (protocol version,
// client capabilities, client info) with every call, and the same bytes
// read the same way, so a _meta equal to the last one is not walked again
// (plainMembers, numbersFit). Only the connection's reading goroutine uses
// it (one take at a time). raw is the last _meta as the request holds it:
// a request's params are never written after they are read.
type metaMemo struct {
	raw   []byte
	spans []metaSpan
}

// metaSpan is one member of metaMemo.raw: its name and value as offsets.
type metaSpan struct{ name0, name1, val0, val1 int }

// members appends the members of v (a _meta object) to dst as
// plainMembers does, ok false where plainMembers or numbersFit refuses v.
func (mm *metaMemo) members(dst []member, v []byte) ([]member, bool) {
	if mm.raw != nil && bytes.Equal(mm.raw, v) {
		for _, sp := range mm.spans {
			dst = append(dst, member{name: v[sp.name0:sp.name1], value: v[sp.val0:sp.val1]})
		}
		return dst, true
	}
	n := len(dst)
	dst, ok := plainMembers(dst, v)
	if !ok || !numbersFit(v) {
		return dst, false
	}
	mm.raw, mm.spans = nil, mm.spans[:0]
	for _, m := range dst[n:] {
		// members slices names and values out of v keeping its
		// capacity: what a span's capacity lacks is its offset in v.
		name0, val0 := cap(v)-cap(m.name), cap(v)-cap(m.value)
		mm.spans = append(mm.spans, metaSpan{name0, name0 + len(m.name), val0, val0 + len(m.value)})
	}
	mm.raw = v
	return dst, true
}

// sdkMeta is meta as the SDK decodes it (values as any).
func sdkMeta(meta map[string]json.RawMessage) mcp.Meta {
	if meta == nil {
		return nil
	}
	m := make(mcp.Meta, len(meta))
	for k, v := range meta {
		var x any
		_ = json.Unmarshal(v, &x)
		m[k] = x
	}
	return m
}

// modernIdentity is what the SDK reads from a modern request's client
// capabilities and client info, remembered by their bytes: an agent sends
// the same ones on every request.
func (s *fastStdio) modernIdentity(caps, info json.RawMessage) identity {
	s.idMu.Lock()
	if s.last != nil && bytes.Equal(s.lastCaps, caps) && bytes.Equal(s.lastInfo, info) {
		id := *s.last // the same agent as the last request: no key built
		s.idMu.Unlock()
		return id
	}
	key := string(caps) + "\x00" + string(info)
	id, ok := s.ids[key]
	if ok {
		s.remember(caps, info, id)
	}
	s.idMu.Unlock()
	if ok {
		return id
	}
	meta := map[string]json.RawMessage{mcp.MetaKeyClientCapabilities: caps}
	if info != nil {
		meta[mcp.MetaKeyClientInfo] = info
	}
	req := &mcp.CallToolRequest{Session: s.ss, Params: &mcp.CallToolParamsRaw{Meta: sdkMeta(meta)}}
	id.caps = req.ClientCapabilities()
	id.capsJSON = capsJSON(id.caps)
	if ci := req.ClientInfo(); ci != nil {
		id.client = ci.Name
	}
	s.idMu.Lock()
	if s.ids == nil || len(s.ids) >= 16 { // bounded: a new set replaces the old
		s.ids = map[string]identity{}
	}
	s.ids[key] = id
	s.remember(caps, info, id)
	s.idMu.Unlock()
	return id
}

// remember keeps id as the last modern request's identity (s.idMu held).
func (s *fastStdio) remember(caps, info json.RawMessage, id identity) {
	s.lastCaps = append(s.lastCaps[:0], caps...)
	s.lastInfo = append(s.lastInfo[:0], info...)
	s.last = &id
}

// connected records the session Connect made and its connection (nil
// when it failed).
func (s *fastStdio) connected(ss *mcp.ServerSession, c *cancelConn) {
	if ss != nil && c != nil {
		s.ss, s.conn = ss, c
		s.name = fmt.Sprintf("session-%p", ss) // as newPeer names it
	}
	close(s.ready)
}

// framePool holds the buffers fast-path answers are encoded into: the
// frame is written to stdout at once and the buffer is free again.
var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledFrame bounds the buffers kept: a rare huge answer is left to
// the collector rather than held.
const maxPooledFrame = 64 << 10

// hook is the frame filter's fast hook, nil when the fast path is off.
// It serves every direct tool: flat mode's, and in gateway mode the
// exposed ones (ModeAuto may switch between the two while serving).
func (s *fastStdio) hook() frameTaker {
	if s.f.opts.noFastPath || (s.f.opts.Mode == ModeGateway && !s.f.b.Features().Expose) {
		return nil
	}
	return s
}

// claim registers a request the frame filter read as in flight on the
// connection (idClaimer); before Connect returned, or when it failed,
// there is nothing to register with.
func (s *fastStdio) claim(id jsonrpc.ID) claimResult {
	<-s.ready
	if s.conn == nil {
		return claimOK
	}
	return s.conn.claim(id)
}

// spawn runs fn on a worker (frameTaker).
func (s *fastStdio) spawn(fn func()) { s.workers.run(fn) }

// metaVersion is the _meta protocol version the fast path serves.
const metaVersion = `"` + modernVersion + `"`

// take is offered every request the frame filter passes, before the SDK
// decodes it: it takes a tools/call over when the fast path can answer it
// exactly as the SDK would, and returns the call that answers it (the
// frame filter runs it on its own goroutine once reading went on on a
// worker).
func (s *fastStdio) take(req *jsonrpc.Request) (run takenCall, taken bool) {
	if !req.IsCall() || req.Method != "tools/call" || s.f.direct.Load() == 0 {
		return nil, false
	}
	f := s.f
	<-s.ready
	ss, c := s.ss, s.conn
	if ss == nil {
		return nil, false
	}
	init := ss.InitializeParams()
	if init == nil {
		return nil, false // the SDK answers (or refuses) a call before the handshake
	}
	// One allocation holds the call's peer, its fast-path state, its
	// answer and _meta's members; run is its method. (A request declined
	// from here on leaves it to the collector: those are rare.)
	r := &fastRun{s: s, c: c, id: req.ID}
	p, ok := parseFastInto(req.Params, r.meta[:0], &s.memo)
	if !ok || p.name == flatReadResult {
		return nil, false
	}
	if _, present := p.metaValue(stashMetaKey); present {
		return nil, false
	}
	// The era of the request must be the session's, and a modern request's
	// _meta exactly what the SDK accepts without a word: the version it
	// speaks, client capabilities, optionally client info, no log level.
	caps, capsSet := p.metaValue(mcp.MetaKeyClientCapabilities)
	info, infoSet := p.metaValue(mcp.MetaKeyClientInfo)
	_, levelSet := p.metaValue(mcp.MetaKeyLogLevel)
	var who identity
	version := init.ProtocolVersion
	modern := false
	if v, present := p.metaValue(mcp.MetaKeyProtocolVersion); present {
		if string(v) != metaVersion || init.ProtocolVersion != modernVersion || !isObject(caps) || (infoSet && !isObject(info)) || levelSet {
			return nil, false
		}
		modern, version = true, modernVersion
		who = s.modernIdentity(caps, info)
	} else {
		if init.ProtocolVersion >= modernVersion || capsSet || infoSet {
			return nil, false
		}
		who = s.legacyIdentity(init)
	}
	var token any // set only when sent: the decoding target lives on the heap
	if t, ok := p.metaValue("progressToken"); ok {
		var v any
		if json.Unmarshal(t, &v) != nil {
			return nil, false
		}
		token = v
	}
	f.mu.Lock()
	var ref upstreamRef
	if e := f.flat[KindTools]; e != nil {
		ref, ok = e.owner[p.name]
	}
	f.mu.Unlock()
	if !ok {
		return nil, false // unlisted: the SDK path explains why
	}
	rid := f.newRequestID(nil) // stdio: no headers
	r.p, r.capability, r.modern = p, s.capabilityOf(ref), modern
	r.ctx, r.cancel = context.WithCancel(s.base)
	r.pr = peer{f: f, rid: rid, reqCtx: r.ctx, ss: ss, token: token, conn: s.name, caps: who.caps, capsJSON: who.capsJSON, version: version, client: who.client}
	pr := &r.pr
	pr.traceparent, pr.tracestate = metaString(&p, "traceparent", 128), metaString(&p, "tracestate", 512)
	if useBridge(pr) {
		r.cancel()
		return nil, false // a modern agent that can be asked: the input_required bridge
	}
	r.hard.cancel = r.cancel
	if !f.inflight.addCancel(&r.hard) {
		r.cancel()
		return nil, false // shutting down: the SDK path answers as such
	}
	// The frame filter claimed the request's id (claim), refusing one
	// in flight.
	if !c.adopt(req.ID, r.cancel) {
		f.inflight.doneCancel(&r.hard)
		r.cancel()
		return nil, false // the connection is closing: the SDK's path answers
	}
	if n := f.opts.fastTaken; n != nil {
		n.Add(1)
	}
	return r, true
}

// fastRun is one call the stdio fast path took: what run needs, the
// call's peer and its answer, in one allocation.
type fastRun struct {
	s          *fastStdio
	c          *cancelConn
	id         jsonrpc.ID
	p          fastParams
	capability string
	modern     bool
	ctx        context.Context
	cancel     context.CancelFunc
	hard       hardLink // the call's in-flight entry: a hard stop cancels it (inflight.addCancel)
	pr         peer
	q          fastCall
	resp       jsonrpc.Response
	meta       [4]member // p.meta's room: an agent's _meta has three or four members (version, capabilities, client, a progress token)
}

// capabilityOf is ref.capability(), the string kept from the last call
// while the calls name the same tool (take's goroutine only).
func (s *fastStdio) capabilityOf(ref upstreamRef) string {
	if ref != s.lastRef || s.lastCap == "" {
		s.lastRef, s.lastCap = ref, ref.capability()
	}
	return s.lastCap
}

// run answers the call (take's run).
func (r *fastRun) run() {
	s, f, c := r.s, r.s.f, r.c
	defer f.inflight.doneCancel(&r.hard)
	defer r.cancel()
	defer func() {
		// As guardMiddleware: a bug answers this request, it does not
		// end the process.
		if x := recover(); x != nil {
			c.forget(r.id)
			f.log.Error("panic in handler", "request_id", r.pr.rid, "method", "tools/call", "panic", fmt.Sprint(x), "stack", string(debug.Stack()))
			_ = c.Write(context.Background(), &jsonrpc.Response{ID: r.id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error (request " + r.pr.rid + ")"}})
		}
	}()
	r.resp.ID = r.id
	r.q = fastCall{name: r.p.name, args: r.p.args, capability: r.capability, rid: r.pr.rid, modern: r.modern, serverInfo: s.serverInfo,
		handOver: r, late: true}
	q, resp := &r.q, &r.resp
	handed := f.answerFast(r.ctx, q, &r.pr, resp)
	c.forget(r.id)
	// The call is counted and logged once the agent has its answer.
	defer func() {
		if q.call != nil {
			q.call.finish(r.ctx, q.outcome)
		}
	}()
	if !handed {
		bp := framePool.Get().(*[]byte)
		if frame, ok := appendResult((*bp)[:0], resp); ok && s.out != nil {
			_ = c.writeFrame(r.id, frame, s.out)
			if cap(frame) <= maxPooledFrame {
				*bp = frame
			}
			framePool.Put(bp)
		} else {
			framePool.Put(bp)
			_ = c.Write(context.Background(), resp)
		}
	}
}

// handOver is the call's fastCall.handOver (r is it: no method value to
// allocate).
func (r *fastRun) handOver(raw json.RawMessage) bool { return r.s.handOver(r.id, r.p, raw) }

// handOver gives req to the SDK with its answer stashed: the SDK's
// multi round-trip handling then runs as for any call.
func (s *fastStdio) handOver(id jsonrpc.ID, req fastParams, raw json.RawMessage) bool {
	tok := s.f.answered.put(raw)
	meta := sdkMeta(req.metaMap())
	if meta == nil {
		meta = mcp.Meta{}
	}
	meta[stashMetaKey] = tok
	params := map[string]any{"name": req.name, "_meta": meta}
	if req.args != nil {
		params["arguments"] = req.args
	}
	frame, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id.Raw(), "method": "tools/call", "params": params})
	if err == nil {
		err = s.inject(append(frame, '\n'))
	}
	if err != nil {
		s.f.answered.take(tok)
		s.f.log.Warn("cannot hand an input_required result to the SDK; answering it as it is", "err", err)
		return false
	}
	return true
}

func isObject(v json.RawMessage) bool { return len(v) > 0 && v[0] == '{' }

// withMember adds one member to a JSON object.
func withMember(obj json.RawMessage, member string) json.RawMessage {
	body := bytes.TrimSpace(obj[1 : len(obj)-1])
	out := make([]byte, 0, len(obj)+len(member)+2)
	out = append(out, '{')
	out = append(out, member...)
	if len(body) > 0 {
		out = append(out, ',')
		out = append(out, body...)
	}
	return append(out, '}')
}

// metaString is _meta[key] when it is a JSON string of at most max bytes.
func metaString(p *fastParams, key string, max int) string {
	raw, ok := p.metaValue(key)
	if !ok || len(raw) > max+2 {
		return ""
	}
	if s, plain := asciiString(raw); plain {
		return s
	}
	var v string // on the heap only for a value that needs decoding
	if json.Unmarshal(raw, &v) == nil {
		return v
	}
	return ""
}
