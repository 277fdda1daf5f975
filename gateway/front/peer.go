package front

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// peer is the Peer of one request. It keeps the handler's context, which
// carries what the SDK needs to route notifications onto this request's
// response stream.
type peer struct {
	f   *front
	rid string
	job *job // set when the call runs under the input_required bridge

	reqMu  sync.Mutex // guards reqCtx, ss and token: a bridged call moves between requests
	reqCtx context.Context
	ss     *mcp.ServerSession
	token  any

	conn string // the agent connection (see Conn)
	// connSeq, when conn is empty, names a stateless HTTP request's own
	// connection: Conn formats it only when asked (upstream traffic
	// routing), not on every call.
	connSeq uint64
	// out, when set, carries the call's notifications and requests to the
	// agent on the HTTP fast path's response stream (httpfast.go) instead
	// of through the SDK session.
	out *fastStream

	traceparent, tracestate string // W3C trace context the agent sent (see TraceContext)
	caps                    *mcp.ClientCapabilities
	capsJSON                json.RawMessage // caps encoded, when known ahead (the stdio fast path)
	version                 string
	client                  string
	progMu                  sync.Mutex
	lastProg                float64
	sentProg                bool
}

func (f *front) newPeer(ctx context.Context, rid string, req mcp.Request) *peer {
	p := &peer{f: f, reqCtx: ctx, rid: rid}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
		p.ss = ss
		// One SDK session object per stdio connection and per HTTP session;
		// a stateless HTTP request gets one of its own. While a peer holds
		// it, no other session can have its address.
		p.conn = fmt.Sprintf("session-%p", ss)
	} else {
		p.conn = "request-" + rid
	}
	if rp, ok := req.GetParams().(mcp.RequestParams); ok && rp != nil {
		p.token = rp.GetProgressToken()
	}
	p.traceparent, p.tracestate = traceContextOf(req)
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		p.caps, p.version = r.ClientCapabilities(), r.ProtocolVersion()
		if ci := r.ClientInfo(); ci != nil {
			p.client = ci.Name
		}
	case *mcp.ReadResourceRequest:
		p.caps, p.version = r.ClientCapabilities(), r.ProtocolVersion()
		if ci := r.ClientInfo(); ci != nil {
			p.client = ci.Name
		}
	case *mcp.GetPromptRequest:
		p.caps, p.version = r.ClientCapabilities(), r.ProtocolVersion()
		if ci := r.ClientInfo(); ci != nil {
			p.client = ci.Name
		}
	}
	return p
}

// attachRequest points notifications at a new request (a bridge retry).
func (p *peer) attachRequest(ctx context.Context, req *mcp.CallToolRequest) {
	p.reqMu.Lock()
	defer p.reqMu.Unlock()
	p.reqCtx = ctx
	p.ss = req.Session
	p.token = req.Params.GetProgressToken()
}

func (p *peer) current() (context.Context, *mcp.ServerSession, any) {
	p.reqMu.Lock()
	defer p.reqMu.Unlock()
	return p.reqCtx, p.ss, p.token
}

func (p *peer) RequestID() string { return p.rid }

func (p *peer) SessionID() string {
	_, ss, _ := p.current()
	if ss == nil {
		return ""
	}
	return ss.ID()
}

func (p *peer) Conn() string {
	if p.conn == "" && p.connSeq != 0 {
		return "session-http-" + strconv.FormatUint(p.connSeq, 10)
	}
	return p.conn
}

func (p *peer) ClientName() string { return p.client }

func (p *peer) ClientCapabilities() json.RawMessage {
	if p.capsJSON != nil {
		return p.capsJSON
	}
	if p.caps == nil {
		return json.RawMessage("{}")
	}
	raw, err := json.Marshal(p.caps)
	if err != nil {
		return json.RawMessage("{}")
	}
	return raw
}

func (p *peer) Supports(capability string) bool {
	if p.caps == nil {
		return false
	}
	switch capability {
	case "elicitation":
		return p.caps.Elicitation != nil
	case "sampling":
		return p.caps.Sampling != nil
	case "roots":
		return p.caps.RootsV2 != nil || p.caps.Roots.ListChanged
	}
	return false
}

func (p *peer) modern() bool { return p.version >= modernVersion }

func (p *peer) Progress(ctx context.Context, progress, total float64, message string) error {
	reqCtx, ss, token := p.current()
	if token == nil || (ss == nil && p.out == nil) {
		return nil
	}
	p.progMu.Lock()
	if p.sentProg && progress <= p.lastProg {
		p.progMu.Unlock()
		return nil // progress must increase; drop stale or repeated values
	}
	p.sentProg, p.lastProg = true, progress
	p.progMu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	params := &mcp.ProgressNotificationParams{ProgressToken: token, Progress: progress, Message: message}
	if total > 0 {
		params.Total = total
	}
	if p.out != nil {
		return p.out.notify("notifications/progress", params)
	}
	return ss.NotifyProgress(reqCtx, params)
}

