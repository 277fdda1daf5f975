package front

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

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
	base context.Context                   // the connection's context
	ss   atomic.Pointer[mcp.ServerSession] // set once Connect returned
	// ready is closed once Connect returned (ss is set unless it failed):
	// the SDK may read a request before that.
	ready chan struct{}
	// inject hands a frame to the SDK as if the agent had sent it.
	inject func(frame []byte) error

	serverInfo []byte // this server's Implementation as JSON (modern _meta)
}

func newFastStdio(f *front, base context.Context, inject func([]byte) error) *fastStdio {
	info, _ := json.Marshal(&mcp.Implementation{Name: f.opts.Name, Title: serverTitle, Version: f.opts.Version})
	return &fastStdio{f: f, base: base, inject: inject, serverInfo: info, ready: make(chan struct{})}
}

// stash holds answers the fast path handed over to the SDK, by token.
type stash struct {
	mu sync.Mutex
	m  map[string]json.RawMessage
}

func (s *stash) put(raw json.RawMessage) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]json.RawMessage{}
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	s.m[tok] = raw
	return tok
}

func (s *stash) take(tok string) (json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	raw, ok := s.m[tok]
	delete(s.m, tok)
	return raw, ok
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
	meta mcp.Meta
}

// parseFast reads params, refusing (ok false) anything but name, arguments
// and _meta, so what the SDK would make of the request is never in doubt.
func parseFast(raw json.RawMessage) (p fastParams, ok bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil || top == nil {
		return p, false
	}
	for k, v := range top {
		switch k {
		case "name":
			if json.Unmarshal(v, &p.name) != nil || p.name == "" {
				return p, false
			}
		case "arguments":
			p.args = v
		case "_meta":
			if json.Unmarshal(v, &p.meta) != nil {
				return p, false
			}
		default:
			return p, false
		}
	}
	return p, p.name != ""
}

// connected records the session Connect made (nil when it failed).
func (s *fastStdio) connected(ss *mcp.ServerSession) {
	if ss != nil {
		s.ss.Store(ss)
	}
	close(s.ready)
}

// hook is the cancelConn's fast hook, nil when the fast path is off.
func (s *fastStdio) hook() func(*cancelConn, *jsonrpc.Request) bool {
	if s.f.opts.noFastPath || s.f.opts.Mode != ModeFlat {
		return nil
	}
	return s.take
}

// take is the cancelConn's fast hook: it takes req over when the fast
// path can answer it, and answers it from a goroutine of its own.
func (s *fastStdio) take(c *cancelConn, req *jsonrpc.Request) bool {
	f := s.f
	select {
	case <-s.ready:
	case <-c.closed:
		return false
	}
	ss := s.ss.Load()
	if f.opts.Mode != ModeFlat || ss == nil {
		return false
	}
	init := ss.InitializeParams()
	if init == nil {
		return false // the SDK answers (or refuses) a call before the handshake
	}
	p, ok := parseFast(req.Params)
	if !ok || p.name == flatReadResult {
		return false
	}
	// The era of the request must be the session's, and a modern request's
	// _meta exactly what the SDK accepts without a word: the version it
	// speaks, client capabilities, optionally client info, no log level.
	modern := false
	if v, present := p.meta[mcp.MetaKeyProtocolVersion]; present {
		if v != modernVersion || init.ProtocolVersion != modernVersion {
			return false
		}
		if _, ok := p.meta[mcp.MetaKeyClientCapabilities].(map[string]any); !ok {
			return false
		}
		if ci, present := p.meta[mcp.MetaKeyClientInfo]; present {
			if _, ok := ci.(map[string]any); !ok {
				return false
			}
		}
		if _, present := p.meta[mcp.MetaKeyLogLevel]; present {
			return false
		}
		modern = true
	} else if init.ProtocolVersion >= modernVersion {
		return false
	}
	if _, present := p.meta[stashMetaKey]; present {
		return false
	}
	f.mu.Lock()
	var ref upstreamRef
	if e := f.flat[KindTools]; e != nil {
		ref, ok = e.owner[p.name]
	}
	f.mu.Unlock()
	if !ok {
		return false // unlisted: the SDK path explains why
	}
	creq := &mcp.CallToolRequest{Session: ss, Params: &mcp.CallToolParamsRaw{Meta: p.meta, Name: p.name, Arguments: p.args}}
	rid := f.newRequestID()
	ctx, cancel := context.WithCancel(s.base)
	pr := f.newPeer(ctx, rid, creq)
	if useBridge(pr) {
		cancel()
		return false // a modern agent that can be asked: the input_required bridge
	}
	if !f.inflight.add() {
		cancel()
		return false // shutting down: the SDK path answers as such
	}
	forget := c.track(req.ID, cancel)
	if n := f.opts.fastTaken; n != nil {
		n.Add(1)
	}
	go func() {
		defer f.inflight.done()
		defer cancel()
		stop := context.AfterFunc(f.hard, cancel)
		defer stop()
		resp := &jsonrpc.Response{ID: req.ID}
		defer func() {
			// As guardMiddleware: a bug answers this request, it does not
			// end the process.
			if r := recover(); r != nil {
				forget()
				f.log.Error("panic in handler", "request_id", rid, "method", "tools/call", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				_ = c.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error (request " + rid + ")"}})
			}
		}()
		if handed := s.call(ctx, req.ID, creq, rid, ref.capability(), pr, modern, resp); handed {
			forget()
			return
		}
		forget()
		_ = c.Write(context.Background(), resp)
	}()
	return true
}

// call runs one fast-path call and fills resp; it reports true when it
// handed the request to the SDK instead (resp unused).
func (s *fastStdio) call(ctx context.Context, id jsonrpc.ID, req *mcp.CallToolRequest, rid, capability string, p *peer, modern bool, resp *jsonrpc.Response) (handed bool) {
	f := s.f
	c := f.invoke(ctx, req.Params.Name, rid, capability, p, func(ctx context.Context, p Peer) (json.RawMessage, error) {
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		return f.b.Call(ctx, f.callRequest(req, capability, args), p)
	})
	var pe *ProtocolError
	if errors.As(c.err, &pe) {
		var je *jsonrpc.Error
		asJSONRPC(c.err, &je)
		c.finish(ctx, "invalid")
		resp.Error = je
		return false
	}
	if c.err == nil {
		if out, outcome, ok := passResult(c.raw); ok {
			c.finish(ctx, outcome)
			resp.Result = s.annotate(out, modern)
			return false
		}
		if bytes.Contains(c.raw, []byte(`"inputRequests"`)) && s.handOver(id, req, c.raw) {
			return true // the SDK's path counts and logs it
		}
	}
	res, outcome := f.toResult(ctx, rid, c.raw, c.err, c.log)
	c.finish(ctx, outcome)
	if res == nil { // cancelled by the agent
		resp.Error = errRequestCancelled
		return false
	}
	if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	out, err := json.Marshal(res)
	if err != nil {
		c.log.Error("encoding a tool result failed", "err", err)
		resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error (request " + rid + ")"}
		return false
	}
	resp.Result = s.annotate(out, modern)
	return false
}

// handOver gives req to the SDK with its answer stashed: the SDK's
// multi round-trip handling then runs as for any call.
func (s *fastStdio) handOver(id jsonrpc.ID, req *mcp.CallToolRequest, raw json.RawMessage) bool {
	tok := s.f.answered.put(raw)
	meta := mcp.Meta{}
	for k, v := range req.Params.Meta {
		meta[k] = v
	}
	meta[stashMetaKey] = tok
	frame, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id.Raw(),
		"method":  "tools/call",
		"params":  map[string]any{"name": req.Params.Name, "arguments": req.Params.Arguments, "_meta": meta},
	})
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

