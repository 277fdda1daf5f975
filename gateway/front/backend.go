package front

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Backend is what front serves. The gateway root implements it; front never
// imports the gateway. Every method that serves an agent's request receives
// the request's context (cancelled when the agent cancels, the session ends
// or the server shuts down) and, where the work may need to talk back to the
// agent, the request's [Peer].
//
// Results are raw JSON objects in the shape of the MCP result they answer
// (CallToolResult for the tool methods, ReadResourceResult, GetPromptResult,
// CompleteResult). front forwards them without round-tripping numbers
// through float64 where it can (structuredContent is kept verbatim).
//
// Errors: a *ToolError becomes a tool result with isError set and its text
// shown to the model; context cancellation becomes a cancelled call; any
// other error is logged in full and the model sees only a generic message
// carrying the request id. Backend methods may be called concurrently.
type Backend interface {
	// Instructions returns a short summary of the upstream servers'
	// instructions, appended (bounded by Options.MaxInstructionsBytes) to
	// the gateway's own instructions. Called once per server build.
	Instructions() string
	// Ready reports whether the backend can serve calls; it backs /readyz.
	Ready(ctx context.Context) error
	// Features reports which optional gateway-mode tools exist.
	// Re-read after every EventFeaturesChanged.
	Features() Features

	// Find searches the capability catalog (gateway mode "find").
	Find(ctx context.Context, req FindRequest, peer Peer) (json.RawMessage, error)
	// Describe returns full metadata for capabilities (gateway mode "describe").
	Describe(ctx context.Context, req DescribeRequest, peer Peer) (json.RawMessage, error)
	// Call runs one capability: the gateway-mode "call" tool and every
	// flat-mode tool both end here. The result is a CallToolResult object.
	Call(ctx context.Context, req CallRequest, peer Peer) (json.RawMessage, error)
	// ReadResult pages an offloaded result (gateway mode "read_result").
	ReadResult(ctx context.Context, req ReadResultRequest, peer Peer) (json.RawMessage, error)
	// Execute runs a code-mode script (gateway mode "execute").
	Execute(ctx context.Context, req ExecuteRequest, peer Peer) (json.RawMessage, error)

	// List returns the trusted upstream items of one kind, for flat mode.
	// Each item is the upstream object exactly as the server sent it
	// (a Tool, Resource, ResourceTemplate or Prompt), tagged with its
	// server id. front names, orders and de-duplicates them.
	List(ctx context.Context, kind Kind) ([]Item, error)
	// ReadResource forwards resources/read to the server that owns the
	// URI; params is the agent's ReadResourceParams object.
	ReadResource(ctx context.Context, server string, params json.RawMessage, peer Peer) (json.RawMessage, error)
	// GetPrompt forwards prompts/get; params carries the upstream prompt name.
	GetPrompt(ctx context.Context, server string, params json.RawMessage, peer Peer) (json.RawMessage, error)
	// Complete forwards completion/complete; params.ref carries the
	// upstream prompt name or resource URI.
	Complete(ctx context.Context, server string, params json.RawMessage) (json.RawMessage, error)
	// SetLogLevel forwards logging/setLevel to every running upstream
	// server that declared logging. Errors are logged, never returned to
	// the agent.
	SetLogLevel(ctx context.Context, level string) error

	// Subscribe registers fn for backend events (list changes, upstream
	// log messages, feature changes) and returns a function that ends the
	// subscription. fn must not block; front copies what it needs.
	Subscribe(fn func(Event)) (stop func())
	// Close releases the backend (and lets it tear its upstream servers
	// down). ServeStdio and ServeHTTP call it once, after the last request
	// has finished or been cancelled.
	Close() error
}

// Features says which optional gateway-mode tools are offered.
type Features struct {
	ReadResult bool // offloaded results can be paged: offer read_result
	Execute    bool // code mode is configured: offer execute
	// Expose: some tools are to be served directly in gateway mode too
	// (Item.Expose), so gateway mode lists the tools as well.
	Expose bool
}

// FindRequest is the decoded argument object of the "find" tool.
type FindRequest struct {
	Query   string `json:"query,omitempty"`   // words to match; empty lists everything (bounded by Limit)
	Server  string `json:"server,omitempty"`  // restrict to one server id
	Limit   int    `json:"limit,omitempty"`   // 0 = backend default; front caps it at 50
	Refresh bool   `json:"refresh,omitempty"` // with Server: re-list that server's tools (may launch it)
}

// DescribeRequest is the decoded argument object of the "describe" tool.
type DescribeRequest struct {
	Capabilities []string `json:"capabilities,omitempty"` // 1..10 capability names "<server>__<tool>"
	// Server asks instead for one server's code-mode docs: its module and
	// every tool's Starlark signature with a one-line summary.
	Server string `json:"server,omitempty"`
}

// CallRequest asks the backend to run one capability.
type CallRequest struct {
	Capability string          // "<server>__<tool>"
	Arguments  json.RawMessage // the tool's argument object, verbatim ("{}" when absent)
	// Tool is the name the agent called: "call" in gateway mode, the
	// exposed flat name otherwise. For logs and metrics only.
	Tool string
	// InputResponses and RequestState carry a multi round-trip retry
	// (2026-07-28 input_required flow) verbatim; empty on a first call.
	InputResponses json.RawMessage
	RequestState   string
}