// WantsProgress reports whether progress can reach the agent: it sent a
// progressToken, or the call runs under the input_required bridge (a
// retry may bring one). See ProgressWanted.
func (p *peer) WantsProgress() bool {
	if p.job != nil {
		return true
	}
	_, _, token := p.current()
	return token != nil
}

func (p *peer) Log(ctx context.Context, level, logger string, data json.RawMessage) error {
	reqCtx, ss, _ := p.current()
	if ss == nil && p.out == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	params := &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(level), Logger: logger, Data: data}
	if p.out != nil {
		return p.out.log(params)
	}
	return ss.Log(reqCtx, params)
}

// canAsk reports why the client cannot be sent a request, if it cannot.
func (p *peer) canAsk(what, capability string) error {
	_, ss, _ := p.current()
	switch {
	case ss == nil && p.out == nil:
		return &unsupportedError{what, "there is no client session"}
	case capability != "" && !p.Supports(capability):
		return &unsupportedError{what, "the client did not declare the " + capability + " capability"}
	case p.modern():
		return &unsupportedError{what, "the client speaks protocol " + p.version + ", where a server may not send requests in the middle of a call"}
	}
	return nil
}

// askCtx bounds a server-to-client request by the request, the caller's
// context and ClientRequestTimeout.
func (p *peer) askCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	reqCtx, _, _ := p.current()
	c, cancel := context.WithTimeout(reqCtx, p.f.opts.ClientRequestTimeout)
	stop := context.AfterFunc(ctx, cancel)
	return c, func() { stop(); cancel() }
}

func (p *peer) Elicit(ctx context.Context, message string, schema json.RawMessage) (bool, error) {
	params := &mcp.ElicitParams{Mode: "form", Message: message}
	if len(schema) > 0 && string(schema) != "null" {
		params.RequestedSchema = schema
	} else {
		params.RequestedSchema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	if p.job != nil {
		c, cancel := context.WithTimeout(ctx, p.f.opts.ClientRequestTimeout)
		defer cancel()
		return p.elicitViaBridge(c, params)
	}
	if err := p.canAsk("an elicitation request", "elicitation"); err != nil {
		return false, err
	}
	c, cancel := p.askCtx(ctx)
	defer cancel()
	_, ss, _ := p.current()
	res, err := ss.Elicit(c, params)
	if err != nil {
		return false, fmt.Errorf("front: elicitation failed: %w", err)
	}
	return res.Action == "accept", nil
}

func (p *peer) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	var capability string
	switch method {
	case "elicitation/create":
		capability = "elicitation"
	case "sampling/createMessage":
		capability = "sampling"
	case "roots/list":
		capability = "" // roots support is not reliably visible; ask and let the client refuse
	default:
		return nil, &unsupportedError{fmt.Sprintf("%q", method), "front forwards only elicitation/create, sampling/createMessage and roots/list"}
	}
	if err := p.canAsk(method, capability); err != nil {
		return nil, err
	}
	c, cancel := p.askCtx(ctx)
	defer cancel()
	if p.out != nil {
		return p.out.request(c, method, params)
	}
	var (
		res any
		err error
	)
	_, ss, _ := p.current()
	switch method {
	case "elicitation/create":
		var ep mcp.ElicitParams
		if err := json.Unmarshal(params, &ep); err != nil {
			return nil, fmt.Errorf("front: malformed elicitation params: %w", err)
		}
		res, err = ss.Elicit(c, &ep)
	case "sampling/createMessage":
		var sp mcp.CreateMessageWithToolsParams
		if err := json.Unmarshal(params, &sp); err != nil {
			return nil, fmt.Errorf("front: malformed sampling params: %w", err)
		}
		res, err = ss.CreateMessageWithTools(c, &sp)
	case "roots/list":
		res, err = ss.ListRoots(c, &mcp.ListRootsParams{})
	}
	if err != nil {
		return nil, fmt.Errorf("front: %s failed: %w", method, err)
	}
	return json.Marshal(res)
}

// traceContextOf is the W3C trace context of an agent's request: the
// traceparent (and tracestate) in its params' _meta, else in its HTTP
// headers. Values are bounded; the tracer validates them.
func traceContextOf(req mcp.Request) (traceparent, tracestate string) {
	if params := req.GetParams(); params != nil {
		if m := params.GetMeta(); m != nil {
			traceparent, _ = m["traceparent"].(string)
			tracestate, _ = m["tracestate"].(string)
		}
	}
	if traceparent == "" {
		if x := req.GetExtra(); x != nil && x.Header != nil {
			traceparent, tracestate = x.Header.Get("traceparent"), x.Header.Get("tracestate")
		}
	}
	if len(traceparent) > 128 || len(tracestate) > 512 {
		return "", ""
	}
	return traceparent, tracestate
}

// TraceContext returns the W3C traceparent and tracestate the agent sent
// with the request p serves ("" when none, or when p is not front's).
func TraceContext(p Peer) (traceparent, tracestate string) {
	if pp, ok := p.(*peer); ok && pp != nil {
		return pp.traceparent, pp.tracestate
	}
	return "", ""
}
