package mcp

import "sluice/gateway/proc"

// Transport carries JSON-RPC messages between the client core and one
// server. The core (handshake in both eras, multiplexing by id, the
// outbound byte cap, cancellation, progress, pagination, typed errors)
// never sees how bytes move; stdio (a child's pipes, newline framing) is
// one Transport, built by Start and NewClient. A remote transport
// (streamable HTTP, legacy SSE) lives in its own package and is handed to
// New. See the package comment, "Transports", for the contract in full.
type Transport interface {
	// Send hands one JSON-RPC message to the server: a complete JSON
	// object, compact, without framing (no trailing newline). The client
	// calls Send from a single goroutine, in order. Send may block while
	// the server does not accept more (a full pipe); it must return once
	// the message is handed over and never wait for the answer, which
	// arrives through Receive. An error is fatal to the client.
	Send(msg []byte) error

	// Flush is called after a run of Sends, when no further message is
	// queued: a transport that buffers writes them out now. A transport
	// without a buffer returns nil. An error is fatal to the client.
	Flush() error

	// Receive blocks until the next message from the server and returns
	// its bytes (one JSON-RPC message, or a line the core will set aside
	// as noise), owned by the caller. The client calls it from a single
	// goroutine. The transport bounds the size of one message itself and
	// fails rather than buffer without limit. Any error ends the client:
	// io.EOF when the server went away cleanly, otherwise preferably an
	// *Error whose Code classifies the fault (CodeClosed, CodeProtocol,
	// CodeOverload, CodeTimeout ...), whose Message says what happened in
	// words for a person, and whose StderrTail carries bounded
	// diagnostics (a child's stderr, an HTTP error body) when there are
	// any. After Close, Receive returns promptly.
	Receive() ([]byte, error)

	// Close ends the conversation and releases everything the transport
	// holds (pipes and process group, connections, sessions); it
	// unblocks Send and Receive. The client calls it once, on Close or
	// after a fatal error. An error is logged; it does not change the
	// client's outcome.
	Close() error
}

// processTransport is a Transport whose server is a local process group:
// Client.Close reports its teardown outcome.
type processTransport interface {
	Transport
	outcome() proc.Outcome
}
