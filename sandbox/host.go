package sandbox

import (
	"context"
	"encoding/json"
	"time"
)

// Host is everything the sandbox needs from the gateway. The gateway
// implements it; tests use a fake. Capabilities are "<server id>__<tool>".
type Host interface {
	// Servers lists the servers and tools a script may see. Each server
	// becomes a Starlark module (see Mangle for the names).
	Servers() []Server
	// Admit is the pre-flight check: nil if the capability may run now.
	// A refusal is a *HostError of kind HostAdmission with a Remedy.
	Admit(capability string) error
	// Call runs one tool with JSON arguments and returns the raw MCP
	// result after the host's result-stage filters. It must honour ctx.
	// It may be called from several goroutines at once (parallel()).
	Call(ctx context.Context, capability string, args json.RawMessage) (CallResult, error)
	// MaxConcurrency is the most calls the server accepts at once from one
	// run; values < 1 mean 1.
	MaxConcurrency(server string) int
}

// Server is one upstream server as the script sees it.
type Server struct {
	ID    string // the sluice server id, e.g. "fs"
	Tools []Tool
	// Hidden names tools the operator's configuration hides: they are no
	// functions, and a script naming one is told it is hidden rather
	// than unknown.
	Hidden []string
}

// Tool is one tool of a server, with its schemas as raw JSON.
type Tool struct {
	Name         string
	Description  string
	InputSchema  json.RawMessage // JSON Schema (draft-07 or 2020-12); nil = accepts any object
	OutputSchema json.RawMessage // optional
}

// CallResult is a tool's raw MCP result object: {"content": [...],
// "structuredContent": {...}, "isError": bool}.
type CallResult struct {
	Raw json.RawMessage
	// Release, when set, gives Raw's bytes back to the host: the sandbox
	// calls it once it has converted Raw into a Starlark value (which
	// holds copies) and never reads Raw after. A result the run never
	// converts (cancelled, over a limit before) is simply not released.
	Release func()
}

// Limits bounds one run. The zero value of each field means the documented
// default; the config keys of the gateway's `sandbox:` block have the same
// names in lowerCamelCase.
type Limits struct {
	MaxSteps       uint64        // Starlark execution steps; default 10,000,000
	Timeout        time.Duration // wall time of the whole run; default 30 s
	MaxCalls       int           // tool calls per run (call(), parallel() items and direct calls); default 200
	MaxResultBytes int           // raw bytes of one tool result entering the script; default 1 MiB
	MaxLogBytes    int           // bytes of print() output kept; default 64 KiB (the rest is dropped, LogsTruncated set)
	MaxOutputBytes int           // bytes of the JSON-encoded `result`; default 1 MiB
	MaxMemoryBytes int64         // estimated bytes a script may hold; default 256 MiB
	MaxConcurrency int           // ceiling for parallel(limit=...); default 8
	MaxDepth       int           // Starlark call depth (frames); default 64, at most MaxDepthCeiling
}

// MaxDepthCeiling caps Limits.MaxDepth so a deep Starlark stack stays far
// from the Go stack limit.
const MaxDepthCeiling = 10_000

// Documented defaults.
const (
	DefaultMaxSteps       = 10_000_000
	DefaultTimeout        = 30 * time.Second
	DefaultMaxCalls       = 200
	DefaultMaxResultBytes = 1 << 20
	DefaultMaxLogBytes    = 64 << 10
	DefaultMaxOutputBytes = 1 << 20
	DefaultMaxMemoryBytes = 256 << 20
	DefaultMaxConcurrency = 8
	DefaultMaxDepth       = 64
)

// withDefaults returns a copy with every zero field set to its default.
func (l *Limits) withDefaults() Limits {
	var o Limits
	if l != nil {
		o = *l
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = DefaultMaxSteps
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxCalls <= 0 {
		o.MaxCalls = DefaultMaxCalls
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = DefaultMaxResultBytes
	}
	if o.MaxLogBytes <= 0 {
		o.MaxLogBytes = DefaultMaxLogBytes
	}
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if o.MaxMemoryBytes <= 0 {
		o.MaxMemoryBytes = DefaultMaxMemoryBytes
	}
	if o.MaxConcurrency <= 0 {
		o.MaxConcurrency = DefaultMaxConcurrency
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	if o.MaxDepth > MaxDepthCeiling {
		o.MaxDepth = MaxDepthCeiling
	}
	return o
}

// Result is the outcome of Run. It holds JSON, never Starlark values.
type Result struct {
	Result        json.RawMessage `json:"result"` // the JSON of the script's `result` global; null if unset or on error
	Logs          []string        `json:"logs"`
	LogsTruncated bool            `json:"logsTruncated,omitempty"`
	Calls         []CallRecord    `json:"calls"`
	Stats         Stats           `json:"stats"`
	Notes         []string        `json:"notes,omitempty"`
	Error         *Error          `json:"error,omitempty"`
}

// CallRecord is one tool call the script made, in the order calls were
// started (parallel() items in input order). It shows the model which side
// effects already happened.
type CallRecord struct {
	Capability string `json:"capability"`
	Ms         int64  `json:"ms"`
	OK         bool   `json:"ok"`
	Bytes      int    `json:"bytes"`
	Error      string `json:"error,omitempty"`
}

// Stats are counters of one run.
type Stats struct {
	Steps          uint64 `json:"steps"`
	ElapsedMs      int64  `json:"elapsedMs"`
	Calls          int    `json:"calls"`
	MaxDepth       int    `json:"maxDepth"`       // deepest call stack seen at a check
	PeakHeapGrowth int64  `json:"peakHeapGrowth"` // bytes: peak growth of the process heap seen by the memory sampler
}