// passResult checks that raw (a backend's tool result) is one the SDK
// would decode and re-encode without changing a byte of its meaning, and
// returns it with the upstream hop's protocol fields removed and content
// defaulted to [], plus the outcome label. It accepts only the common
// shape: content an array of text blocks (type, text and an optional
// _meta object), isError true when present, structuredContent anything
// but null, _meta an object. ok is false for anything else (other content
// types, annotations, unknown members, malformed, input_required ...),
// which takes the SDK's conversion (toResult).
func passResult(raw json.RawMessage) (out json.RawMessage, outcome string, ok bool) {
	raw = bytes.TrimSpace(stripProtocolFields(raw))
	if len(raw) < 2 || raw[0] != '{' {
		return nil, "", false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return nil, "", false
	}
	outcome = "ok"
	for k, v := range top {
		switch k {
		case "content":
			if !textBlocks(v) {
				return nil, "", false
			}
		case "isError":
			if string(v) != "true" {
				return nil, "", false
			}
			outcome = "tool_error"
		case "structuredContent":
			if string(v) == "null" {
				return nil, "", false
			}
		case "_meta":
			if !isObject(v) {
				return nil, "", false
			}
		default:
			return nil, "", false
		}
	}
	if _, has := top["content"]; !has {
		raw = withMember(raw, `"content":[]`)
	}
	return raw, outcome, true
}

// textBlocks reports whether v is an array of text content blocks the SDK
// passes through unchanged: "type":"text", a string "text", optionally a
// _meta object, nothing else.
func textBlocks(v json.RawMessage) bool {
	if len(v) == 0 || v[0] != '[' {
		return false
	}
	var blocks []map[string]json.RawMessage
	if json.Unmarshal(v, &blocks) != nil {
		return false
	}
	for _, b := range blocks {
		if string(b["type"]) != `"text"` {
			return false
		}
		if t, ok := b["text"]; !ok || len(t) == 0 || t[0] != '"' {
			return false
		}
		for k, x := range b {
			switch k {
			case "type", "text":
			case "_meta":
				if !isObject(x) {
					return false
				}
			default:
				return false
			}
		}
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

// annotate adds what the SDK adds to a 2026-07-28 result: our serverInfo
// in _meta (unless the result names one) and resultType "complete".
func (s *fastStdio) annotate(out json.RawMessage, modern bool) json.RawMessage {
	if !modern {
		return out
	}
	var top map[string]json.RawMessage
	if bytes.Contains(out, []byte(`"_meta"`)) && json.Unmarshal(out, &top) == nil {
		if m, ok := top["_meta"]; ok {
			var meta map[string]json.RawMessage
			if json.Unmarshal(m, &meta) == nil {
				if meta == nil {
					meta = map[string]json.RawMessage{}
				}
				if _, ok := meta[mcp.MetaKeyServerInfo]; !ok {
					meta[mcp.MetaKeyServerInfo] = s.serverInfo
				}
				if b, err := json.Marshal(meta); err == nil {
					top["_meta"] = b
				}
			}
			top["resultType"] = json.RawMessage(`"complete"`)
			if b, err := json.Marshal(top); err == nil {
				return b
			}
		}
	}
	member := `"_meta":{"` + mcp.MetaKeyServerInfo + `":` + string(s.serverInfo) + `},"resultType":"complete"`
	return withMember(out, member)
}
