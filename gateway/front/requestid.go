package front

// This file is the HTTP request id: the id a client or a proxy in front
// of sluice sends (X-Request-ID, else X-Correlation-ID), or one sluice
// makes up, echoed on every response and carried on every log line of
// the request (front's and the gateway's, through Peer.RequestID).
//
// # Why the id is sanitized rather than escaped
//
// The id lands in log lines, response headers and upstream requests'
// _meta. A value limited to [A-Za-z0-9_-]{1,64} needs no escaping in any
// of them and cannot forge a log field or a header; anything else is
// replaced by a generated id rather than repaired, so a client never
// sees its garbage echoed back.

import (
	"math/rand/v2"
	"net/http"
)

// Request id headers: RequestIDHeader is read first and always answered;
// CorrelationIDHeader is read when the first is absent or invalid.
const (
	RequestIDHeader     = "X-Request-ID"
	CorrelationIDHeader = "X-Correlation-ID"
	maxRequestIDLen     = 64
)

// validRequestID reports whether id matches [A-Za-z0-9_-]{1,64}.
func validRequestID(id string) bool {
	if len(id) == 0 || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// The headers' canonical forms, so that the per-request reads and writes
// below index the header maps directly instead of canonicalising (and
// allocating) the names on every request.
var (
	requestIDKey     = http.CanonicalHeaderKey(RequestIDHeader)
	correlationIDKey = http.CanonicalHeaderKey(CorrelationIDHeader)
)

// requestIDOf returns the request's id: a valid X-Request-ID, else a
// valid X-Correlation-ID, else a new random one.
func requestIDOf(h http.Header) string {
	for _, k := range [...]string{requestIDKey, correlationIDKey} {
		if vs := h[k]; len(vs) == 1 && validRequestID(vs[0]) {
			return vs[0]
		}
	}
	return newHTTPRequestID()
}

// newHTTPRequestID makes a request id: 96 random bits in hex, from the
// runtime's per-thread generator (seeded from the operating system): an
// id needs to be unique, not secret, and this one costs no system call.
func newHTTPRequestID() string {
	var b [24]byte
	for i, v := range [2]uint64{rand.Uint64(), uint64(rand.Uint32())} {
		n := 16
		if i == 1 {
			n = 8
		}
		for j := range n {
			b[i*16+n-1-j] = hexDigits[v&0xf]
			v >>= 4
		}
	}
	return string(b[:])
}

const hexDigits = "0123456789abcdef"

// tagRequestID settles the request's id, answers it on the response and
// leaves it, sanitized, as the request's only X-Request-ID (the SDK hands
// the request's headers to the tool handlers, which log it).
func tagRequestID(w http.ResponseWriter, r *http.Request) string {
	if vs := r.Header[requestIDKey]; len(vs) == 1 && validRequestID(vs[0]) {
		// The usual case costs nothing: the request's own value is the
		// answer's (the server only reads it, and a later Set or Add
		// makes a new slice: the parser caps it at its length).
		delete(r.Header, correlationIDKey)
		w.Header()[requestIDKey] = vs[:1:1]
		return vs[0]
	}
	id := requestIDOf(r.Header)
	delete(r.Header, correlationIDKey)
	vs := []string{id}
	r.Header[requestIDKey] = vs
	w.Header()[requestIDKey] = vs
	return id
}
