package front

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A legacy session's request ids are unique among its requests in
// flight, whichever path serves them: the SDK refuses a request whose id
// is in flight among the requests it serves, the fast path one whose id
// is in flight among its own calls, and the two tables meet here. The
// ids of the requests handed to the SDK are held (fastSession.sdk) from
// before the SDK reads them until the SDK writes their response; a
// fast-path call with one of them is refused, and so is a request for the
// SDK whose id a fast-path call holds, both with the SDK's own answer to
// a duplicate, when the SDK would have come as far as its own check of
// ids with that POST (sdkWouldCheckIDs).
//
// A POST the agent drops does not end its requests: the SDK goes on
// running them and keeps their ids in flight until it writes their
// responses, to no one. So the SDK is not told that such a POST ended:
// it serves it until every response is written (the writer sees each
// one and lets its id go), while the dropped connection itself is closed
// at once (heldWriter.gone), so it holds no connection slot and gets no
// byte more.

// sdkBound is offered every POST of the legacy session sid that the fast
// path did not take, before the SDK serves it. When the POST carries a
// request whose id a fast-path call holds, it answers the POST and
// reports answered. Otherwise it holds the ids of the POST's requests and
// returns the writer and request to give the SDK (the writer lets the ids
// go as their responses are written) and a func to run when the SDK has
// served the POST.
func (x *fastHTTP) sdkBound(w http.ResponseWriter, r *http.Request, sid string, body []byte) (sw http.ResponseWriter, sr *http.Request, done func(), answered bool) {
	if x == nil {
		return w, r, func() {}, false
	}
	ids := postRequestIDs(body)
	if len(ids) == 0 {
		return w, r, func() {}, false
	}
	s := x.session(sid)
	if s == nil {
		return w, r, func() {}, false // the SDK answers an unknown session
	}
	s.mu.Lock()
	for _, id := range ids {
		if _, dup := s.calls[id.Raw()]; dup && sdkWouldCheckIDs(r, s, body) {
			s.mu.Unlock()
			refuseDuplicate(w, id)
			return w, r, nil, true
		}
	}
	for _, id := range ids {
		s.sdk[id.Raw()]++
	}
	s.mu.Unlock()
	hw := &heldWriter{ResponseWriter: w, s: s, held: ids, seen: x.f.opts.postsDropped}
	stop := context.AfterFunc(r.Context(), hw.gone)
	done = func() {
		stop()
		hw.releaseAll()
	}
	return hw, r.WithContext(context.WithoutCancel(r.Context())), done, false
}

// refuseDuplicate answers a request whose id is in flight as the SDK
// does: the head of an SSE answer is set by then, and the error replaces
// its Content-Type.
func refuseDuplicate(w http.ResponseWriter, id jsonrpc.ID) {
	h := w.Header()
	h["Cache-Control"] = sseCacheControl
	h["Connection"] = sseConnection
	writeRPCError(w, http.StatusBadRequest, id, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("duplicate in-flight request ID %v", id.Raw())})
}

// sdkWouldCheckIDs reports whether the SDK's handler would get as far as
// its check of in-flight ids with this POST of the legacy session s, in
// the order it checks: Content-Type, Accept and Last-Event-ID; an
// MCP-Protocol-Version header it supports (any of them, not only the
// session's; none reads as 2025-03-26); no batch from 2025-06-18 on; for
// each message a method it serves, an id exactly where the method needs
// one, params where they are required, and no 2026-07-28 request (the
// header's era or _meta's protocolVersion) but server/discover with
// matching versions; and for one message the 2026-07-28 standard
// headers. Otherwise the SDK refuses the POST with its own answer before
// it looks at ids. A message the fast path cannot read as the SDK does
// is left to the SDK (false).
func sdkWouldCheckIDs(r *http.Request, s *fastSession, body []byte) bool {
	if !postHeadersOK(r) || s.ss.InitializeParams() == nil {
		return false
	}
	header := r.Header.Get("Mcp-Protocol-Version")
	version := header
	if version == "" {
		version = "2025-03-26"
	} else if version < modernVersion && !slices.Contains(mcp.SupportedProtocolVersions(), version) {
		return false
	}
	v, ok := wholeValue(body, maxDepth-1)
	if !ok {
		return false
	}
	msgs := [][]byte{v}
	batch := v[0] == '['
	if batch {
		if version >= "2025-06-18" {
			return false
		}
		if msgs, ok = elements(nil, v); !ok || len(msgs) == 0 {
			return false
		}
	}
	for _, raw := range msgs {
		m, ok := readMsg(raw)
		if !ok {
			return false
		}
		if !m.isReq {
			continue
		}
		need, known := sdkMethods[m.method]
		if !known || need.notification == m.idSet || (!need.paramsOptional && m.params == nil) {
			return false
		}
		meta := metaProtocolVersion(m.params)
		if (m.idSet && version >= modernVersion) || meta != "" {
			if m.method != "server/discover" || header == "" || meta == "" || header != meta {
				return false
			}
		}
		if !batch && header >= modernVersion {
			if r.Header.Get("Mcp-Method") != m.method {
				return false
			}
			// tools/call, resources/read and prompts/get need Mcp-Name
			// too; being 2026-07-28 requests they were refused above.
		}
	}
	return true
}

