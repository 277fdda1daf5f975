package front

import (
	"errors"
	"fmt"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

var (
	// ErrUnsupported: the agent's client cannot be asked (it lacks the
	// capability, or the protocol era forbids server-to-client requests).
	ErrUnsupported = errors.New("front: the client does not support this request")
	// ErrClosed: the front (or the session) is shutting down.
	ErrClosed = errors.New("front: closed")
	// ErrRemoteBind: a non-loopback address was given without AllowRemote.
	ErrRemoteBind = errors.New("front: refusing to listen on a non-loopback address")
	// ErrBadOptions: an Options field is out of range.
	ErrBadOptions = errors.New("front: invalid options")
)

// ToolError is an error the backend wants the model to read: it becomes a
// tool result with isError set. Message must be written for the model (no
// secrets, environment values or stack traces); Remedy, if set, is appended
// as "Fix: ..." so the model knows what to do next.
type ToolError struct {
	Message string
	Remedy  string
	Err     error // optional cause, logged but never shown to the model
}

func (e *ToolError) Error() string {
	s := e.Message
	if e.Remedy != "" {
		s += " Fix: " + e.Remedy
	}
	return s
}

func (e *ToolError) Unwrap() error { return e.Err }

// BindError reports why ServeHTTP would not listen on an address.
type BindError struct {
	Addr   string
	Reason string
	Err    error
}

func (e *BindError) Error() string {
	return fmt.Sprintf("front: cannot listen on %q: %s", e.Addr, e.Reason)
}

func (e *BindError) Unwrap() error { return e.Err }

// OptionError names an Options field that is out of range and how to fix it.
type OptionError struct {
	Field string
	Value string
	Want  string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("front: option %s=%s is invalid: want %s", e.Field, e.Value, e.Want)
}

func (e *OptionError) Unwrap() error { return ErrBadOptions }

// unsupportedError explains why a server-to-client request cannot be sent.
type unsupportedError struct{ what, why string }

func (e *unsupportedError) Error() string {
	return fmt.Sprintf("front: cannot send %s to the client: %s", e.what, e.why)
}

func (e *unsupportedError) Unwrap() error { return ErrUnsupported }

func asJSONRPC(err error, target **jsonrpc.Error) bool { return errors.As(err, target) }

func asToolError(err error, target **ToolError) bool { return errors.As(err, target) }
