package admin

import (
	"context"
	"encoding/json"
	"time"
)

// Backend is what the dashboard needs from a running gateway. The gateway
// root implements it; this package imports nothing of sluice that could
// reach a running gateway (only the leaf gateway/internal/urlmask), so every
// value crosses as one of the plain types below or as raw JSON.
type Backend interface {
	// Servers lists every declaration with its trust and run state;
	// diagnostics are the declaration and trust files' problems.
	Servers(ctx context.Context) (servers []Server, diagnostics []string, err error)
	// TrustPrompt is what 'sluice trust ID' shows before asking, with the
	// digest and program it binds.
	TrustPrompt(ctx context.Context, id string) (*TrustOffer, error)
	// Trust records the trust the person was shown: it plans afresh and
	// refuses with ErrTrustChanged unless the plan still binds the digest
	// and program of the offer they saw.
	Trust(ctx context.Context, id, digest, program string) error
	Untrust(ctx context.Context, id string) error
	// Refresh launches the server and records its catalog.
	Refresh(ctx context.Context, id string) error
	// Restart stops the server's running process; the next call starts
	// a new one.
	Restart(ctx context.Context, id string) error

	// Find is ranked search over every capability ("" lists them all).
	Find(ctx context.Context, query string, limit int) ([]Tool, error)
	Describe(ctx context.Context, capability string) (*ToolDetail, error)
	// Call runs one capability. approved is the person's approval given
	// on the form (the dashboard user is the operator).
	Call(ctx context.Context, capability string, args json.RawMessage, approved bool) (*CallOutcome, error)
	// Execute runs a code-mode script and returns the run as JSON (the
	// execute tool's fields: result, logs, calls, stats, notes, error).
	Execute(ctx context.Context, script string, approved bool) (json.RawMessage, error)
	// Signatures are the code-mode signatures of every trusted server
	// with a listing; Limits are the sandbox's limits, as text lines.
	Signatures(ctx context.Context) (string, error)
	Limits(ctx context.Context) []string

	Filters(ctx context.Context) ([]Filter, error)
	// EnableFilter re-enables disabled filters named name ("" = all) and
	// returns the ones it enabled.
	EnableFilter(ctx context.Context, name string) ([]string, error)
	// TestFilter runs one filter (builtin:NAME or a .wasm path) once over
	// input and returns the outcome as JSON.
	TestFilter(ctx context.Context, module string, config json.RawMessage, input []byte) (json.RawMessage, error)

	// Review is what 'sluice review ID' shows: the server's known
	// listing compared with its reviewed baseline, with the digest that
	// binds both. It never launches.
	Review(ctx context.Context, id string) (*ToolReview, error)
	// AcceptReview records the listing the person was shown as the
	// server's reviewed baseline; it refuses with ErrReviewChanged
	// unless digest is still the review's (nothing is accepted then).
	AcceptReview(ctx context.Context, id, digest string) (*ToolReview, error)

	Results(ctx context.Context) ([]StoredResult, error)
	ReadResult(ctx context.Context, handle string, offset, length int64) (*ResultPage, error)
}

