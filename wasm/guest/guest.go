package guest

// Status is the value mcpf_filter returns to the host.
type Status int32

const (
	// StatusReplace: the bytes written with output_write replace the input.
	StatusReplace Status = 0
	// StatusPass: the input goes on unchanged; nothing is copied back.
	StatusPass Status = 1
	// StatusBlock: the result is withheld; the message is the reason.
	StatusBlock Status = 2
	// StatusError: the filter failed; the message says why.
	StatusError Status = 3
)

// Log levels for Log (same numbers as the ABI).
const (
	LevelDebug int32 = -4
	LevelInfo  int32 = 0
	LevelWarn  int32 = 4
	LevelError int32 = 8
)

// Input is one call's input. Data is only valid during the call: the SDK
// reuses its buffer.
type Input struct {
	Data   []byte // the tool result JSON (mode result-json) or one text item (mode text)
	Config []byte // the filter's static config (JSON, possibly empty)
	meta   func() []byte
}

// Meta returns the per-call meta JSON document (read lazily from the host).
func (in Input) Meta() []byte {
	if in.meta == nil {
		return nil
	}
	return in.meta()
}

// NewInput builds an Input for native tests of a filter function.
func NewInput(data, config, meta []byte) Input {
	return Input{Data: data, Config: config, meta: func() []byte { return meta }}
}

// Output is what a filter returns.
type Output struct {
	Status  Status
	Data    []byte // for StatusReplace
	Message string // for StatusBlock and StatusError
	// Parts, for StatusReplace: when set, the output is these pieces in
	// order (ranges of Data and of the input) instead of Data.
	Parts []Part
}

// Part is a piece of a filter's output: Data[Off:Off+N] of the Output, or,
// with Input, bytes [Off, Off+N) of the call's input, which the host copies
// itself (output_input in ABI.md): the guest never copies them out, and
// the host need not validate a built-in filter's runs of input string
// characters again.
type Part struct {
	Input  bool
	Off, N int
}

// ReplaceParts replaces the input with the concatenation of parts (ranges
// of data and of the input).
func ReplaceParts(data []byte, parts []Part) Output {
	return Output{Status: StatusReplace, Data: data, Parts: parts}
}

// Assemble returns the output parts describe, for a filter run natively
// over input (tests, the native reference of a built-in).
func Assemble(dst, input, data []byte, parts []Part) []byte {
	for _, p := range parts {
		if p.Input {
			dst = append(dst, input[p.Off:p.Off+p.N]...)
		} else {
			dst = append(dst, data[p.Off:p.Off+p.N]...)
		}
	}
	return dst
}

// Pass leaves the input unchanged.
func Pass() Output { return Output{Status: StatusPass} }

// Replace replaces the input with data.
func Replace(data []byte) Output { return Output{Status: StatusReplace, Data: data} }

// Block withholds the result; reason is shown to the caller.
func Block(reason string) Output { return Output{Status: StatusBlock, Message: reason} }

// Fail reports a filter failure.
func Fail(err error) Output {
	msg := "filter failed"
	if err != nil {
		msg = err.Error()
	}
	return Output{Status: StatusError, Message: msg}
}

// Func is a filter.
type Func func(in Input) Output

// InitFunc validates the static config once per instance; a non-nil error
// rejects the filter at load time.
type InitFunc func(config []byte) error

var (
	registered Func
	initFn     InitFunc
	config     []byte
)

// Register installs the filter function. Call it from an init function.
func Register(fn Func) { registered = fn }

// RegisterInit installs an optional config check run once per instance
// (mcpf_init). Call it from an init function.
func RegisterInit(fn InitFunc) { initFn = fn }
