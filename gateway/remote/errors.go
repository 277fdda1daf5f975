package remote

import (
	"errors"
	"fmt"
	"net/netip"
)

// Sentinels for branch points. Errors returned by this package wrap one of
// them (or a typed error below) with %w.
var (
	// ErrClosed: the connection was closed by Close or failed earlier.
	ErrClosed = errors.New("remote: connection closed")
	// ErrSessionExpired: the server answered 404 to a request carrying the
	// session id; the connection is unusable and a new one must initialize.
	ErrSessionExpired = errors.New("remote: session expired (HTTP 404)")
	// ErrMessageTooLarge: one message (outbound, a JSON body or an SSE event)
	// exceeds Options.MaxMessageBytes.
	ErrMessageTooLarge = errors.New("remote: message exceeds the size cap")
	// ErrStreamClosed: an SSE stream ended before the message it was
	// expected to carry.
	ErrStreamClosed = errors.New("remote: event stream ended")
	// ErrNotSSE: a response that had to be an event stream was not one.
	ErrNotSSE = errors.New("remote: response is not text/event-stream")
	// ErrAuthRequired: the server asked for credentials the connection
	// does not have (401, or 403 insufficient_scope) and no Authorizer
	// could supply them without the user.
	ErrAuthRequired = errors.New("remote: authorization required")
	// ErrBadMessage: an outbound message is not a single JSON-RPC object.
	ErrBadMessage = errors.New("remote: outbound message is not a JSON-RPC object")
)

// URLError reports a server URL refused before any connection is made.
type URLError struct {
	URL    string // the URL as given, with any userinfo removed and query values hidden
	Reason string
}

func (e *URLError) Error() string {
	return fmt.Sprintf("remote: URL %q refused: %s", e.URL, e.Reason)
}

// BlockedError reports a connection the SSRF guard refused: the host
// resolved (or redirected) to an address in a refused range. It is checked
// on the address actually dialled, so DNS rebinding cannot slip past it.
type BlockedError struct {
	Addr  netip.Addr
	Range string // "loopback", "private", "link-local", ...
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("remote: address %s is %s; the SSRF guard refuses it (a user-scope declaration may set allowPrivate: true)", e.Addr, e.Range)
}

// HTTPError reports an HTTP status the transport could not turn into a
// JSON-RPC message.
type HTTPError struct {
	Method string // HTTP method
	Status int
	Body   string // at most a few hundred bytes of the body, control characters removed
}

func (e *HTTPError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("remote: %s answered HTTP %d", e.Method, e.Status)
	}
	return fmt.Sprintf("remote: %s answered HTTP %d: %s", e.Method, e.Status, e.Body)
}
