package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"sluice/gateway/catalog"
	"sluice/gateway/mcp"
	"sluice/gateway/trace"
	"sluice/wasm"
)

// ApprovalRequest is what a surface shows when asking a person (or the
// calling agent's user) to approve one call.
type ApprovalRequest struct {
	Capability string
	Class      string
	Reason     string
	Arguments  json.RawMessage
}

// CallRequest is one tool call.
type CallRequest struct {
	Capability string
	Arguments  json.RawMessage // a JSON object; nil or empty = {}
	// Yes approves the call up front (the CLI's --yes).
	Yes bool
	// Approve is asked when the call needs approval; nil refuses with the
	// remedy. It must not block forever: surfaces bound it.
	Approve    func(ctx context.Context, r ApprovalRequest) (bool, error)
	OnProgress func(params json.RawMessage)
	Meta       json.RawMessage
	// Timeout bounds the call from the surface's side; the declaration's
	// timeoutMs (default 60 s) bounds it too, whichever is shorter.
	Timeout time.Duration
	// Raw skips the context-stage filters (a script's calls: the script's
	// final value is what reaches the model).
	Raw bool

	// asker is Approve for an agent's call (the frontend's, kept in the
	// call's context node rather than in a closure of its own); Approve
	// wins when both are set.
	asker approvalAsker
}

// approvalAsker asks for one call's approval, as CallRequest.Approve.
type approvalAsker interface {
	askApproval(ctx context.Context, r ApprovalRequest) (bool, error)
}

// canAsk reports whether the call has someone to ask for approval.
func (r *CallRequest) canAsk() bool { return r.Approve != nil || r.asker != nil }

// ask asks for the call's approval (canAsk must be true).
func (r *CallRequest) ask(ctx context.Context, a ApprovalRequest) (bool, error) {
	if r.Approve != nil {
		return r.Approve(ctx, a)
	}
	return r.asker.askApproval(ctx, a)
}

// CallResult is a call's outcome as it reaches the caller.
type CallResult struct {
	Capability string          `json:"capability"`
	Result     json.RawMessage `json:"result"`  // the MCP CallToolResult, after filters
	IsError    bool            `json:"isError"` // the tool reported failure
	RawBytes   int             `json:"rawBytes"`
	Duration   time.Duration   `json:"-"`

	held wasm.Output // the filter output Result lies in, if any (see Release)
}

// Release gives the bytes of Result back to the filter host, whose later
// calls write their outputs there: call it once the answer made of Result
// is written (or copied), and read neither Result nor any slice of it
// afterwards. Release sets Result to nil; calling it again does nothing.
// Not calling it is always safe: Result is then the caller's for good,
// and left to the garbage collector. Anything that keeps the bytes beyond
// the answer (a stash, a trace, a record) copies them or does not release.
func (r *CallResult) Release() {
	if r == nil {
		return
	}
	r.held.Release()
	r.Result = nil
}

