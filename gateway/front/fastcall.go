package front

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// handOverer is fastCall.handOver: the stdio fast path's *fastRun, or an
// HTTP request's closure (handOverFunc).
type handOverer interface {
	handOver(raw json.RawMessage) bool
}

// handOverFunc is a function as a handOverer.
type handOverFunc func(raw json.RawMessage) bool

func (f handOverFunc) handOver(raw json.RawMessage) bool { return f(raw) }

// fastCall is one tools/call a fast path took, as both transports hand it
// to answerFast: what the agent asked for and what this front answers
// with. Each transport keeps only its framing (reading the request,
// writing the answer, cancellation on its wire); the call itself, its
// outcome and the answer's shape are the same on both.
type fastCall struct {
	name       string // the tool as the agent named it
	args       []byte // the arguments as sent (nil: none)
	capability string // what the tool calls, <server>__<tool>
	rid        string // the request id of the log lines
	modern     bool   // a 2026-07-28 request: the answer carries serverInfo and resultType
	serverInfo []byte // this server's Implementation as JSON (a modern answer's _meta)
	// handOver gives the request to the SDK with raw, an upstream
	// input_required result, stashed (only the SDK turns it into an
	// answer of the agent's era); false when it could not, and the
	// result is then converted by the SDK path's rules here.
	handOver handOverer
	// late: the call is counted and logged by the transport once its
	// answer is written (call and outcome say what to finish), not by
	// answerFast before the answer leaves.
	late    bool
	call    *invoked
	outcome string

	// f and inv are answerFast's: the front whose backend is called
	// (callBackend) and the call's bookkeeping, held here rather than in
	// a closure and an allocation of their own.
	f   *front
	inv invoked
}

// callBackend is the backend call of q (answerFast's, through invoke).
func (q *fastCall) callBackend(ctx context.Context, p Peer) (json.RawMessage, error) {
	args := json.RawMessage(q.args)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	return q.f.b.Call(ctx, CallRequest{Capability: q.capability, Arguments: args, Tool: q.name}, p)
}

// answerFast runs one fast-path call through the backend and fills resp
// with exactly what the SDK's handler would answer: a protocol error as
// such, a result of the common shape passed through without decoding
// (passResult), anything else converted by the SDK path's rules
// (toResult). It reports true when it handed the request to the SDK
// instead; resp is unused then, and the SDK's path counts and logs the
// call.
func (f *front) answerFast(ctx context.Context, q *fastCall, p *peer, resp *jsonrpc.Response) (handed bool) {
	q.f = f
	c := &q.inv
	f.invokeInto(c, ctx, q.name, q.rid, q.capability, p, q)
	defer c.lctx.loan.giveBack()                // resp is built from copies of c.raw
	if c.err != nil && isProtocolError(c.err) { // errors.As's target would be an allocation a call
		var je *jsonrpc.Error
		asJSONRPC(c.err, &je)
		q.finished(ctx, c, "invalid")
		resp.Error = je
		return false
	}
	if c.err == nil {
		if out, outcome, ok := passResult(make([]byte, 0, len(c.raw)+len(q.serverInfo)+96), c.raw, q.modern, q.serverInfo); ok {
			q.finished(ctx, c, outcome)
			resp.Result = out
			return false
		}
		if q.handOver != nil && bytes.Contains(c.raw, []byte(`"inputRequests"`)) {
			// The stash keeps it, and if it cannot be handed over it is
			// answered below: from a copy either way (the loan is given back).
			c.raw = c.lctx.loan.keep(c.raw)
			if q.handOver.handOver(c.raw) {
				return true
			}
		}
	}
	res, outcome := f.toResult(ctx, q.rid, c.raw, c.err, c.log)
	q.finished(ctx, c, outcome)
	if res == nil { // cancelled by the agent
		resp.Error = errRequestCancelled
		return false
	}
	if res.Content == nil && len(res.InputRequests) == 0 {
		res.Content = []mcp.Content{}
	}
	if q.modern { // as the SDK annotates a result for a modern request
		if res.Meta == nil {
			res.Meta = mcp.Meta{}
		}
		if _, ok := res.Meta[mcp.MetaKeyServerInfo]; !ok {
			res.Meta[mcp.MetaKeyServerInfo] = json.RawMessage(q.serverInfo)
		}
	}
	out, err := json.Marshal(res)
	if err == nil && q.modern {
		rt := `"resultType":"complete"`
		if len(res.InputRequests) > 0 {
			rt = `"resultType":"input_required"`
		}
		out = withMember(out, rt)
	}
	if err != nil {
		c.log().Error("encoding a tool result failed", "err", err)
		resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error (request " + q.rid + ")"}
		return false
	}
	resp.Result = out
	return false
}

// emptyObject reports whether v, a valid JSON object, has no members.
func emptyObject(v []byte) bool {
	i := rawWS(v, 1)
	return i < len(v) && v[i] == '}'
}

// isProtocolError reports whether err is a *ProtocolError.
func isProtocolError(err error) bool {
	var pe *ProtocolError
	return errors.As(err, &pe)
}
