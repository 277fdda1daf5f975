package clitool

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels for branch points. The typed errors below wrap one of them.
var (
	// ErrSpec: a tool declaration is not valid (see *SpecError).
	ErrSpec = errors.New("invalid CLI tool declaration")
	// ErrArgument: the call's arguments were refused before anything ran (see *ArgError).
	ErrArgument = errors.New("invalid arguments")
	// ErrTimeout: the command ran past its timeout and its process group was torn down.
	ErrTimeout = errors.New("command timed out")
	// ErrOutput: the command's output could not become a result (too large, or not JSON).
	ErrOutput = errors.New("unusable command output")
)

// Reason codes of *ArgError. Stable strings callers may log or count.
const (
	ReasonNotObject = "not-object"     // the arguments are not a JSON object
	ReasonUnknown   = "unknown"        // an argument the tool does not declare
	ReasonMissing   = "missing"        // a required argument is absent
	ReasonType      = "type"           // wrong JSON type
	ReasonRange     = "range"          // below minimum or above maximum
	ReasonLength    = "length"         // string length outside minLength..maxLength
	ReasonItems     = "items"          // array length outside minItems..maxItems
	ReasonEnum      = "enum"           // not one of the allowed values
	ReasonDash      = "leading-dash"   // a value that would read as an option
	ReasonAtFile    = "leading-at"     // a value the program would read as a file of arguments
	ReasonNUL       = "nul"            // a value containing NUL
	ReasonTooLong   = "argv-too-large" // the rendered argv is over its caps
)

// SpecError says what is wrong with one declaration, where (Field, a path
// such as "argv[4][0]" or "input.limit.default") and how to fix it.
type SpecError struct {
	Server string
	Tool   string
	Field  string
	Msg    string
	Fix    string
}

func (e *SpecError) Error() string {
	var b strings.Builder
	b.WriteString("CLI tool ")
	if e.Server != "" {
		b.WriteString(e.Server + "__")
	}
	b.WriteString(e.Tool)
	if e.Field != "" {
		b.WriteString(" " + e.Field)
	}
	b.WriteString(": " + e.Msg)
	if e.Fix != "" {
		b.WriteString(" (" + e.Fix + ")")
	}
	return b.String()
}

func (e *SpecError) Unwrap() error { return ErrSpec }

// ArgError is a refused call. Its text is written for the model that made
// the call: it names the argument and the rule, and quotes no value except
// a short, NUL-free one the caller itself sent.
type ArgError struct {
	Tool   string
	Arg    string // argument name; "" when the arguments as a whole are refused
	Reason string // one of the Reason* codes
	Msg    string
}

func (e *ArgError) Error() string {
	if e.Arg == "" {
		return fmt.Sprintf("%s: %s", e.Tool, e.Msg)
	}
	return fmt.Sprintf("%s: argument %q: %s", e.Tool, e.Arg, e.Msg)
}

func (e *ArgError) Unwrap() error { return ErrArgument }

// OutputError is a command whose stdout could not become a result.
type OutputError struct {
	Tool string
	Msg  string
}

func (e *OutputError) Error() string { return e.Tool + ": " + e.Msg }

func (e *OutputError) Unwrap() error { return ErrOutput }
