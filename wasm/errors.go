package wasm

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Sentinels for branch points. Typed errors below match them with errors.Is
// where noted.
var (
	ErrClosed         = errors.New("wasm: host is closed")
	ErrDisabled       = errors.New("wasm: filter is disabled after repeated failures")
	ErrInputTooLarge  = errors.New("wasm: input over the host's maxInputBytes")
	ErrUnknownBuiltin = errors.New("wasm: unknown built-in filter")
	ErrSHA256Mismatch = errors.New("wasm: module bytes do not match the pinned sha256")
	ErrConfigRejected = errors.New("wasm: filter rejected its config")
	ErrInvalidSpec    = errors.New("wasm: invalid filter spec")
	ErrFilterFailed   = errors.New("wasm: filter failed") // every per-call filter failure matches this
	ErrModuleTooLarge = errors.New("wasm: module over the host's maxModuleBytes")
	// ErrCompileBudget: a module from configuration did not compile
	// within Options.CompileTimeout (+ CompileTimeoutPerMiB); wrapped by
	// a CompileError.
	ErrCompileBudget = errors.New("compilation over its time budget")
	// ErrFunctionTooComplex: a function of a module from configuration
	// has more blocks and branches than the compiler handles in bounded
	// time (maxFunctionBlocks, maxFunctionBlockWork); wrapped by a
	// CompileError.
	ErrFunctionTooComplex = errors.New("function too complex to compile in bounded time")
	// ErrTableTooLarge: a table of a module from configuration declares
	// more elements than a filter's table may have (maxTableElements), or
	// is in a form whose size cannot be capped; wrapped by a LimitError.
	ErrTableTooLarge = errors.New("table over a filter's cap")
	// errStderrFull is what a guest's stderr write gets once the call has
	// written maxStderrWriteBytes (the guest's fd_write then fails: EIO).
	errStderrFull = errors.New("wasm: guest wrote over its stderr budget for one call")
)

// TrapError: the guest trapped (unreachable, out-of-bounds access, stack
// overflow, Go runtime panic that escaped the SDK, host-call misuse).
type TrapError struct {
	Filter  string
	Message string // the runtime's trap description, first line
	Stderr  string // bounded tail of what the guest wrote to stderr
}

func (e *TrapError) Error() string {
	s := fmt.Sprintf("wasm: filter %q trapped: %s", e.Filter, e.Message)
	if e.Stderr != "" {
		s += " (guest stderr: " + e.Stderr + ")"
	}
	return s
}
func (e *TrapError) Is(t error) bool { return t == ErrFilterFailed }

// TimeoutError: the call ran past its deadline; the guest was stopped and
// its instance discarded (Abandoned: a built-in, which cannot be stopped,
// was left to finish on its own and its result will be dropped).
type TimeoutError struct {
	Filter     string
	Timeout    time.Duration // the call's deadline (fixed part + the part for its input size)
	InputBytes int
	Abandoned  bool
}

func (e *TimeoutError) Error() string {
	what := "was stopped"
	if e.Abandoned {
		what = "its result will be dropped"
	}
	return fmt.Sprintf("wasm: filter %q exceeded its %v deadline on a %d-byte input and %s; raise the filter's timeout or make it cheaper", e.Filter, e.Timeout, e.InputBytes, what)
}
func (e *TimeoutError) Is(t error) bool { return t == ErrFilterFailed }

// OverrunError: the call was not made, because earlier calls of the filter
// overran their deadlines and are still running (a built-in's call cannot
// be stopped, only abandoned; it runs on to its end). With PerServer, one of
// them is on a result from the same server (Meta.Server), whose results are
// refused until it ends: an overrunning server does not pile up more
// runaway calls. Otherwise as many abandoned calls are running as the pool
// allows besides its live instances (twice the pool's size), and every call
// is refused until one ends.
//
// The filter never ran, so this is not one of its failures: it does not
// count towards disabling the filter for the server. The caller still
// applies the filter's policy (fail-closed withholds the result).
type OverrunError struct {
	Filter    string
	Server    string
	PerServer bool
	Running   int // abandoned calls still running (of the server, with PerServer)
}