// Call launches the owning server lazily when trusted (never otherwise),
// validates the tool against the live listing, admits the call, calls it
// with the declaration's timeout and returns the result faithfully. (Call,
// in dashboard.go, records it for the dashboard when one is served.)
func (g *Gateway) call(ctx context.Context, req CallRequest) (_ *CallResult, err error) {
	start := time.Now()
	server, tool, ok := SplitCapability(req.Capability)
	var span *trace.Span // nil (every method a no-op) with tracing off: no attributes built
	if g.tracer != nil {
		ctx, span = g.tracer.Start(ctx, "call "+req.Capability, trace.KindInternal,
			trace.Attr{Key: "gen_ai.operation.name", Value: "execute_tool"}, trace.Attr{Key: "gen_ai.tool.name", Value: tool},
			trace.Attr{Key: "sluice.server", Value: server})
		defer func() { span.End(err) }()
	}
	if !ok {
		return nil, &Error{Kind: KindBadInput, Capability: req.Capability, Message: fmt.Sprintf("%q is not a capability name", req.Capability), Remedy: Remedy{Before: "capabilities are SERVER__TOOL;", Step: StepFind, After: "to list them"}}
	}
	args, err := normalizeArgs(req.Arguments)
	if err != nil {
		return nil, &Error{Kind: KindBadInput, Capability: req.Capability, Message: err.Error()}
	}
	v, err := g.callServer(server)
	if err != nil {
		return nil, err
	}
	if !v.Trusted() {
		return nil, untrustedErr(v)
	}
	if why := g.hiddenTool(v, tool); why != "" {
		return nil, hiddenToolErr(v, tool, why)
	}
	defer trackCaller(ctx, server)() // a script's call: route upstream traffic to its agent
	// Refuse before launching when the recorded listing already says the
	// call needs approval that nobody can give.
	if !req.canAsk() && !req.Yes {
		if l := g.knownAll(v); l.prov != ProvMissing {
			var raw json.RawMessage
			for _, t := range l.tools {
				if t.Name == tool {
					raw = t.raw
				}
			}
			if err := g.callHold(v, tool, raw, func() []catalog.Sum { return sumsOf(l.tools) }); err != nil {
				return nil, err
			}
			for _, t := range l.tools {
				if t.Name == tool {
					if a := g.admission(v, t); !a.Approved {
						return nil, refusal(req.Capability, a)
					}
				}
			}
		}
	}
	l, err := g.lease(ctx, v.decl)
	if err != nil {
		return nil, err
	}
	ok = false
	defer func() { l.Release(ok) }() // a server that died meanwhile is retired
	t, found := l.Tool(tool)
	var listed json.RawMessage
	if found {
		listed = t.Raw
	}
	if err := g.callHold(v, tool, listed, func() []catalog.Sum {
		live := l.Tools()
		sums := make([]catalog.Sum, 0, len(live))
		for _, x := range live {
			sums = append(sums, catalog.SumOf(x.Raw))
		}
		return sums
	}); err != nil {
		return nil, err
	}
	if !found {
		var all []toolInfo
		for _, x := range l.Tools() {
			if g.hiddenTool(v, x.Name) == "" {
				all = append(all, fromMCP(x))
			}
		}
		return nil, unknownToolErr(server, tool, all, l.Truncated())
	}
	a := g.admission(v, fromMCP(t))
	if g.tracer != nil {
		_, aspan := g.tracer.Start(ctx, "admission", trace.KindInternal)
		aspan.Set(trace.Attr{Key: "sluice.approved", Value: a.Approved || req.Yes}, trace.Attr{Key: "sluice.action_class", Value: string(a.Class)})
		aspan.End(nil)
	}
	if !a.Approved && !req.Yes {
		if !req.canAsk() {
			return nil, refusal(req.Capability, a)
		}
		yes, err := req.ask(ctx, ApprovalRequest{Capability: req.Capability, Class: a.Class, Reason: a.Reason, Arguments: args})
		if err != nil {
			e := refusal(req.Capability, a).(*Error)
			e.Message += " (approval could not be asked: " + err.Error() + ")"
			e.Err = err
			return nil, e
		}
		if !yes {
			e := refusal(req.Capability, a).(*Error)
			e.Message = "declined: " + req.Capability + " was not approved"
			return nil, e
		}
	}
	t0 := time.Now()
	uctx, uspan := ctx, (*trace.Span)(nil)
	if g.tracer != nil {
		uctx, uspan = g.tracer.Start(ctx, "tools/call "+tool, trace.KindClient,
			trace.Attr{Key: "mcp.method.name", Value: "tools/call"}, trace.Attr{Key: "gen_ai.tool.name", Value: tool},
			trace.Attr{Key: "gen_ai.operation.name", Value: "execute_tool"}, trace.Attr{Key: "sluice.server", Value: server})
	}
	raw, err := l.Client().CallTool(uctx, tool, args, &mcp.CallOptions{Timeout: l.Timeout(tool, req.Timeout), OnProgress: req.OnProgress, Meta: withTraceMeta(uctx, req.Meta)})
	if uspan != nil {
		uspan.Set(trace.Attr{Key: "sluice.bytes_in", Value: len(raw)}, trace.Attr{Key: "sluice.bytes_out", Value: len(args)})
		uspan.End(err)
	}
	isError := err == nil && isErrorResult(raw)
	g.noteCall(ctx, server, tool, len(args), raw, isError, err, time.Since(t0))
	if err != nil {
		return nil, callErr(server, req.Capability, err)
	}
	ok = true
	res := &CallResult{Capability: req.Capability, RawBytes: len(raw)}
	res.IsError = isError
	out, held, err := g.filterResult(ctx, req.Capability, raw, !req.Raw)
	if err != nil {
		return nil, err
	}
	res.Result, res.held = out, held
	res.Duration = time.Since(start)
	return res, nil
}