// sdkMethod is what the SDK's check of a request needs of one method.
type sdkMethod struct {
	notification   bool // takes no id
	paramsOptional bool // params may be left out
}

// sdkMethods are the methods the SDK's server serves (its
// serverMethodInfos) with their requirements.
var sdkMethods = map[string]sdkMethod{
	"completion/complete":              {},
	"server/discover":                  {paramsOptional: true},
	"initialize":                       {},
	"ping":                             {paramsOptional: true},
	"prompts/list":                     {paramsOptional: true},
	"prompts/get":                      {},
	"tools/list":                       {paramsOptional: true},
	"tools/call":                       {},
	"resources/list":                   {paramsOptional: true},
	"resources/templates/list":         {paramsOptional: true},
	"resources/read":                   {},
	"logging/setLevel":                 {},
	"resources/subscribe":              {},
	"subscriptions/listen":             {},
	"resources/unsubscribe":            {},
	"notifications/cancelled":          {notification: true, paramsOptional: true},
	"notifications/initialized":        {notification: true, paramsOptional: true},
	"notifications/roots/list_changed": {notification: true, paramsOptional: true},
	"notifications/progress":           {notification: true},
}

// metaProtocolVersion is params._meta's protocolVersion when it is a
// string, as the SDK reads it ("" for none).
func metaProtocolVersion(params []byte) string {
	if params == nil {
		return ""
	}
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	v, _ := p.Meta[mcp.MetaKeyProtocolVersion].(string)
	return v
}

// postRequestIDs returns the ids of the requests in a POST body (one message
// or a batch), as the SDK reads them; a message whose id the SDK might
// read otherwise is left out.
func postRequestIDs(body []byte) []jsonrpc.ID {
	v, ok := wholeValue(body, maxDepth-1)
	if !ok {
		return nil
	}
	one := func(msg []byte) (jsonrpc.ID, bool) {
		m, ok := readMsg(msg)
		return m.id, ok && m.isReq && m.idSet
	}
	switch v[0] {
	case '{':
		if id, ok := one(v); ok {
			return []jsonrpc.ID{id}
		}
	case '[':
		elems, ok := elements(nil, v)
		if !ok {
			return nil
		}
		var ids []jsonrpc.ID
		for _, e := range elems {
			if id, ok := one(e); ok {
				ids = append(ids, id)
			}
		}
		return ids
	}
	return nil
}

// heldWriter is the writer the SDK answers a POST with while its requests'
// ids are held: a response's id is let go just before the response is
// written (the SDK has dropped it from its own table by then), so the
// agent can never see an answer and then have the id refused. Once the
// agent has dropped the POST (gone), the connection is closed and what
// the SDK writes goes no further, but its responses still let their ids
// go. Every write goes through mu, so closing the connection never races
// one.
type heldWriter struct {
	http.ResponseWriter
	s        *fastSession
	mu       sync.Mutex
	held     []jsonrpc.ID
	dropped  bool // the agent is gone: nothing reaches the connection
	finished bool // the SDK has served the POST
	seen     *atomic.Int64
}

func (w *heldWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.held) > 0 {
		w.answered(p)
	}
	if w.dropped {
		return 0, errStreamClosed
	}
	return w.ResponseWriter.Write(p)
}

func (w *heldWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.dropped {
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *heldWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.dropped {
		f.Flush()
	}
}

// gone runs when the agent has dropped the POST (its context is done
// before the SDK served it): the connection is closed, the SDK goes on.
func (w *heldWriter) gone() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished || w.dropped {
		return
	}
	w.dropped = true
	if w.seen != nil {
		w.seen.Add(1)
	}
	if conn, _, err := http.NewResponseController(w.ResponseWriter).Hijack(); err == nil {
		_ = conn.Close()
	}
}

