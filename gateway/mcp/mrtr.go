package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
)

// The 2026-07-28 era replaces server-to-client requests with multi-round-
// trip requests (MRTR): a result with resultType "input_required" carries
// inputRequests (key -> {method, params}) and perhaps an opaque
// requestState; the client answers each input request itself and sends the
// original request again, under a new id, with inputResponses (key ->
// result) and requestState echoed byte for byte (and no requestState when
// the server gave none).
const (
	// maxInputRounds bounds the retries of one request: a server that keeps
	// asking for input fails the request after this many.
	maxInputRounds = 8
	// maxInputRequests bounds the input requests of one round.
	maxInputRequests = 32
)

// inputRequired reports whether m is a modern result asking for input.
func (c *Client) inputRequired(m Message) bool {
	return m.Kind == KindResponse && c.Era() == EraModern && string(member(m.Result, "resultType")) == `"input_required"`
}

// answerInput answers the input requests of an input_required result with
// Options.OnRequest (then the built-in answers, as for a server-to-client
// request) and returns params for the retry: inputResponses set,
// requestState echoed exactly or removed.
func (c *Client) answerInput(ctx context.Context, method string, params, result json.RawMessage) (json.RawMessage, error) {
	fail := func(msg string) error {
		return &Error{Code: CodeProtocol, Server: c.server, Op: method, Message: msg}
	}
	var r struct {
		InputRequests map[string]struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		} `json:"inputRequests"`
		RequestState json.RawMessage `json:"requestState"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return nil, fail("malformed input_required result: " + err.Error())
	}
	if len(r.InputRequests) == 0 {
		return nil, fail("malformed input_required result: no inputRequests")
	}
	if len(r.InputRequests) > maxInputRequests {
		return nil, fail("the server asked for " + strconv.Itoa(len(r.InputRequests)) + " inputs at once (at most " + strconv.Itoa(maxInputRequests) + ")")
	}
	if len(r.RequestState) > 0 && r.RequestState[0] != '"' && string(r.RequestState) != "null" {
		return nil, fail("malformed input_required result: requestState is not a string")
	}
	keys := make([]string, 0, len(r.InputRequests))
	for k := range r.InputRequests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	responses := make(map[string]json.RawMessage, len(keys))
	for _, k := range keys {
		in := r.InputRequests[k]
		if in.Method == "" {
			return nil, fail("malformed input_required result: input request " + strconv.Quote(k) + " has no method")
		}
		res, err := c.answerOne(ctx, in.Method, in.Params)
		if err != nil {
			return nil, err
		}
		responses[k] = res
	}
	pm := map[string]json.RawMessage{}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &pm); err != nil {
			return nil, fail("invalid params: " + err.Error())
		}
	}
	ir, err := json.Marshal(responses)
	if err != nil {
		return nil, fail("an input response is not JSON: " + err.Error())
	}
	pm["inputResponses"] = ir
	delete(pm, "requestState")
	if len(r.RequestState) > 0 && string(r.RequestState) != "null" {
		pm["requestState"] = r.RequestState
	}
	out, err := json.Marshal(pm)
	if err != nil {
		return nil, fail("invalid params: " + err.Error())
	}
	return out, nil
}

// answerOne answers one input request the way serveRequest answers a
// server-to-client request, except that a refusal fails the caller's
// request (there is nowhere to send an error object).
func (c *Client) answerOne(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	var res json.RawMessage
	var err error
	if c.opts.OnRequest != nil {
		res, err = c.opts.OnRequest(ctx, method, params)
	} else {
		err = ErrMethodNotFound
	}
	if errors.Is(err, ErrMethodNotFound) {
		var e *RPCError
		res, e = builtinAnswer(method)
		if e != nil {
			return nil, &Error{Code: CodeProtocol, Server: c.server, Op: method,
				Message: "server asked for client input (" + truncUTF8([]byte(method), 64) + "), which sluice does not provide"}
		}
		err = nil
	}
	if err != nil {
		var rpcErr *RPCError
		if errors.As(err, &rpcErr) {
			return nil, &Error{Code: CodeAborted, Server: c.server, Op: method, Message: "the input the server asked for was refused: " + truncUTF8([]byte(rpcErr.Message), 200), Err: err}
		}
		if ctx.Err() != nil {
			return nil, &Error{Code: CodeAborted, Server: c.server, Op: method, Message: "cancelled while answering the server's input request", Err: ctx.Err()}
		}
		return nil, &Error{Code: CodeAborted, Server: c.server, Op: method, Message: "answering the server's input request failed", Err: err}
	}
	if len(res) == 0 {
		res = json.RawMessage("{}")
	}
	if method == "elicitation/create" {
		res = withElicitDefaults(params, res)
	}
	out, verr := outboundJSON(res)
	if verr != nil || out[0] != '{' {
		return nil, &Error{Code: CodeProtocol, Server: c.server, Op: method, Message: "the answer to the server's input request is not a JSON object"}
	}
	return out, nil
}
