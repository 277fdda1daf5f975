package front

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A legacy session's request ids are unique among its requests in
// flight, whichever path serves them: the SDK refuses a request whose id
// is in flight among the requests it serves, the fast path one whose id
// is in flight among its own calls, and the two tables meet here. The
// ids of the requests handed to the SDK are held (fastSession.sdk) from
// before the SDK reads them until the SDK writes their response (or the
// POST ends); a fast-path call with one of them is refused, and so is a
// request for the SDK whose id a fast-path call holds, both with the
// SDK's own answer to a duplicate.

// sdkBound is offered every POST of the legacy session sid that the fast
// path did not take, before the SDK serves it. When the POST carries a
// request whose id a fast-path call holds, it answers the POST and
// reports answered. Otherwise it holds the ids of the POST's requests and
// returns the writer to give the SDK (it lets them go as their responses
// are written) and a func that lets go of the rest, to run when the SDK
// has served the POST.
func (x *fastHTTP) sdkBound(w http.ResponseWriter, r *http.Request, sid string, body []byte) (sw http.ResponseWriter, done func(), answered bool) {
	if x == nil {
		return w, func() {}, false
	}
	ids := postRequestIDs(body)
	if len(ids) == 0 {
		return w, func() {}, false
	}
	s := x.session(sid)
	if s == nil {
		return w, func() {}, false // the SDK answers an unknown session
	}
	s.mu.Lock()
	for _, id := range ids {
		if _, dup := s.calls[id.Raw()]; dup && sdkWouldCheckIDs(r, s) {
			s.mu.Unlock()
			refuseDuplicate(w, id)
			return w, nil, true
		}
	}
	for _, id := range ids {
		s.sdk[id.Raw()]++
	}
	s.mu.Unlock()
	hw := &heldWriter{ResponseWriter: w, s: s, held: ids}
	return hw, hw.releaseAll, false
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

// sdkWouldCheckIDs reports whether the SDK would get as far as its check
// of in-flight ids with this POST: its handler's checks of the headers
// pass (the fast path's own conditions). Otherwise the SDK answers it.
func sdkWouldCheckIDs(r *http.Request, s *fastSession) bool {
	if !postHeadersOK(r) {
		return false
	}
	init := s.ss.InitializeParams()
	if init == nil {
		return false
	}
	v := r.Header.Get("Mcp-Protocol-Version")
	return v == "" || v == init.ProtocolVersion
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
// agent can never see an answer and then have the id refused.
type heldWriter struct {
	http.ResponseWriter
	s    *fastSession
	mu   sync.Mutex
	held []jsonrpc.ID
}

func (w *heldWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if len(w.held) > 0 {
		w.answered(p)
	}
	w.mu.Unlock()
	return w.ResponseWriter.Write(p)
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

// releaseAll lets go of every id still held: the SDK has served the POST.
// (A request whose POST the agent dropped may still run in the SDK; its id
// is let go here, see the package notes.)
func (w *heldWriter) releaseAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
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

func (w *heldWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *heldWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
