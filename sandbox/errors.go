package sandbox

import (
	"errors"
	"fmt"
	"strings"
)

// Kind classifies why a run failed. It is part of the JSON result a model
// reads, so the values are stable strings.
type Kind string

const (
	KindSyntax    Kind = "syntax"    // the script does not parse/resolve, or pre-flight found unknown tools or arguments
	KindRuntime   Kind = "runtime"   // a Starlark error: bad types, fail(), bad tool arguments at run time, ...
	KindLimit     Kind = "limit"     // a Limits bound was hit; Error.Limit names which one
	KindTool      Kind = "tool"      // a tool returned isError, or its transport failed
	KindAdmission Kind = "admission" // the host refused a capability (trust, approval, policy)
	KindCancelled Kind = "cancelled" // the caller's context was cancelled
)

// Limit names used in Error.Limit. They match the Limits fields (and the
// sluice config keys) so a model or a person knows what to change.
const (
	LimitSteps       = "steps"       // Limits.MaxSteps
	LimitTime        = "time"        // Limits.Timeout
	LimitCalls       = "calls"       // Limits.MaxCalls
	LimitResultBytes = "resultBytes" // Limits.MaxResultBytes (one tool result entering the script)
	LimitOutputBytes = "outputBytes" // Limits.MaxOutputBytes (the script's result)
	LimitMemory      = "memory"      // Limits.MaxMemoryBytes
	LimitDepth       = "depth"       // Limits.MaxDepth
	LimitValueDepth  = "valueDepth"  // MaxValueDepth: nesting of one value (fixed)
	LimitKeySize     = "keySize"     // MaxKeyParts: parts of one dict key (fixed)
)

// Error is a failed run, as carried in Result.Error. It is written for a
// model to read: it never contains Go stack traces, paths of the host or
// environment values.
type Error struct {
	Kind       Kind      `json:"kind"`
	Limit      string    `json:"limit,omitempty"`      // for KindLimit: one of the Limit* names
	Capability string    `json:"capability,omitempty"` // for KindTool / KindAdmission: "<server>__<tool>"
	Message    string    `json:"message"`
	Remedy     string    `json:"remedy,omitempty"` // what to change, when known
	Line       int       `json:"line,omitempty"`
	Column     int       `json:"column,omitempty"`
	Backtrace  []string  `json:"backtrace,omitempty"` // innermost last, at most 8 frames: "file:line:col in fn"
	Problems   []Problem `json:"problems,omitempty"`  // pre-flight: every problem found, not just the first
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Kind))
	if e.Limit != "" {
		b.WriteString(" (" + e.Limit + ")")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, " at line %d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	b.WriteString(e.Message)
	return b.String()
}

// Is lets errors.Is(err, ErrLimit) etc. match on Kind.
func (e *Error) Is(target error) bool {
	k, ok := target.(kindSentinel)
	return ok && Kind(k) == e.Kind
}

type kindSentinel Kind

func (k kindSentinel) Error() string { return "sandbox: " + string(k) + " error" }

// Sentinels for errors.Is on an *Error.
var (
	ErrSyntax    error = kindSentinel(KindSyntax)
	ErrRuntime   error = kindSentinel(KindRuntime)
	ErrLimit     error = kindSentinel(KindLimit)
	ErrTool      error = kindSentinel(KindTool)
	ErrAdmission error = kindSentinel(KindAdmission)
	ErrCancelled error = kindSentinel(KindCancelled)
)

// Problem is one pre-flight finding.
type Problem struct {
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
}

func (p Problem) String() string { return fmt.Sprintf("line %d:%d: %s", p.Line, p.Column, p.Message) }

// HostErrorKind says what went wrong in a Host call.
type HostErrorKind string

const (
	// HostAdmission: the host refused to run the capability (untrusted
	// server, approval required, denied by policy). The call did not run.
	HostAdmission HostErrorKind = "admission"
	// HostTool: the call was made and failed (transport, timeout, crash).
	// A tool that ran and reported isError is not a HostError: it is a
	// CallResult whose JSON has "isError": true.
	HostTool HostErrorKind = "tool"
)

// HostError is how a Host reports failure from Admit or Call. Any other
// error is treated as HostAdmission when Admit returns it and as HostTool
// when Call does.
type HostError struct {
	Kind       HostErrorKind
	Capability string
	Message    string // safe to show to a model
	Remedy     string // how to fix it, e.g. "approve fs__write with `sluice approve fs__write`"
	Err        error  // underlying cause, not shown to the script
}

func (e *HostError) Error() string {
	s := string(e.Kind) + " " + e.Capability + ": " + e.Message
	if e.Remedy != "" {
		s += " (" + e.Remedy + ")"
	}
	return s
}

func (e *HostError) Unwrap() error { return e.Err }

// Refused builds the HostError a Host returns from Admit or Call to refuse a
// capability.
func Refused(capability, message, remedy string) *HostError {
	return &HostError{Kind: HostAdmission, Capability: capability, Message: message, Remedy: remedy}
}

// scriptErr is the cause a builtin returns; the interpreter wraps it in an
// EvalError (with the call stack), and classify finds it again with errors.As.
type scriptErr struct {
	kind       Kind
	limit      string
	capability string
	msg        string
	remedy     string
}

func (e *scriptErr) Error() string { return e.msg }

func limitErr(limit, format string, args ...any) *scriptErr {
	return &scriptErr{kind: KindLimit, limit: limit, msg: fmt.Sprintf(format, args...), remedy: limitRemedy(limit)}
}

func limitRemedy(limit string) string {
	switch limit {
	case LimitSteps:
		return "do less work per run (filter in the tool call, stop early) or raise sandbox.maxSteps"
	case LimitTime:
		return "split the work into smaller runs or raise sandbox.timeoutMs"
	case LimitCalls:
		return "batch work into fewer tool calls or raise sandbox.maxCalls"
	case LimitResultBytes:
		return "ask the tool for less (filters, paging, head/limit arguments) or raise sandbox.maxResultBytes"
	case LimitOutputBytes:
		return "assign a smaller `result` (select fields, aggregate, page) or raise sandbox.maxOutputBytes"
	case LimitMemory:
		return "keep fewer or smaller values alive (aggregate as you go, avoid repeated doubling) or raise sandbox.maxMemoryBytes"
	case LimitDepth:
		return "use a loop instead of deep recursion or raise sandbox.maxDepth"
	case LimitValueDepth:
		return "keep values flatter than 200 levels (a list of rows, not a list inside a list inside ...); this bound is fixed"
	case LimitKeySize:
		return "use a string or a small flat tuple as the key (e.g. a joined id); this bound is fixed"
	}
	return ""
}

var errNoHost = errors.New("sandbox: Run needs a non-nil Host")
