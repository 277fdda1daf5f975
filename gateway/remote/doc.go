// Package remote is the HTTP side of sluice's MCP client: it carries
// JSON-RPC messages to and from remote MCP servers over streamable HTTP
// (both protocol eras) and the legacy HTTP+SSE transport, through an
// SSRF-guarded dialer.
//
// It owns: the transports (POST with a JSON or an event-stream answer,
// Mcp-Session-Id and DELETE on close, the GET stream, resumption with
// Last-Event-ID, the 2026-07-28 request headers), auto selection
// (streamable HTTP, then legacy SSE), bounded retries, the event-stream
// parser with its caps, and the guard (URL rules, the address check at
// connect time, the redirect policy). It hands raw message bytes to the
// MCP client core and never decodes params or results beyond the envelope
// members it routes on.
//
// It imports only the standard library. It must never import the gateway
// root, gateway/mcp (the core uses this package, not the reverse),
// gateway/oauth (which implements this package's Authorizer), or any
// third-party module.
//
// # Why our own transport and not the SDK's
//
// The SDK's streamable client decodes every message into its own types and
// reads event streams without a per-event cap; sluice's core keeps results
// as raw bytes and caps every message at 4 MiB in both directions. The
// transport is also where the retry rule lives: a tools/call is never
// retried once a connection carried it, because a tool may have side
// effects. Those rules are easier to keep in three small files than to
// wrap around another library's retry loop.
//
// # Why the guard checks in the dialer's Control hook
//
// Checking a host name before the request leaves a window: the name can
// resolve to a public address for the check and to 169.254.169.254 for the
// connection (DNS rebinding). Control runs after resolution on the exact
// address being connected, for every connection, redirects included. The
// client uses no environment proxy for the same reason: through a proxy,
// the guard would judge the proxy's address, not the server's. Redirects
// are followed only on the same origin (an http to https upgrade of the
// same host is allowed) so that declared headers never travel to another
// host.
//
// # Why every request gets an answer from Receive
//
// The core waits for a response per request id. When HTTP fails (connect
// refused, a 5xx, a stream that ends early, a body over the cap) the
// transport writes the response itself: a JSON-RPC error with code -32603
// naming the server and the HTTP status, never a header value or a token.
// A modern server's JSON-RPC error in a 400 body (-32020, -32022) is passed
// through as the server's own answer, re-addressed to the request id, since
// era detection depends on seeing it.
//
// # Why cancellation aborts the POST
//
// In the 2026-07-28 era closing a request's response stream is the
// cancellation, and no notifications/cancelled is sent; in the legacy era
// the notification is sent and the stream is closed as well, because the
// core drops a late answer anyway.
//
// # Why the transport reads tools/list results
//
// A 2026-07-28 tool may declare x-mcp-header on an argument; the client
// must then mirror that argument into an Mcp-Param-<Name> header on every
// call, and must not call a tool whose declaration is invalid. Only the
// transport sees both the listing and the HTTP request, so it records the
// declarations from tools/list results and withholds invalid tools from
// the listing (re-encoding only the tools array; every other byte, numbers
// included, passes through untouched).
//
// # Why auto falls back only on initialize
//
// A legacy HTTP+SSE server answers a POST to its SSE URL with 400, 404 or
// 405. The core's server/discover probe failing that way only makes the core
// fall back to initialize; when initialize fails the same way and no
// streamable POST ever succeeded, the transport opens the event stream at
// the same URL, as the 2025-11-25 backwards-compatibility rules describe.
package remote