// callErr is a failed tools/call: the capability, then what the client
// reported (a malformed result is named as such).
func callErr(server, capName string, err error) error {
	msg := capName + ": " + err.Error()
	var me *mcp.Error
	if errors.As(err, &me) && me.Code == mcp.CodeProtocol && me.Op == "tools/call" {
		msg = fmt.Sprintf("%s: the server sent a malformed result: %s", capName, me.Message)
	}
	return &Error{Kind: KindUpstream, Server: server, Capability: capName, Message: msg, Err: err}
}

// normalizeArgs checks that arguments are one JSON object; it keeps the
// bytes as they are (numbers are never re-encoded).
func normalizeArgs(a json.RawMessage) (json.RawMessage, error) {
	a = bytes.TrimSpace(a)
	if len(a) == 0 || bytes.Equal(a, []byte("null")) {
		return json.RawMessage(`{}`), nil
	}
	if a[0] != '{' || !json.Valid(a) {
		return nil, fmt.Errorf("arguments must be one JSON object, like {\"path\": \"a.txt\"}")
	}
	return a, nil
}

// isErrorResult reports whether a CallToolResult says isError: true.
func isErrorResult(raw json.RawMessage) bool {
	if !mayHoldKey(raw, "iserror") {
		return false
	}
	if !foldsAwayFrom(raw, "iserror") {
		// No member name can spell the key in a way other than its ASCII
		// letters in any case: encoding/json's match is then a top-level
		// name of exactly those bytes, the last one wins, and raw (a
		// validated result) need not be decoded.
		var v []byte
		mcp.Members(raw, func(name, value []byte) bool {
			if len(name) == len("iserror")+2 && foldedASCII(name[1:len(name)-1], "iserror") {
				v = value
			}
			return true
		})
		return string(v) == "true"
	}
	var r struct {
		IsError json.RawMessage `json:"isError"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return false
	}
	return bytes.Equal(bytes.TrimSpace(r.IsError), []byte("true"))
}

// mayHoldKey reports whether raw may have a member that encoding/json
// matches with a field named key (lower case ASCII letters). A JSON key is
// a quoted string, and encoding/json matches it case-insensitively with
// Unicode folding: without a \u escape (which could spell any letter) and
// without a character that folds to an ASCII letter of key (U+017F long s
// to s, U+212A Kelvin sign to k), a matching key is exactly len(key) ASCII
// bytes between two quotes. So raw may hold key unless no quote is
// followed by key, in any letter case, and another quote. A false answer
// spares decoding; the search jumps from quote to quote.
func mayHoldKey(raw []byte, key string) bool {
	if foldsAwayFrom(raw, key) {
		return true
	}
	n := len(key)
	for i := 0; ; {
		j := bytes.IndexByte(raw[i:], '"')
		if j < 0 {
			return false
		}
		i += j + 1
		if i+n < len(raw) && raw[i+n] == '"' && foldedASCII(raw[i:i+n], key) {
			return true
		}
	}
}

// foldsAwayFrom reports whether raw may spell key (lower case ASCII
// letters) other than as its letters in some case: with a \u escape or a
// character that folds to one of its letters (see mayHoldKey).
func foldsAwayFrom(raw []byte, key string) bool {
	return bytes.Contains(raw, []byte(`\u`)) ||
		strings.IndexByte(key, 's') >= 0 && bytes.Contains(raw, []byte("\u017f")) ||
		strings.IndexByte(key, 'k') >= 0 && bytes.Contains(raw, []byte("\u212a"))
}

// foldedASCII reports whether b is key (lower case ASCII letters) in any
// letter case.
func foldedASCII(b []byte, key string) bool {
	for k := range len(key) {
		if b[k]|0x20 != key[k] {
			return false
		}
	}
	return true
}