// ReadResultRequest is the decoded argument object of "read_result".
type ReadResultRequest struct {
	// Handle is the handle a shortened result named. The tool also takes
	// it as "ref" (its first name); front fills both with the same value.
	Handle string `json:"handle,omitempty"`
	Ref    string `json:"ref,omitempty"`    // alias of Handle
	Offset int64  `json:"offset,omitempty"` // byte offset into the stored result
	Length int64  `json:"length,omitempty"` // bytes to return; 0 = backend default
}

// ExecuteRequest is the decoded argument object of "execute".
type ExecuteRequest struct {
	Script string `json:"script"` // Starlark source
	// TimeoutMs bounds the run's wall time; 0 = the configured bound. The
	// backend never runs longer than its own configured limit.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
}

// Kind selects what List returns.
type Kind string

const (
	KindTools             Kind = "tools"
	KindResources         Kind = "resources"
	KindResourceTemplates Kind = "resourceTemplates"
	KindPrompts           Kind = "prompts"
)

// Item is one upstream object of a List, tagged with its server id.
type Item struct {
	Server string
	Raw    json.RawMessage // the Tool/Resource/ResourceTemplate/Prompt object as sent upstream
	// Expose (tools only) serves the tool directly beside the gateway
	// tools in gateway mode, named and called exactly as in flat mode.
	Expose bool
}

// EventKind names what changed.
type EventKind string

const (
	EventToolsChanged     EventKind = "tools"     // flat tool list changed
	EventResourcesChanged EventKind = "resources" // resources or templates changed
	EventPromptsChanged   EventKind = "prompts"   // prompts changed
	EventFeaturesChanged  EventKind = "features"  // Features() may answer differently
	// EventResourceUpdated: an upstream resource changed; Params is the
	// upstream notifications/resources/updated params ({"uri": ...}).
	EventResourceUpdated EventKind = "resourceUpdated"
	// EventLog: an upstream notifications/message not tied to a request;
	// Params is its params object. Delivered only when exactly one session
	// is open at the moment it arrives (it could otherwise reach the wrong
	// agent).
	EventLog EventKind = "log"
)

// Event is one backend notification.
type Event struct {
	Kind   EventKind
	Server string          // the upstream server it came from, if any
	Params json.RawMessage // for EventResourceUpdated and EventLog

	// to is the session an EventLog goes to, chosen when it arrives.
	to *mcp.ServerSession
}

// ProgressWanted reports whether progress reported to p can reach the
// agent, so a backend need not ask an upstream for progress nobody
// receives. It is true unless p says otherwise (a Peer may implement
// WantsProgress() bool).
func ProgressWanted(p Peer) bool {
	if w, ok := p.(interface{ WantsProgress() bool }); ok {
		return w.WantsProgress()
	}
	return true
}

// Peer is the calling agent, as seen from one request. It lets the backend
// report progress, send log messages and ask the agent's client for input
// (approvals, forwarded sampling and elicitation). Every method is bounded:
// none blocks longer than the request's context or
// Options.ClientRequestTimeout.
type Peer interface {
	// RequestID is the id front logs for this request (not the JSON-RPC id).
	RequestID() string
	// SessionID is the transport session id ("" for stdio and stateless HTTP).
	SessionID() string
	// Conn names the agent connection the request arrived on: the same
	// for every request of one stdio connection or one HTTP session, and
	// unique to each stateless HTTP request. Traffic that must reach one
	// agent only (an upstream server's requests and logs) is routed by it.
	Conn() string
	// ClientName is the agent's clientInfo name, "" if unknown.
	ClientName() string
	// ClientCapabilities is the agent's declared client capabilities as a
	// JSON object ("{}" if unknown), for a gateway that mirrors them into
	// upstream 2026-07-28 requests' _meta.
	ClientCapabilities() json.RawMessage
	// Supports reports whether the agent's client declared a capability:
	// "elicitation", "sampling" or "roots".
	Supports(capability string) bool
	// Progress sends notifications/progress for this request if, and only
	// if, the agent supplied a progressToken; otherwise it does nothing.
	// total <= 0 means unknown.
	Progress(ctx context.Context, progress, total float64, message string) error
	// Log sends notifications/message to the agent, subject to the level
	// the agent chose. data is any JSON value.
	Log(ctx context.Context, level, logger string, data json.RawMessage) error
	// Elicit asks the agent's user a question (form elicitation) and
	// reports whether they accepted. schema is a flat JSON object schema or
	// nil. Legacy clients are sent elicitation/create; 2026-07-28 clients
	// get an input_required answer and the call resumes on their retry. It
	// returns an error wrapping ErrUnsupported when the client did not
	// declare elicitation; the caller then falls back to a tool error that
	// tells the model the remedy.
	Elicit(ctx context.Context, message string, schema json.RawMessage) (accepted bool, err error)
	// Request forwards a server-to-client request ("sampling/createMessage",
	// "elicitation/create" or "roots/list") and returns the client's raw
	// result. ErrUnsupported when the client lacks the capability or
	// speaks 2026-07-28 (only Elicit is bridged for modern clients; a
	// backend forwarding an upstream's input_required passes it through
	// as the call's result instead).
	Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}