// Server is one declaration as the Servers page shows it. Env and Headers
// hold the declared values; the dashboard masks them before showing.
type Server struct {
	ID          string            `json:"id"`
	Scope       string            `json:"scope"`
	File        string            `json:"file"`
	Line        int               `json:"line"`
	Kind        string            `json:"kind"` // stdio, remote or cli
	Command     string            `json:"command,omitempty"`
	Args        []string          `json:"args,omitempty"`
	URL         string            `json:"url,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	Trust       string            `json:"trust"` // trusted, untrusted or stale
	ActionClass string            `json:"actionClass"`
	Reason      string            `json:"reason,omitempty"`
	Remedy      string            `json:"remedy,omitempty"`
	Changed     []string          `json:"changed,omitempty"` // for stale: the fields changed since trust
	Run         string            `json:"run"`
	RunError    string            `json:"runError,omitempty"`
	StderrTail  string            `json:"stderrTail,omitempty"`
	Provenance  string            `json:"provenance"` // live, cached, missing, declared
	Tools       int               `json:"tools"`
	RecordedAt  time.Time         `json:"recordedAt,omitzero"` // the catalog's
	// ToolChange is one line naming how the tools differ from their
	// reviewed baseline ("" = they do not); Held are the tools withheld
	// until the change is reviewed.
	ToolChange string   `json:"toolChange,omitempty"`
	Held       []string `json:"held,omitempty"`
	// Exposed are the server's tools the serve lists directly beside the
	// gateway tools (its expose globs and --expose flags).
	Exposed []ExposedTool `json:"exposed,omitempty"`
}

// ExposedTool is one exposed tool and the globs ("GLOB (SOURCE)") that
// name it.
type ExposedTool struct {
	Capability string   `json:"capability"`
	Globs      []string `json:"globs"`
}

// ToolReview is a server's listing compared with its reviewed baseline.
type ToolReview struct {
	Server string `json:"server"`
	// Source is where the listing comes from, in words ("the running
	// server's listing", "the recorded catalog").
	Source  string   `json:"source"`
	Summary string   `json:"summary,omitempty"` // "" = nothing changed
	Policy  string   `json:"policy,omitempty"`  // hold | warn | accept
	Changed []string `json:"changed,omitempty"`
	Added   []string `json:"added,omitempty"`
	Renamed []string `json:"renamed,omitempty"` // "old -> new"
	Removed []string `json:"removed,omitempty"`
	Held    []string `json:"held,omitempty"`
	// Unreadable is why the baseline cannot be read, when it cannot.
	Unreadable string `json:"unreadable,omitempty"`
	// BaselineOrigin and ReviewedAt describe the baseline compared with
	// ("" = none recorded yet).
	BaselineOrigin string `json:"baselineOrigin,omitempty"`
	ReviewedAt     string `json:"reviewedAt,omitempty"`
	// Diff is the line diff 'sluice review' prints.
	Diff string `json:"diff,omitempty"`
	// Digest binds the baseline and the listing shown; accepting needs it.
	Digest   string `json:"digest"`
	Accepted bool   `json:"accepted,omitempty"`
}

// TrustOffer is a trust prompt and what it binds.
type TrustOffer struct {
	Text    string `json:"text"`
	Digest  string `json:"digest"`
	Program string `json:"program,omitempty"`
}

// Tool is one search hit.
type Tool struct {
	Capability  string `json:"capability"`
	Server      string `json:"server"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	ReadOnly    bool   `json:"readOnly,omitempty"`
	Score       int    `json:"score,omitempty"`
}

// ToolDetail is describe's answer: the parts the page uses, and the whole
// as JSON.
type ToolDetail struct {
	Capability  string          `json:"capability"`
	Description string          `json:"description,omitempty"`
	Signature   string          `json:"signature,omitempty"`
	ActionClass string          `json:"actionClass"`
	Admission   string          `json:"admission"` // run | approval-required
	InputSchema json.RawMessage `json:"inputSchema"`
	JSON        json.RawMessage `json:"detail"`
}

// CallOutcome is one call's result.
type CallOutcome struct {
	Result   json.RawMessage `json:"result"`
	IsError  bool            `json:"isError"`
	RawBytes int             `json:"rawBytes"`
	Duration time.Duration   `json:"durationNs"`
}

// Filter is one configured filter's live health in this process.
type Filter struct {
	Name        string   `json:"name"`
	Module      string   `json:"module"`
	Stage       string   `json:"stage"`
	State       string   `json:"state"`
	Calls       int64    `json:"calls"`
	Failures    int64    `json:"failures"`
	LastError   string   `json:"lastError,omitempty"`
	DisabledFor []string `json:"disabledFor,omitempty"`
	// P50 is the median run time, when the backend measures it (0 =
	// not measured).
	P50 time.Duration `json:"p50Ns,omitempty"`
}

// StoredResult is one offloaded result.
type StoredResult struct {
	Handle   string    `json:"handle"`
	Bytes    int64     `json:"bytes"`
	Modified time.Time `json:"modified"`
}

// ResultPage is one page of a stored result.
type ResultPage struct {
	Handle string `json:"handle"`
	Offset int64  `json:"offset"`
	Next   int64  `json:"next"`
	Total  int64  `json:"total"`
	EOF    bool   `json:"eof"`
	Data   string `json:"data"`
	Base64 bool   `json:"base64,omitempty"` // Data is base64 (not UTF-8)
}
