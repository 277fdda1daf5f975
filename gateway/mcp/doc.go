// Package mcp is sluice's native MCP client over stdio.
//
// It owns the wire: the line framer with its inbound byte cap, the
// classification of JSON-RPC messages (kept as raw JSON), the outbound queue
// with its byte cap, the client lifecycle (idle, starting, ready, closed or
// failed), the dual-era handshake (2026-07-28 server/discover, falling back
// to the legacy initialize handshake), request multiplexing, cancellation,
// progress, pagination of tools/list, and the typed errors every fault turns
// into. Spawning and tearing down the server's process group belongs to
// gateway/proc, which Start uses.
//
// It imports only the standard library and gateway/proc. It must never
// import the gateway root, another gateway package, or any third-party
// module (in particular not the MCP SDK, which gateway/front owns).
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
// # Why a writer goroutine instead of writing from the caller
//
// A caller's Write to a pipe blocks as soon as the server stops reading, and
// a blocked write cannot be interrupted by the caller's timeout. Callers
// therefore only append to a byte-counted queue, and one writer goroutine
// drains it (coalescing small lines into one write). The price is one
// goroutine hand-off per direction: a tools/call round trip costs about
// 1.5-1.8x a hand-written relay of the same bytes over the same pipes
// (BenchmarkRoundTrip), while many concurrent callers share one connection
// at several times the sequential rate (BenchmarkConcurrentCalls).
//
// # Why notification callbacks run on their own goroutine
//
// The read loop must never wait on a caller: a slow OnNotification or
// OnProgress would stop responses from being delivered. Callbacks run in
// arrival order on one dispatch goroutine fed by a bounded queue; when the
// queue is full new callbacks are dropped and logged.
package mcp