func (e *OverrunError) Error() string {
	if e.PerServer {
		from := "from server " + strconv.Quote(e.Server)
		if e.Server == "" {
			from = "without a server"
		}
		return fmt.Sprintf("wasm: filter %q did not run: %d earlier call(s) on results %s overran the deadline and are still running; results %s are refused until they end (raise the filter's timeout if results this size are expected)", e.Filter, e.Running, from, from)
	}
	return fmt.Sprintf("wasm: filter %q did not run: %d earlier calls overran their deadlines and are still running; try again when they end, or raise the filter's timeout", e.Filter, e.Running)
}
func (e *OverrunError) Is(t error) bool { return t == ErrFilterFailed }

// StatusError: mcpf_filter returned a status the ABI does not define.
type StatusError struct {
	Filter string
	Status int32
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("wasm: filter %q returned status %d; ABI mcpf v1 defines 0 (replace), 1 (pass), 2 (block), 3 (error)", e.Filter, e.Status)
}
func (e *StatusError) Is(t error) bool { return t == ErrFilterFailed }

// ReportedError: the filter returned status 3 (error) with a message.
type ReportedError struct {
	Filter  string
	Message string
}

func (e *ReportedError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("wasm: filter %q reported an error without a message", e.Filter)
	}
	return fmt.Sprintf("wasm: filter %q reported an error: %s", e.Filter, e.Message)
}
func (e *ReportedError) Is(t error) bool { return t == ErrFilterFailed }

// InvalidOutputError: the output is not acceptable for the filter's input
// mode (not valid MCP result JSON, or not UTF-8 text).
type InvalidOutputError struct {
	Filter string
	Mode   Mode
	Reason string
}

func (e *InvalidOutputError) Error() string {
	return fmt.Sprintf("wasm: filter %q (mode %s) wrote invalid output: %s", e.Filter, e.Mode, e.Reason)
}
func (e *InvalidOutputError) Is(t error) bool { return t == ErrFilterFailed }

// OutputTooLargeError: output_write was refused because the output would
// exceed the cap.
type OutputTooLargeError struct {
	Filter string
	Limit  int
}

func (e *OutputTooLargeError) Error() string {
	return fmt.Sprintf("wasm: filter %q wrote more than the %d-byte output cap (maxOutputBytes)", e.Filter, e.Limit)
}
func (e *OutputTooLargeError) Is(t error) bool { return t == ErrFilterFailed }

// MemoryLimitError: the guest needed more linear memory than the cap, at
// load (declared minimum) or during a call (a trap with memory at the cap).
type MemoryLimitError struct {
	Filter     string
	LimitPages uint32
	Pages      uint32 // pages in use when it failed (0 at load)
	Detail     string
}

