package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Code classifies every error this package returns. It is the branch point
// for callers: retry, report, tear down.
type Code string

// The error codes. Every *Error carries exactly one.
const (
	// CodeTimeout: a request or the handshake ran out of time.
	CodeTimeout Code = "timeout"
	// CodeClosed: the client was closed, or the server closed its stdout,
	// exited, or stopped accepting input.
	CodeClosed Code = "closed"
	// CodeProtocol: the server broke the wire protocol (bad framing, invalid
	// UTF-8, a malformed message or result, an unsupported version).
	CodeProtocol Code = "protocol"
	// CodeServer: the server answered with a JSON-RPC error object (see
	// Error.RPC).
	CodeServer Code = "server"
	// CodeSpawn: the server process could not be started.
	CodeSpawn Code = "spawn"
	// CodeAborted: the caller cancelled the request.
	CodeAborted Code = "aborted"
	// CodeOverload: an outbound message could not be queued because the
	// server stopped reading its stdin, or the message alone exceeds the cap.
	CodeOverload Code = "overload"
)

// Sentinels for branch points.
var (
	// ErrMethodNotFound is returned by an Options.OnRequest hook to fall back
	// to the built-in answers (ping, roots/list, -32601 for the rest).
	ErrMethodNotFound = errors.New("mcp: method not found")
	// ErrNoise marks a stdout line that is valid UTF-8 but not a JSON-RPC
	// message (a banner, a log line). Classify and Framer.Next wrap it; the
	// client sets such lines aside unless Options.NoiseFatal is set.
	ErrNoise = errors.New("mcp: not a JSON-RPC message")
	// ErrLineTooLong marks an inbound line over the cap (wrapped by *Error).
	ErrLineTooLong = errors.New("mcp: line exceeds maxLineBytes")
	// ErrInvalidUTF8 marks an inbound line that is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("mcp: line is not valid UTF-8")
	// ErrBatch marks an inbound JSON array: batches were removed from MCP in
	// 2025-06-18 and are refused.
	ErrBatch = errors.New("mcp: JSON-RPC batches are not supported")
)

// Standard JSON-RPC and MCP error codes used by this package.
const (
	rpcParseError            = -32700
	rpcInvalidRequest        = -32600
	rpcMethodNotFound        = -32601
	rpcInvalidParams         = -32602
	rpcInternalError         = -32603
	rpcUnsupportedProtoVersn = -32022
)

// Error is the typed error of this package. Every fault names the server.
type Error struct {
	Code    Code
	Server  string // server id from Options.Server
	Op      string // what was being done: "initialize", "tools/call", "read", "write", ...
	Message string // human-readable; never contains env values or stack traces
	// RPC is the JSON-RPC error object the server sent (Code == CodeServer),
	// kept intact: code, message and data as raw JSON.
	RPC *RPCError
	// StderrTail is the bounded tail of the server's stderr, when known, for
	// fatal errors. It is not part of Error(): the caller decides where it may go.
	StderrTail string
	Err        error // wrapped cause, if any
}

func (e *Error) Error() string {
	s := "mcp"
	if e.Server != "" {
		s += " server " + strconv.Quote(e.Server)
	}
	if e.Op != "" {
		s += ": " + e.Op
	}
	s += ": " + string(e.Code)
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.RPC != nil {
		s += ": " + e.RPC.Error()
	}
	if e.Err != nil && e.Message == "" {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error {
	if e.RPC != nil && e.Err == nil {
		return e.RPC
	}
	return e.Err
}

// CodeOf returns the Code of the first *Error in err's chain, or "" if none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// RPCError is a JSON-RPC error object as the server sent it. Data is kept as
// raw JSON (numbers are never round-tripped through float64).
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message)
}
