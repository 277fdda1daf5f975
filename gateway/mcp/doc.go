// Package mcp is sluice's native MCP client.
//
// It owns the protocol: the classification of JSON-RPC messages (kept as
// raw JSON), the outbound queue with its byte cap, the client lifecycle
// (idle, starting, ready, closed or failed), the dual-era handshake
// (2026-07-28 server/discover, falling back to the legacy initialize
// handshake), request multiplexing, cancellation, progress, pagination of
// list methods, and the typed errors every fault turns into. How bytes
// reach the server is a Transport; the stdio transport (the line framer
// with its inbound byte cap, a child's pipes) is this package's own, and
// spawning and tearing down the server's process group belongs to
// gateway/proc, which Start uses.
//
// It imports only the standard library and gateway/proc. It must never
// import the gateway root, another gateway package, or any third-party
// module (in particular not the MCP SDK, which gateway/front owns).
//
// # Transports
//
// New(t, opts) runs the client core over any Transport; Start (spawn a
// process group) and NewClient (existing pipes) build the stdio one. The
// contract, which a remote transport (streamable HTTP, legacy SSE) in its
// own package implements as well:
//
//   - Messages, not bytes. Send takes one complete JSON-RPC message
//     (compact JSON, no framing) and Receive returns one. Framing (stdio's
//     newlines, SSE's events, HTTP bodies) is the transport's. The core
//     classifies what Receive returns (Classify), so a transport never
//     parses JSON-RPC itself, and a line that is not JSON-RPC is set aside
//     as noise (or is fatal with Options.NoiseFatal) whatever carried it.
//   - One goroutine each way. The core calls Send and Flush from its
//     writer goroutine and Receive from its reader goroutine, never
//     concurrently with themselves. Send may block while the server does
//     not accept more, but must not wait for the answer: answers, server
//     requests and notifications all arrive through Receive, in the order
//     the server sent them on that channel. A transport that gets a
//     message per HTTP response reads each response on its own goroutine
//     and feeds one inbound queue.
//   - Bounds are the transport's too. Receive caps one message (stdio:
//     Options.MaxLineBytes) and fails instead of buffering without limit;
//     the core caps what is queued outbound (Options.MaxOutboundBytes)
//     until Send returns.
//   - Fatal errors are typed. Any error from Send, Flush or Receive ends
//     the client and fails every pending request with it. Return an
//     *Error: Code classifies the fault (CodeClosed when the server went
//     away, CodeProtocol, CodeOverload, CodeTimeout), Message says what
//     happened in words for a person ("server closed its stdout (process
//     exited with status 1)"), Op names the step, and StderrTail carries
//     bounded diagnostics for people only (a child's stderr, an HTTP error
//     body); it is never shown to a model. Any other error is reported as
//     the connection failing; io.EOF from Receive as the server closing
//     it.
//   - Close is the teardown. The core calls it once, on Client.Close or
//     after a fatal error, and expects it to unblock Send and Receive and
//     release everything (pipes and process group; connections and a
//     remote session, e.g. an HTTP DELETE). Client.Close reports the
//     process group's teardown outcome for the stdio transport; for other
//     transports the outcome is complete.
//
// Everything above the transport (ids, cancellation with
// notifications/cancelled, progress tokens, the era's _meta, timeouts per
// request) is the core's and behaves the same over every transport.
//
// # Why our own client and not the SDK's
//
// The official Go SDK's stdio transport starts the server with os/exec and,
// on close, signals only the direct child: there is no process group, so a
// server that forks (npx, shell wrappers, language servers) leaves
// grandchildren behind. It also reads with json.Decoder without an inbound
// byte cap, and queues outbound messages without a bound, so a server that
// floods stdout or stops reading stdin grows the gateway's memory. Those
// three properties are the heart of this product, so the client is ours;
// the SDK stays confined to gateway/front, the server side.
//
// # Why the framer only classifies
//
// The framer validates UTF-8 and JSON syntax in one pass and records the
// byte ranges of the envelope members (jsonrpc, id, method, params, result,
// error) without decoding params or results. Tool results travel through the
// gateway as raw bytes; decoding them into Go values would both cost time on
// multi-megabyte lines and round numbers through float64. Ids are compared
// by their canonical text, never as numbers.
//
// # Why invalid UTF-8 is an error and not replaced
//
// A tool result that reached a model with silently replaced bytes would
// misreport what the server said. Invalid UTF-8 is a protocol error that
// fails the client.
//
// # Why non-JSON lines are set aside, and what counts as one
//
// Servers print banners and logs to stdout more often than the spec would
// like. A line that is valid UTF-8 but not JSON, a JSON value that is not an
// object, or an object with none of the JSON-RPC members (a structured log
// line) is counted, kept in a small ring (Client.Noise) and logged, unless
// Options.NoiseFatal is set. An object that does look like JSON-RPC but
// breaks the envelope rules is a protocol error: guessing would risk
// answering the wrong request.
//
// # Why the outbound queue is fatal when full
//
// A server that stops reading its stdin is broken; retrying only delays the
// diagnosis. Crossing Options.MaxOutboundBytes fails the client with
// CodeOverload and tears the server down. A single message larger than the
// cap is refused on its own and the client stays usable.
//
// # Why the discover fallback never keys on an error code
//
// The 2026-07-28 stdio rules say a dual-era client probes server/discover
// and treats any error other than a recognised modern one, or silence, as a
// legacy server. Legacy servers answer the probe in many ways (-32601,
// -32600, -32602, a custom code, nothing at all), so only -32022 with a
// usable data.supported list counts as modern. After a probe times out its
// id is forgotten, so a late answer is dropped like any response to no
// pending request. When -32022 lists only legacy revisions, the client uses
// initialize, because that is the only way to speak them.
//
// # Why a writer goroutine, and when the caller writes itself
//
// A caller's Write to a pipe blocks as soon as the server stops reading, and
// a blocked write cannot be interrupted by the caller's timeout. Callers
// therefore append to a byte-counted queue, and one writer goroutine
// drains it (coalescing small lines into one write) — except for a
// request with no other in flight, when nothing is queued or being written
// and the pipe can refuse to wait (a server's stdin): then the caller
// writes its own line, sparing the hand-off to the writer goroutine. On
// Unix the pipe is written with a raw system call that takes what the
// pipe has room for and never waits (gateway/internal/rawio); elsewhere
// under a write deadline of a millisecond. What the pipe did not take
// goes first in the queue and the writer goroutine finishes the line, so
// the framing stays whole and a server that stopped reading still holds
// up no caller. The raw write also spares each call a deadline timer to
// arm, and the runtime's monitor thread a wake-up (see rawio). Many concurrent
// callers share one connection at several times the sequential rate
// (BenchmarkConcurrentCalls): overlapping requests queue and leave
// together, in one write the server reads at once.
//
// # Why a server's pipes are read and written with raw system calls
//
// A process that is idle between two calls has every Go thread parked and
// the runtime's monitor asleep; an os.File read or write announces a
// system call that might block and wakes the monitor, a thread switch and
// a run of short naps each time, twice per call on each side of the
// gateway. The server's pipes are non-blocking and polled, so on Unix the
// stdio transport reads and writes them through gateway/internal/rawio:
// the same poller waits, without the announcement.
//
// # Why notification callbacks run on their own goroutine
//
// The read loop must never wait on a caller: a slow OnNotification or
// OnProgress would stop responses from being delivered. Callbacks run in
// arrival order on one dispatch goroutine fed by a bounded queue; when the
// queue is full new callbacks are dropped and logged.
package mcp
