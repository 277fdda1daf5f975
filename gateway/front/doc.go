// Package front serves the gateway as an MCP server for agents, over stdio
// (ServeStdio) and streamable HTTP on one endpoint, /mcp (NewHTTPHandler,
// ServeHTTP), in both protocol eras: legacy (initialize, sessions,
// 2025-11-25 and older) and modern (2026-07-28: server/discover,
// per-request _meta, resultType, ttlMs/cacheScope, header validation).
//
// front owns the agent-facing surface: the gateway-mode tools (find,
// describe, call, read_result, execute) and their descriptions, flat-mode
// naming (plus read_result as sluice__read_result, a name no upstream tool
// is given, whenever results can be paged) and pass-through of resources, prompts, completions and logging,
// the per-request Peer (progress, log messages, elicitation and sampling
// back to the agent), HTTP security (loopback bind, Host and Origin checks,
// bearer token, body cap, session expiry), graceful drain, JSON logs with a
// request id per call, and the Prometheus registry behind /metrics.
//
// It defines the Backend interface that the gateway root implements. It
// must never import the gateway root (sluice/gateway), sandbox or wasm, and
// it is the only package that imports the MCP Go SDK and the Prometheus
// client; neither module's types appear in its exported API.
//
// # Why the official SDK here but our own client upstream
//
// Serving agents is where the protocol surface is widest and changes
// fastest: two eras on two transports, sessions, SSE, resumption, header
// validation, multi round-trip requests, caching fields. The SDK is
// conformance-tested against exactly that, so front delegates the wire
// protocol to it and keeps only policy. Talking to local stdio servers is
// the opposite case: there the product's value is process-group teardown
// and byte caps in both directions, which the SDK's stdio client does not
// have, so gateway/mcp is ours.
//
// # Why two SDK handlers behind one endpoint
//
// The SDK serves 2026-07-28 requests only in stateless mode, and
// server-to-client requests (approvals by elicitation, forwarded sampling)
// only with sessions. Handler routes each request: a session id, or a body
// without per-request _meta, goes to the session handler; a modern version
// header, server/discover or a _meta protocolVersion goes to the stateless
// one. Both share one SDK server, so the tool surface is the same.
//
// # Why front checks Host and Origin itself
//
// The SDK's DNS-rebinding check only knows loopback names. front checks
// Host and Origin against loopback plus the configured allow-lists before
// anything else (403), so a remote deployment can name its hosts without
// switching the protection off.
//
// # Why HTTP limits act at accept and before the SDK
//
// A client that trickles a body, or simply opens connections, costs a
// descriptor and a goroutine each for as long as it likes unless
// something bounds it. front bounds it four ways (HTTPLimits): headers
// within 10s and the whole request within ReadTimeout (408), idle
// keep-alives closed after IdleTimeout, and at most MaxConnsPerClient
// connections per remote address, refused with 503 at accept before the
// HTTP server reads a byte. A request front will not serve (403, 401, 404,
// too large) is answered and its connection closed at once: Go's server
// would otherwise read the rest of the body, first before answering and
// then after, for as long as the client takes. Legacy sessions are capped
// by MaxSessions: a new one closes the session idle the longest (no POST
// in flight) and counts it, or is refused with 503 when all are busy.
// There is no write timeout: a response may be a long SSE stream.
//
// # Why backend errors are not shown to the model
//
// Only a *ToolError's text reaches the model; any other error is logged in
// full and the model sees a generic message with the request id. Text that
// can reach a model is written on purpose, and an arbitrary error string
// may carry paths, environment values or upstream stderr.
//
// # Why a running call can still ask a modern client
//
// In 2026-07-28 a server may not send requests in the middle of a call; it
// asks for input by answering input_required and letting the client retry
// with the answers. Approvals, though, are decided deep inside a backend
// call that is already running. For a modern request from a client that
// declared elicitation, front therefore runs the call as a job detached
// from the request (bridge.go): when the backend calls Peer.Elicit, the
// request is answered with input_required and a random requestState naming
// the job; the retry delivers the answer and attaches to the job until it
// ends or asks again. A job waits at most ClientRequestTimeout for the
// retry and is cancelled when the agent goes away. Clients without
// elicitation get ErrUnsupported at once, and the gateway answers with a
// tool error naming the remedy.
//
// Upstream input_required results are a different path: front passes them
// through untouched, hands the agent's retry (inputResponses,
// requestState) back in CallRequest, and the SDK asks a legacy agent by
// elicitation on the backend's behalf.
//
// # Why ServeStdio takes fd 1 away from the rest of the process
//
// One stray line on stdout breaks the agent's session, and the failure
// looks like a broken client. Recovering panics in handlers is not enough:
// any library in the process may print. When serving on os.Stdout,
// ServeStdio writes frames to a private duplicate of fd 1 and points fd 1
// at stderr until it returns, so stray writes end up in the log.
//
// # Why stdin is read through the poller
//
// An agent hands serve a blocking pipe as stdin, and Go reads such a file
// with a plain read(2): the reading goroutine holds its thread (and that
// thread's P) in the kernel until the agent writes. With one P, which is
// what 'sluice serve' runs stdio with by default and what --procs auto
// starts either transport with (a readied goroutine then runs next on the
// same thread instead of waking a second one, several microseconds a
// hand-off on a small machine), nothing else ran until the
// runtime's monitor took the P back: the upstream's answer waited for it,
// and the latency serve added doubled. So ServeStdio reads a pipe or
// socket stdin through a non-blocking duplicate the runtime's poller
// waits on, and puts the descriptor back in blocking mode on return (the
// mode belongs to the pipe, which the agent or a shell may read after us).
// A terminal or file stdin is read as it is.
//
// # Why stdin and stdout use raw system calls, and stdout the poller too
//
// Even on a polled descriptor, os.File reads and writes through
// syscall.Read and syscall.Write, which announce to the runtime a system
// call that might block. Between two calls every thread is parked and the
// runtime's monitor thread asleep; the announcement wakes it (a futex, a
// thread switch) and sets it napping every 20 µs until the process is
// idle again. That was two or three monitor wake-ups per sequential call
// and about a sixth of serve's CPU per call. A non-blocking descriptor
// never blocks, so on Linux ServeStdio reads stdin and writes stdout
// through gateway/internal/rawio: raw system calls, with the poller
// waiting when the descriptor is not ready, and the runtime never told
// (elsewhere through os.File on the same poller). For that stdout (a pipe or socket) is made non-blocking as stdin is, with the
// same care: put back on return, after the descriptor for frames is
// closed (so no raw write can find it blocking), and left alone when
// handed over non-blocking. An agent that stops reading now parks the
// writing call on the poller instead of holding the only thread in a
// write. The read that finds a pipe empty before each wait stays: the
// poller forgets a readiness it saw before the wait starts, so waiting
// without that read first could miss a request and hang; raw, it costs
// a fraction of a microsecond.
//
// # Why the front does not choose its thread count
//
// How many threads run Go code is the process's choice, made once in
// 'sluice serve' (--procs; auto is gateway/internal/threads), not here:
// the front's stdio and HTTP paths answer the same at any count, which
// changes only how fast. Nothing on
// the call path reports to the thread monitor (it samples the process's
// CPU time and the scheduler's latency histogram on its own), so a call
// costs the same whichever policy runs.
//
// # Why stdin EOF does not end the session at once
//
// A client may write its requests and close stdin straight away (a shell
// pipe does). The SDK's connection treats the end of input as the end of
// the session and cancels what it queued, initialize included, so such a
// client got no answer at all and a request behind initialize could be
// handled as if initialize never came. On stdio front holds the end of
// input back from the SDK until every request read so far is answered
// (at most ShutdownTimeout, then running calls are cancelled and answered
// as such), and reads nothing behind initialize until it is answered.
//
// # Why stdin frames pass a filter before the SDK
//
// The SDK decodes stdin as one JSON stream: a single line that is not
// JSON (or not a JSON-RPC message, or longer than the cap) ends the
// session. front reads lines itself, bounded by MaxLineBytes, passes the
// well-formed ones on and answers the rest: -32700 for a line that is not
// JSON, -32600 for one that is not a message or too long (id null unless
// the id could be read). The session goes on.
//
// The filter also answers two requests the SDK would leave unanswered:
// one whose id is null (the SDK reads it as a notification, and would run
// a tools/call nobody hears of) and one whose id is that of a request in
// flight (the SDK refuses it but clears its id so as not to name the
// other request, and then writes nothing). Both get -32600 with id null,
// naming the problem, and neither runs. For the second the filter
// registers every request's id when it reads the line, before the SDK or
// the fast path sees it: a duplicate sent right behind the first is
// caught however soon the SDK would have read either.
//
// # Why a call's error can also be a JSON-RPC error
//
// Most failures belong in the tool result, where the model can read and
// correct them. Some are protocol answers the agent's client must see as
// such (an upstream "unknown tool", a 2026-07-28 missing client
// capability); a backend returns *ProtocolError for those.
//
// # Why a cancelled request goes unanswered on stdio only
//
// After notifications/cancelled the protocol asks the receiver not to
// respond, but the SDK's connection answers every request it handled.
// On stdio front owns the connection, so it wraps it and drops the
// response to a request the agent cancelled. On streamable HTTP the SDK
// owns the connection (and the POST stream waits for an answer), so there
// the cancelled request gets a proper JSON-RPC error, -32800 "request
// cancelled", instead of the bare context error the SDK would send with
// code 0.
//
// # Why tools/call has a fast path on stdio
//
// Serving a flat-mode (or exposed) tool call through the SDK costs a typed decode of
// the request, the SDK's per-request dispatch, a decode of the raw result
// into the SDK's typed result and its re-encoding: several times what the
// upstream hop itself costs. On stdio front owns the connection, so it
// answers the common flat-mode tools/call itself (fastpath.go): the
// request is taken off the connection before the SDK reads it, run through
// the same runTool pieces (request id, in-flight tracking, drain, panic
// recovery, log line, metrics) and answered with the backend's raw result
// through the same connection (cancellation and batches included). It
// takes a request only when the answer is certain to be the SDK's: an
// initialized session of the request's era, a listed tool, params of
// name, arguments and _meta only, no bridge (a modern agent that can be
// asked), and it passes a result on unchanged only when it is plain text
// content the SDK would not alter; anything else is converted as the SDK
// path converts it. An upstream input_required result is handed back to
// the SDK with its answer, so the SDK's elicitation for legacy agents
// runs as for any call. A test runs one conversation both ways and
// requires the same frames.
//
// # Why tools/call has a fast path on HTTP too
//
// Over streamable HTTP the SDK's handler re-reads every POST, builds a
// stream per request, routes the call through its connection's queues and
// (for a 2026-07-28 request) a whole session per request, then decodes and
// re-encodes the result: several times the upstream hop. The handler sees
// each POST first, so it answers a flat-mode tools/call itself
// (httpfast.go) when every check the SDK's handler makes passes (method,
// Content-Type, Accept, Last-Event-ID, MCP-Protocol-Version against the
// session's or the request's era, Mcp-Method and Mcp-Name for 2026-07-28,
// a single message with exactly the members and id forms the SDK's
// decoder reads the same way), for a live initialized legacy session or a
// modern request, a listed tool, and no bridge. The call runs through the
// same pieces as the SDK path (request id from X-Request-ID, trace
// context, in-flight tracking, drain, panic recovery, one log line,
// metrics). A call that sends the agent nothing before its response is
// answered with that one JSON message (application/json with its
// Content-Length, written in one system call), which the agent reads
// without parsing an event stream and at once; streamable HTTP lets a
// server answer a POST either way and every client must read both. A
// call that sends progress or log messages (a legacy session's
// logging/setLevel level is remembered for this) or asks roots/list is
// answered on an SSE stream as the SDK answers it: those first, then the
// response; a modern protocol error the SDK maps to an HTTP status gets
// that status. The call's log line and sluice_calls_total are written
// after the answer left (the line's duration is still the call's), so
// neither is on the answer's path. Cancellation
// works as on the SDK path: notifications/cancelled for a legacy session,
// the POST's end for a modern request (a legacy call outlives its POST,
// as it does on the SDK's session connection). roots/list asked during a
// legacy call goes out on the POST's stream with an id of the fast path's
// own, and the agent's answer POST is taken before the SDK sees it; an
// agent that declared elicitation or sampling (approvals, forwarded
// sampling, validated by the SDK) takes the SDK path, and an upstream
// input_required result is handed to the SDK with its answer stashed.
// Because the SDK never sees those POSTs, the handler (not the SDK) closes
// idle sessions. A test runs one conversation both ways and requires the
// same answers; sluice_http_fast_path_calls_total counts the calls taken.
//
// # Why exposed tools are named among every listed tool
//
// In gateway mode the backend marks the tools to serve directly
// (Item.Expose). front names them with flat mode's rules over the whole
// listing, not over the exposed few, so an exposed tool has exactly its
// flat-mode name and exposing one more tool never renames another; the
// gateway tools' names are reserved, so an upstream "find" under NoPrefix
// stays "<server>__find". They are registered, called (the stdio fast
// path included) and refused when unlisted like flat tools.
//
// # Why a tool listing has a byte budget
//
// Every byte of a tools/list answer goes into the model's context on
// every turn, and an upstream writes its own definitions: one tool with
// a 135 KB title (or description, schema, _meta, icons) would take the
// context over. find and describe are bounded by the gateway (one line
// per tool, describe's answer through the result filters); flat tools
// and exposed ones are bounded here: at most MaxToolListingBytes per
// definition and MaxListingBytes for all of them (the largest shortened
// to a common size, the small ones left whole). A shortened definition
// keeps its name, so it stays callable and the upstream still validates
// what it gets; it gives up its title's length, icons, _meta, output
// schema, description's length, input schema and annotations, in that
// order, as far as needed, and its description says so and how to see
// it whole. Review baselines and describe keep the whole definition.
// Resources, resource templates and prompts are upstream definitions
// too and are held to the same caps per listing: they keep what
// identifies them (URI, URI template, name, MIME type, a prompt's
// argument names and whether each is required) and give up their
// title's length, icons, _meta, annotations, description's length and
// a prompt's argument descriptions, in that order. One whose identifying
// members alone are over MaxToolListingBytes (a 20 KiB URI, a prompt
// with a thousand arguments) cannot be shortened to fit: it is left out
// of the listing, with a warning naming its server and the start of its
// URI or name, rather than break the cap.
//
// # Why auto mode switches with a margin
//
// ModeAuto serves flat while the listed tool definitions total at most
// AutoFlatBytes and re-decides on every tool-list change. Each switch
// replaces the agent's whole tool list, so a catalog hovering at the
// budget must not flip it back and forth: flat goes to gateway above the
// budget, gateway comes back to flat only at autoLowWater percent of it.
// A switch removes what leaves before adding what comes (a flat tool may
// hold a gateway tool's name) and the SDK debounces the resulting
// list_changed notifications into one. Exposed tools are direct in both
// surfaces; resources and prompts are passed through only while flat.
//
// # Why upstream results lose resultType and io.modelcontextprotocol/* meta
//
// Those fields describe the upstream hop's protocol era (a modern server's
// "resultType":"complete", its serverInfo), not the content. Passed
// through, a legacy agent would read fields of an era it never negotiated
// and a modern one another server's identity as ours. front strips them
// from every backend result and lets the SDK add what the agent's own
// session needs.
package front