func (e *MemoryLimitError) Error() string {
	s := fmt.Sprintf("wasm: filter %q hit the memory cap of %d pages (%d MiB)", e.Filter, e.LimitPages, e.LimitPages/16)
	if e.Pages > 0 {
		s += fmt.Sprintf(" with %d pages in use", e.Pages)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s + "; reduce the filter's memory use (the cap is the filter host's Options.MaxMemoryPages, 512 pages unless set)"
}
func (e *MemoryLimitError) Is(t error) bool { return t == ErrFilterFailed }

// ABIVersionError: the module does not export the mcpf_abi_v1 marker (Found
// names the marker it exports instead, if any), or its exports do not match
// the ABI.
type ABIVersionError struct {
	Filter string
	Found  string
	Detail string
}

func (e *ABIVersionError) Error() string {
	switch {
	case e.Detail != "":
		return fmt.Sprintf("wasm: filter %q does not implement ABI mcpf v1: %s", e.Filter, e.Detail)
	case e.Found != "":
		return fmt.Sprintf("wasm: filter %q speaks ABI %q; this host speaks mcpf v1 (export mcpf_abi_v1)", e.Filter, e.Found)
	}
	return fmt.Sprintf("wasm: filter %q declares no ABI version; export the marker function mcpf_abi_v1", e.Filter)
}

// ForbiddenImportError: the module imports something outside the allow-list
// (see ABI.md, "Imports").
type ForbiddenImportError struct {
	Filter string
	Module string
	Name   string
	Reason string
}

func (e *ForbiddenImportError) Error() string {
	r := e.Reason
	if r == "" {
		r = "not on the import allow-list"
	}
	return fmt.Sprintf("wasm: filter %q imports %s.%s: %s", e.Filter, e.Module, e.Name, r)
}

// CompileError: the module bytes are not a valid WebAssembly module, or
// (Err is a *LimitError) one that a cap on modules from configuration
// refuses.
type CompileError struct {
	Filter string
	Err    error
}

func (e *CompileError) Error() string {
	var lim *LimitError
	if errors.As(e.Err, &lim) {
		return fmt.Sprintf("wasm: filter %q: module refused: %v", e.Filter, e.Err)
	}
	return fmt.Sprintf("wasm: filter %q: module does not compile: %v", e.Filter, e.Err)
}
func (e *CompileError) Unwrap() error { return e.Err }

// LimitError: a module from configuration, valid WebAssembly or not, is
// refused by a cap sluice puts on what it compiles and runs (a function's
// blocks and branches or locals, a table's size or form, the compile
// time). Wrapped by a CompileError. Its text is sluice's own (numbers
// and offsets, never the module's names), so it may be shown to a model.
type LimitError struct {
	// Limit says what was refused, e.g. "a function with too many
	// blocks and branches".
	Limit string
	// Function is the index of the function refused (imports count),
	// -1 when the cap is not about one function.
	Function int
	// Offset is the byte offset in the module of what was refused (a
	// function body, a section), -1 when none.
	Offset int
	// Detail gives the numbers against the cap.
	Detail string
	// Fix says how to make the module acceptable.
	Fix string
	// Err is the cap's sentinel (ErrFunctionTooComplex, ErrCompileBudget,
	// ErrTableTooLarge, ...).
	Err error
}

func (e *LimitError) Error() string {
	s := e.Limit
	switch {
	case e.Function >= 0 && e.Offset >= 0:
		s += fmt.Sprintf(" (function %d, its body at byte %d)", e.Function, e.Offset)
	case e.Offset >= 0:
		s += fmt.Sprintf(" (at byte %d)", e.Offset)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Fix != "" {
		s += "; " + e.Fix
	}
	return s
}
func (e *LimitError) Unwrap() error { return e.Err }

// ConfigError: mcpf_init rejected the filter's config at load.
type ConfigError struct {
	Filter  string
	Message string
}

func (e *ConfigError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("wasm: filter %q rejected its config", e.Filter)
	}
	return fmt.Sprintf("wasm: filter %q rejected its config: %s", e.Filter, e.Message)
}
func (e *ConfigError) Is(t error) bool { return t == ErrConfigRejected }

// DisabledError: the filter failed too many times in a row on one
// server's results and is disabled for that server until its cool-down
// ends (Until) or Filter.Enable.
type DisabledError struct {
	Filter   string
	Server   string
	Failures int
	Last     string
	Until    time.Time // zero: until Enable
}

func (e *DisabledError) Error() string {
	until := "until it is enabled again"
	if !e.Until.IsZero() {
		until = "until " + e.Until.UTC().Format(time.RFC3339) + " (its cool-down) or until it is enabled again"
	}
	return fmt.Sprintf("wasm: filter %q is disabled for server %q after %d consecutive failures (last: %s), %s", e.Filter, e.Server, e.Failures, e.Last, until)
}
func (e *DisabledError) Is(t error) bool { return t == ErrDisabled || t == ErrFilterFailed }

// IsFilterFailure reports whether err is a per-call failure of the filter
// itself (trap, timeout, bad status, reported error, invalid output, output
// over cap, memory limit, disabled) — the cases OnError applies to.
func IsFilterFailure(err error) bool { return errors.Is(err, ErrFilterFailed) }