// answered lets go of the ids of the responses in p: SSE events (the SDK
// writes one event per Write) or one JSON message (w.mu held).
func (w *heldWriter) answered(p []byte) {
	payloads := [][]byte{p}
	if bytes.HasPrefix(p, []byte("event:")) || bytes.HasPrefix(p, []byte("id:")) || bytes.HasPrefix(p, []byte("data:")) {
		payloads = payloads[:0]
		for line := range bytes.SplitSeq(p, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				payloads = append(payloads, bytes.TrimPrefix(d, []byte(" ")))
			}
		}
	}
	for _, d := range payloads {
		if m, ok := readMsg(d); ok && !m.isReq && m.idSet {
			w.release(m.id)
		}
	}
}

func (w *heldWriter) release(id jsonrpc.ID) {
	for i, h := range w.held {
		if h == id {
			w.held = append(w.held[:i], w.held[i+1:]...)
			w.s.mu.Lock()
			w.s.letGo(id)
			w.s.mu.Unlock()
			return
		}
	}
}

// releaseAll lets go of every id still held: the SDK has served the POST
// (it served it to the end even when the agent dropped it, see above, so
// what is still held is what it answered without a response message:
// a refusal of the whole POST).
func (w *heldWriter) releaseAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.finished = true
	w.s.mu.Lock()
	for _, id := range w.held {
		w.s.letGo(id)
	}
	w.s.mu.Unlock()
	w.held = nil
}

// letGo drops one hold of id (s.mu held).
func (s *fastSession) letGo(id jsonrpc.ID) {
	if n := s.sdk[id.Raw()]; n > 1 {
		s.sdk[id.Raw()] = n - 1
	} else {
		delete(s.sdk, id.Raw())
	}
}

func (w *heldWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// refuseBadIDs answers, before any path serves it, a POST the SDK would
// leave unanswered or answer ambiguously: a request whose id is null (the
// SDK reads it as a notification and answers nothing; stdio answers it
// -32600 too, see filterFrames), and a batch in which two requests share
// an id (their responses could not be told apart, and the SDK answers
// only one). Nothing of such a POST runs. It reports whether it answered.
func refuseBadIDs(w http.ResponseWriter, body []byte) bool {
	b := bytes.TrimLeft(body, " \t\r\n")
	if len(b) == 0 {
		return false
	}
	batch := b[0] == '['
	if !batch && !bytes.Contains(b, nullText) {
		return false // the common case: no null anywhere, no batch
	}
	v, ok := wholeValue(b, maxDepth-1)
	if !ok {
		return false // the SDK answers what it cannot parse
	}
	msgs := [][]byte{v}
	if batch {
		if msgs, ok = elements(nil, v); !ok {
			return false
		}
	}
	var seen map[any]bool
	for i, msg := range msgs {
		id, method, isReq := requestID(msg)
		if !isReq {
			continue
		}
		where := ""
		if batch {
			where = fmt.Sprintf(" (message %d of the batch)", i+1)
		}
		if string(id) == "null" {
			refuseIDs(w, "Invalid Request: the request id is null"+where+"; an id must be a string or an integer (a notification has no id member)")
			return true
		}
		if !batch || id == nil || method == "" {
			continue
		}
		key, ok := idKey(id)
		if !ok {
			continue // the SDK reads and answers an id it cannot take
		}
		if seen[key] {
			what := "the same id"
			if len(id) <= 64 {
				what = "request id " + string(id)
			}
			refuseIDs(w, fmt.Sprintf("Invalid Request: %s is used by two requests of this batch (message %d again); send each request with an id of its own, nothing of the batch was run", what, i+1))
			return true
		}
		if seen == nil {
			seen = map[any]bool{}
		}
		seen[key] = true
	}
	return false
}

var nullText = []byte("null")

// requestID returns the id member (as written; nil when absent) and the
// method of one message, and whether it is a request (has a method). The
// last member of a name counts, as in the SDK's decoder.
func requestID(msg []byte) (id []byte, method string, isReq bool) {
	eachMember(msg, func(k, v []byte) bool {
		key, plain := asciiString(k)
		if !plain && json.Unmarshal(k, &key) != nil {
			return true
		}
		switch key {
		case "id":
			id = v
		case "method":
			isReq = true
			_ = json.Unmarshal(v, &method)
		}
		return true
	})
	return id, method, isReq
}

// idKey is an id as the SDK compares ids: a string, or a number's int64.
func idKey(raw []byte) (any, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil, false
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil || !id.IsValid() {
		return nil, false
	}
	return id.Raw(), true
}

// refuseIDs answers a POST with -32600 and id null: the request's own id
// would name another request, or none.
// The id member is written (null), as JSON-RPC requires of an error
// response; the SDK's encoder would leave it out.
func refuseIDs(w http.ResponseWriter, msg string) {
	text, _ := json.Marshal(msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":null,"error":{"code":%d,"message":%s}}`, jsonrpc.CodeInvalidRequest, text))
}
