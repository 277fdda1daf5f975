package front

import (
	"encoding/json"
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

func asJSONRPC(err error, target **jsonrpc.Error) bool {
	var pe *ProtocolError
	if errors.As(err, &pe) {
		*target = &jsonrpc.Error{Code: int64(pe.Code), Message: pe.Message, Data: pe.Data}
		return true
	}
	return errors.As(err, target)
}

func asToolError(err error, target **ToolError) bool { return errors.As(err, target) }

// ProtocolError makes front answer a request with a JSON-RPC error instead
// of a tool result: for example an upstream -32602 (unknown tool, invalid
// params) or a 2026-07-28 -32021 (missing client capability) that the
// agent's client must see as such. Message must be safe to show.
type ProtocolError struct {
	Code    int
	Message string
	Data    json.RawMessage // optional
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("front: JSON-RPC error %d: %s", e.Code, e.Message)
}
