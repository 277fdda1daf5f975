package front

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// modernVersion is the first protocol revision without the initialize
// handshake (per-request _meta, no server-to-client requests).
const modernVersion = "2026-07-28"

// serverTitle is the title in this server's Implementation.
const serverTitle = "sluice MCP gateway"

// front is one served gateway: an SDK server shared by every session of
// one transport, plus the flat-mode registry and the in-flight tracker.
type front struct {
	b    Backend
	opts Options
	log  *slog.Logger
	srv  *mcp.Server

	// hard is cancelled when the drain bound expires: every in-flight call
	// context derives from it.
	hard       context.Context
	cancelHard context.CancelFunc
	inflight   inflight
	parked     parked     // bridged calls waiting for the agent's answer
	answered   stash      // fast-path answers handed to the SDK (fastpath.go)
	levels     levelTable // HTTP sessions' logging/setLevel levels (httpfast.go)

	seq    atomic.Uint64
	prefix string // random per-process request id prefix

	// flatNow is the surface served: flat (every tool direct) or
	// gateway. Fixed unless Mode is ModeAuto; changed by the event loop
	// only (decideMode).
	flatNow   atomic.Bool
	decided   bool        // ModeAuto has chosen once (event loop only)
	switching surfaceLock // ModeAuto's switches against tools/list (flat.go)
	started   bool        // start registered the first surface (event loop only)
	// direct counts the registered direct tools (flat or exposed): the
	// fast path looks no further while there are none.
	direct atomic.Int64

	mu        sync.Mutex
	features  Features
	gwTools   map[string]bool       // registered gateway-mode tools
	resultTpl bool                  // the stored-results resource template is registered
	flat      map[Kind]*flatEntries // flat-mode registrations (in gateway mode: exposed tools)

	events    chan struct{} // wakes the event loop (cap 1); never closed
	quit      chan struct{} // closed by close()
	pendMu    sync.Mutex
	pending   map[EventKind]bool
	pendLogs  []Event
	stopSub   func()
	loopDone  chan struct{}
	closeOnce sync.Once
	removeSrc func()
}

// flatEntries is what one flat-mode kind currently registers: exposed key
// (tool/prompt name, resource URI or URI template) -> owner and signature.
type flatEntries struct {
	owner map[string]upstreamRef
	sig   map[string]string
}

func newFront(b Backend, o *Options) (*front, error) {
	if b == nil {
		return nil, &OptionError{Field: "Backend", Value: "nil", Want: "a Backend"}
	}
	opts, err := o.resolved()
	if err != nil {
		return nil, err
	}
	var rb [4]byte
	_, _ = rand.Read(rb[:])
	f := &front{
		b:        b,
		opts:     opts,
		log:      opts.Logger,
		prefix:   hex.EncodeToString(rb[:]),
		gwTools:  map[string]bool{},
		flat:     map[Kind]*flatEntries{},
		events:   make(chan struct{}, 1),
		quit:     make(chan struct{}),
		pending:  map[EventKind]bool{},
		loopDone: make(chan struct{}),
	}
	f.hard, f.cancelHard = context.WithCancel(context.Background())
	f.flatNow.Store(opts.Mode == ModeFlat)
	f.srv = mcp.NewServer(&mcp.Implementation{Name: opts.Name, Title: serverTitle, Version: opts.Version}, f.serverOptions())
	f.srv.AddReceivingMiddleware(f.guardMiddleware, f.surfaceMiddleware)
	f.removeSrc = opts.Metrics.addSessionSource(func() int {
		n := 0
		for range f.srv.Sessions() {
			n++
		}
		return n
	})
	return f, nil
}

func (f *front) serverOptions() *mcp.ServerOptions {
	caps := &mcp.ServerCapabilities{
		Tools:   &mcp.ToolCapabilities{ListChanged: true},
		Logging: &mcp.LoggingCapabilities{},
	}
	so := &mcp.ServerOptions{
		Instructions: f.instructions(),
		Logger:       sdkLogger(f.log, "mcp"),
		Capabilities: caps,
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
			// Lists may differ by authorization (token) and change at any
			// time (list_changed): never shared, always revalidated.
			c.CacheScope = "private"
		},
	}
	if f.opts.Mode != ModeGateway { // flat, or auto (which may be flat)
		caps.Prompts = &mcp.PromptCapabilities{ListChanged: true}
		caps.Resources = &mcp.ResourceCapabilities{ListChanged: true}
		so.CompletionHandler = f.complete
		so.SubscribeHandler = func(context.Context, *mcp.SubscribeRequest) error { return nil }
		so.UnsubscribeHandler = func(context.Context, *mcp.UnsubscribeRequest) error { return nil }
	}
	return so
}

// start registers the initial tool surface and begins following backend
// events. It never fails: a backend that cannot list yet is logged and
// retried on its next change event.
func (f *front) start(ctx context.Context) {
	f.stopSub = f.b.Subscribe(f.onEvent)
	f.safely("initial registration", func() {
		feat := f.b.Features() // never call the backend under f.mu
		f.mu.Lock()
		f.features = feat
		f.mu.Unlock()
		switched := f.syncTools(ctx) // ModeAuto decides here
		f.syncGatewayTools()
		if f.flatNow.Load() && !switched {
			for _, k := range []Kind{KindResources, KindResourceTemplates, KindPrompts} {
				f.syncFlat(ctx, k)
			}
		}
		if f.opts.OnMode != nil {
			f.opts.OnMode(f.surface())
		}
		f.started = true
	})
	go f.eventLoop()
}

// surface is the mode served now: ModeFlat or ModeGateway.
func (f *front) surface() Mode {
	if f.flatNow.Load() {
		return ModeFlat
	}
	return ModeGateway
}

// close stops following events. It does not close the backend.
func (f *front) close() {
	f.closeOnce.Do(func() {
		if f.stopSub != nil {
			f.stopSub()
		}
		close(f.quit)
		<-f.loopDone
		f.removeSrc()
	})
}

func (f *front) instructions() string {
	var b strings.Builder
	if f.opts.Instructions != "" {
		b.WriteString(f.opts.Instructions)
	} else if f.opts.Mode == ModeAuto {
		b.WriteString("sluice is an MCP gateway to many tool servers. While they have few tools, each is listed here as its own tool, named <server>__<tool> (or its plain name when unique); when they have many, the list changes to find (search capabilities by keyword), describe (a capability's argument schema) and call (run it), plus execute for Starlark scripts that call capabilities as functions, and tools/list_changed says so. Large results are shortened and name a handle: read_result (sluice__read_result while tools are listed directly) pages the rest.")
	} else if f.opts.Mode == ModeFlat {
		b.WriteString("sluice is an MCP gateway: each tool here belongs to one upstream server and is named <server>__<tool> (or its plain name when unique).")
		if f.b.Features().ReadResult {
			b.WriteString(" Results may be shortened to fit a byte budget; a shortened result names a handle: pass it to " + flatReadResult + " to read the rest in pages.")
		}
	} else {
		b.WriteString("sluice is an MCP gateway to many tool servers. Use find to search capabilities by keyword, describe to get a capability's argument schema, then call to run it. Capabilities are named <server>__<tool>. Large results are shortened; read_result pages the rest when offered. execute (when offered) runs a Starlark script that calls capabilities as functions, for loops and joins.")
		if f.b.Features().Expose {
			b.WriteString(" Some capabilities are also listed as tools of their own (named <server>__<tool>): call those directly.")
		}
	}
	if s := strings.TrimSpace(f.b.Instructions()); s != "" && f.opts.MaxInstructionsBytes > 0 {
		b.WriteString("\n\nUpstream servers:\n")
		b.WriteString(truncateUTF8(s, f.opts.MaxInstructionsBytes))
	}
	return b.String()
}

func truncateUTF8(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const ell = " [...]"
	cut := max - len(ell)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ell
}

func (f *front) newRequestID(req mcp.Request) string {
	if req != nil {
		if x := req.GetExtra(); x != nil && x.Header != nil {
			// Set by the HTTP handler, already sanitized (requestid.go).
			if id := x.Header.Get(RequestIDHeader); id != "" && validRequestID(id) {
				return id
			}
		}
	}
	// One allocation, the string: a concatenation with FormatUint's
	// result would be two.
	var buf [48]byte
	b := strconv.AppendUint(append(append(buf[:0], f.prefix...), '-'), f.seq.Add(1), 10)
	return string(b)
}

// guardMiddleware recovers panics in any handler (the SDK does not), so a
// bug answers one request with an internal error instead of killing the
// process, and forwards logging/setLevel to the backend in flat mode.
func (f *front) guardMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		defer func() {
			if p := recover(); p != nil {
				rid := f.newRequestID(req)
				f.log.Error("panic in handler", "request_id", rid, "method", method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error (request " + rid + ")"}
			}
		}()
		if cr, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" && f.unlistedFlatTool(cr) {
			return f.callUnlisted(ctx, cr)
		}
		if method == "logging/setLevel" {
			if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && p != nil {
				if f.flatNow.Load() {
					if err := f.b.SetLogLevel(ctx, string(p.Level)); err != nil {
						f.log.Warn("forwarding logging/setLevel failed", "level", p.Level, "err", err)
					}
				}
				res, err := next(ctx, method, req)
				if err == nil { // the HTTP fast path filters by it (httpfast.go)
					ss, _ := req.GetSession().(*mcp.ServerSession)
					f.levels.set(ss, string(p.Level))
				}
				return res, err
			}
		}
		return next(ctx, method, req)
	}
}

// unlistedFlatTool reports a call of a SERVER__TOOL name front has not
// registered: a tool past a truncated listing, a name not exposed (a
// prefixed name under NoPrefix; in gateway mode a tool not pinned by
// expose), or none at all. No gateway-mode tool has "__" in its name.
func (f *front) unlistedFlatTool(req *mcp.CallToolRequest) bool {
	if req.Params == nil {
		return false
	}
	name := req.Params.Name
	if name == flatReadResult || strings.Index(name, "__") < 1 {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if e := f.flat[KindTools]; e != nil {
		if _, ok := e.owner[name]; ok {
			return false
		}
	}
	return true
}

// callUnlisted answers an unlisted flat-mode call as the protocol's
// unknown tool, never running anything, but asks the backend (describe,
// which never launches) why the capability is missing, so the agent
// learns the reason (a listing truncated at the cap, an untrusted
// server ...) instead of a bare "unknown tool".
func (f *front) callUnlisted(ctx context.Context, req *mcp.CallToolRequest) (mcp.Result, error) {
	name := req.Params.Name
	msg := "Unknown tool " + strconv.Quote(name)
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := func() (raw json.RawMessage, err error) {
		defer func() {
			if r := recover(); r != nil {
				f.log.Error("panic in backend describe", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				raw, err = nil, errPanic
			}
		}()
		return f.b.Describe(dctx, DescribeRequest{Capabilities: []string{name}}, f.newPeer(ctx, f.newRequestID(req), req))
	}()
	var te *ToolError
	switch {
	case errors.As(err, &te):
		msg += ": " + te.Error()
	case err == nil && !f.flatNow.Load():
		// A capability that exists but is not listed directly here.
		msg += ": it is not listed as a tool of its own here; run it through call, e.g. {\"capability\":" + strconv.Quote(name) + ",\"arguments\":{...}}, after describe shows its arguments"
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}

// ---------------------------------------------------------------------------
// Running a call

// callFunc is the backend half of one tool call.
type callFunc func(ctx context.Context, p Peer) (json.RawMessage, error)

// runTool wraps every tool handler: request id, in-flight tracking, hard
// cancellation, panic recovery, logging, metrics and result conversion. A
// modern request from a client that can be asked runs under the
// input_required bridge (bridge.go); a bridge retry resumes its job.
func (f *front) runTool(ctx context.Context, req *mcp.CallToolRequest, capability string, fn callFunc) (*mcp.CallToolResult, error) {
	if res, err, ok := f.resumeJob(ctx, req); ok {
		return res, err
	}
	rid := f.newRequestID(req)
	p := f.newPeer(ctx, rid, req)
	if useBridge(p) {
		res, err := f.startJob(ctx, req, p, func(jctx context.Context) (*mcp.CallToolResult, error) {
			return f.finishCall(jctx, req, rid, capability, p, fn)
		})
		if errors.Is(err, errShuttingDown) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the gateway is shutting down; retry against a running gateway"}
		}
		return res, err
	}
	if !f.inflight.add() {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the gateway is shutting down; retry against a running gateway"}
	}
	defer f.inflight.done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(f.hard, cancel)
	defer stop()
	return f.finishCall(ctx, req, rid, capability, p, fn)
}

// finishCall runs the backend half of a call under ctx and converts,
// logs and counts its outcome.
func (f *front) finishCall(ctx context.Context, req *mcp.CallToolRequest, rid, capability string, p *peer, fn callFunc) (*mcp.CallToolResult, error) {
	c := f.invoke(ctx, req.Params.Name, rid, capability, p, fn)
	var pe *ProtocolError
	if errors.As(c.err, &pe) {
		var je *jsonrpc.Error
		asJSONRPC(c.err, &je)
		c.finish(ctx, "invalid")
		return nil, je
	}
	res, outcome := f.toResult(ctx, rid, c.raw, c.err, c.log)
	c.lctx.loan.giveBack() // res is decoded: a copy
	c.finish(ctx, outcome)
	if res == nil { // cancelled by the agent: no result is expected
		return nil, errRequestCancelled
	}
	return res, nil
}

// invoked is one backend call made by invoke, waiting for its outcome to
// be counted and logged (finish).
type invoked struct {
	f          *front
	raw        json.RawMessage
	err        error
	rid, tool  string
	capability string
	start      time.Time
	end        time.Time // when the call ended, if finish comes later
	lg         *slog.Logger
	// lctx is the context the backend call ran under, with its loan:
	// whoever answers from raw gives it back (lctx.loan.giveBack) once
	// the answer no longer reads raw, and never reads raw after.
	lctx loanCtx
}

// log is the call's logger (request id, tool, capability), made when a
// message other than the last needs it: the common call logs one line.
func (c *invoked) log() *slog.Logger {
	if c.lg == nil {
		c.lg = c.f.log.With("request_id", c.rid, "tool", c.tool, "capability", c.capability)
	}
	return c.lg
}

// invoke runs fn under ctx with panic recovery.
func (f *front) invoke(ctx context.Context, tool, rid, capability string, p *peer, fn callFunc) *invoked {
	c := new(invoked)
	f.invokeInto(c, ctx, tool, rid, capability, p, fn)
	return c
}

// backendCaller is a backend call invoke runs: a callFunc, or a fast
// path's *fastCall.
type backendCaller interface {
	callBackend(ctx context.Context, p Peer) (json.RawMessage, error)
}

func (fn callFunc) callBackend(ctx context.Context, p Peer) (json.RawMessage, error) {
	return fn(ctx, p)
}

// invokeInto is invoke with the call's bookkeeping in c (reset first).
func (f *front) invokeInto(c *invoked, ctx context.Context, tool, rid, capability string, p *peer, fn backendCaller) {
	*c = invoked{f: f, rid: rid, tool: tool, capability: capability, start: time.Now()}
	if f.log.Enabled(ctx, slog.LevelDebug) {
		c.log().Debug("call started", "session", p.SessionID(), "client", p.ClientName())
	}
	c.raw, c.err = func() (raw json.RawMessage, err error) {
		defer func() {
			if r := recover(); r != nil {
				c.log().Error("panic in backend call", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				raw, err = nil, errPanic
			}
		}()
		c.lctx.Context = ctx
		return fn.callBackend(&c.lctx, p)
	}()
}

// finish counts and logs the call's outcome: one line, with the same
// attributes in the same order as the call's logger would write them.
func (c *invoked) finish(ctx context.Context, outcome string) {
	now := c.end
	if now.IsZero() {
		now = time.Now()
	}
	d := now.Sub(c.start)
	c.f.opts.Metrics.ObserveCall(c.capability, outcome, d)
	lvl := slog.LevelInfo
	if outcome == "error" {
		lvl = slog.LevelWarn
	}
	if !c.f.log.Enabled(ctx, lvl) {
		return
	}
	if c.lg != nil {
		c.finishWith(ctx, c.lg, lvl, outcome, d)
		return
	}
	attrs := [...]slog.Attr{slog.String("request_id", c.rid), slog.String("tool", c.tool), slog.String("capability", c.capability), {}, {}, {}}
	n := 3
	if outcome == "invalid" {
		var pe *ProtocolError
		errors.As(c.err, &pe)
		attrs[n], attrs[n+1] = slog.Int("code", pe.Code), slog.Int64("duration_ms", d.Milliseconds())
		logRecord(ctx, c.f.log, now, slog.LevelInfo, "call answered with a protocol error", attrs[:n+2])
		return
	}
	attrs[n], attrs[n+1] = slog.String("outcome", outcome), slog.Int64("duration_ms", d.Milliseconds())
	n += 2
	if c.err != nil && outcome != "canceled" {
		attrs[n] = slog.Any("err", c.err)
		n++
	}
	logRecord(ctx, c.f.log, now, lvl, "call finished", attrs[:n])
}

// logRecord hands one record to log's handler, as Logger.LogAttrs does but
// without looking up the caller's program counter (the handler is not
// asked for the source, and the lookup was a measurable part of the
// per-call line).
func logRecord(ctx context.Context, log *slog.Logger, t time.Time, lvl slog.Level, msg string, attrs []slog.Attr) {
	r := slog.NewRecord(t, lvl, msg, 0)
	r.AddAttrs(attrs...)
	_ = log.Handler().Handle(ctx, r)
}

// finishWith is finish through a logger that already carries the call's
// attributes.
func (c *invoked) finishWith(ctx context.Context, log *slog.Logger, lvl slog.Level, outcome string, d time.Duration) {
	if outcome == "invalid" {
		var pe *ProtocolError
		errors.As(c.err, &pe)
		log.Info("call answered with a protocol error", "code", pe.Code, "duration_ms", d.Milliseconds())
		return
	}
	if c.err != nil && outcome != "canceled" {
		log.Log(ctx, lvl, "call finished", "outcome", outcome, "duration_ms", d.Milliseconds(), "err", c.err)
	} else {
		log.Log(ctx, lvl, "call finished", "outcome", outcome, "duration_ms", d.Milliseconds())
	}
}

var errPanic = errors.New("front: backend panicked")

// toResult converts the backend's answer into a tool result and an outcome
// label for metrics.
func (f *front) toResult(ctx context.Context, rid string, raw json.RawMessage, err error, log func() *slog.Logger) (*mcp.CallToolResult, string) {
	if err != nil {
		var te *ToolError
		switch {
		case errors.As(err, &te):
			return errorResult(te.Error()), "tool_error"
		case f.hard.Err() != nil && ctx.Err() != nil:
			return errorResult("The gateway shut down before this call finished (request " + rid + "); it was cancelled. Retry once the gateway is back."), "canceled"
		case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
			return nil, "canceled"
		case errors.Is(err, context.DeadlineExceeded):
			return errorResult("The call timed out (request " + rid + "). Try again, or with a smaller request."), "timeout"
		default:
			return errorResult("The gateway failed to run this call (request " + rid + "); details are in the gateway log."), "error"
		}
	}
	res, derr := decodeToolResult(raw)
	if derr != nil {
		log().Error("backend returned a malformed tool result", "err", derr, "bytes", len(raw))
		return errorResult("The gateway produced a malformed result (request " + rid + "); details are in the gateway log."), "error"
	}
	if res.IsError {
		return res, "tool_error"
	}
	return res, "ok"
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}
}

// decodeToolResult turns a raw CallToolResult object into the SDK type,
// keeping structuredContent verbatim (no float64 round trip).
func decodeToolResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	if len(raw) == 0 {
		return nil, errors.New("empty result")
	}
	raw = stripProtocolFields(raw)
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, err
	}
	var sc struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &sc); err != nil {
		return nil, err
	}
	if len(sc.StructuredContent) > 0 && string(sc.StructuredContent) != "null" {
		res.StructuredContent = sc.StructuredContent
	} else {
		res.StructuredContent = nil
	}
	if res.Content == nil && len(res.InputRequests) == 0 {
		res.Content = []mcp.Content{}
	}
	return &res, nil
}

// reservedMetaPrefix marks the _meta keys the protocol reserves for itself.
const reservedMetaPrefix = "io.modelcontextprotocol/"

// stripProtocolFields removes from an upstream result what belongs to the
// upstream hop's protocol era, not to the content: resultType and the
// reserved io.modelcontextprotocol/* _meta keys (serverInfo, protocol
// version ...). Passing them through would tell a legacy agent about a
// modern server's wire (a "resultType":"complete" it never asked for) or
// hand a modern agent the upstream's serverInfo as if it were ours; the SDK
// re-adds what the agent's own era needs (resultType for a 2026-07-28
// session, derived from inputRequests). Other _meta keys stay. raw is
// returned unchanged when it holds neither, or is not a JSON object.
func stripProtocolFields(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte(`"resultType"`)) && !bytes.Contains(raw, []byte(reservedMetaPrefix)) {
		return raw
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return raw
	}
	changed := false
	if _, ok := top["resultType"]; ok {
		delete(top, "resultType")
		changed = true
	}
	if m, ok := top["_meta"]; ok {
		var meta map[string]json.RawMessage
		if json.Unmarshal(m, &meta) == nil {
			for k := range meta {
				if strings.HasPrefix(k, reservedMetaPrefix) {
					delete(meta, k)
					changed = true
				}
			}
			if len(meta) == 0 {
				delete(top, "_meta")
			} else if b, err := json.Marshal(meta); err == nil {
				top["_meta"] = b
			}
		}
	}
	if !changed {
		return raw
	}
	out, err := json.Marshal(top)
	if err != nil {
		return raw
	}
	return out
}

// decodeArgs decodes a tool's argument object strictly: unknown fields
// and wrong types are tool errors the model can correct.
func decodeArgs(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &ToolError{Message: "Invalid arguments: " + err.Error() + ".", Remedy: "check the argument schema of this tool and call it again."}
	}
	return nil
}

// ---------------------------------------------------------------------------
// In-flight tracking

// inflight counts running calls so shutdown can wait for them. After
// closeAdmission, add refuses new calls.
type inflight struct {
	mu     sync.Mutex
	n      int
	closed bool
	zero   chan struct{} // closed when n drops to 0 after closeAdmission
	// calls are the in-flight calls added with their cancel (addCancel),
	// cancelled by cancelAll; hard is set once cancelAll ran.
	calls *hardLink
	hard  bool
}

// hardLink is a call's entry in inflight.calls, held by the call itself
// (no allocation per call).
type hardLink struct {
	cancel     context.CancelFunc
	prev, next *hardLink
	linked     bool
}

// addCancel is add for a call that a hard shutdown cancels through l
// (l.cancel set): what a registration with front.hard did, on the lock
// add takes anyway. After cancelAll, l.cancel runs at once.
func (t *inflight) addCancel(l *hardLink) bool {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return false
	}
	t.n++
	if t.hard {
		t.mu.Unlock()
		l.cancel()
		return true
	}
	l.prev, l.next, l.linked = nil, t.calls, true
	if t.calls != nil {
		t.calls.prev = l
	}
	t.calls = l
	t.mu.Unlock()
	return true
}

// doneCancel is done for a call added with addCancel.
func (t *inflight) doneCancel(l *hardLink) {
	t.mu.Lock()
	if l.linked {
		if l.prev != nil {
			l.prev.next = l.next
		} else {
			t.calls = l.next
		}
		if l.next != nil {
			l.next.prev = l.prev
		}
		l.prev, l.next, l.linked = nil, nil, false
	}
	t.mu.Unlock()
	t.done()
}

// cancelAll cancels every call added with addCancel, and every one added
// from now on.
func (t *inflight) cancelAll() {
	t.mu.Lock()
	t.hard = true
	var cancels []context.CancelFunc
	for l := t.calls; l != nil; l = l.next {
		cancels = append(cancels, l.cancel)
	}
	t.mu.Unlock()
	for _, c := range cancels {
		c()
	}
}

func (t *inflight) add() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.n++
	return true
}

func (t *inflight) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 && t.zero != nil {
		close(t.zero)
		t.zero = nil
	}
}

// drained stops admission and returns a channel closed when no call runs.
func (t *inflight) drained() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	ch := make(chan struct{})
	if t.n == 0 {
		close(ch)
		return ch
	}
	if t.zero == nil {
		t.zero = ch
		return ch
	}
	return t.zero
}

// drain waits up to bound for in-flight calls, then cancels what is left
// and waits (briefly) for those to return.
func (f *front) drain(bound time.Duration) {
	ch := f.inflight.drained()
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
		f.log.Warn("drain bound reached; cancelling in-flight calls", "bound", bound.String())
		f.stopHard()
		select {
		case <-ch:
		case <-time.After(2 * time.Second):
			f.log.Error("calls still running after cancellation; closing anyway")
		}
	}
	f.stopHard()
}

// stopHard cancels every call: those whose contexts derive from f.hard,
// and the in-flight ones registered with f.inflight instead.
func (f *front) stopHard() {
	f.cancelHard()
	f.inflight.cancelAll()
}

// ---------------------------------------------------------------------------
// Events

func (f *front) onEvent(ev Event) {
	if ev.Kind == EventLog {
		// Decided now, not when the event loop gets to it: a session that
		// opens or closes in between must not change who hears it.
		n := 0
		for ss := range f.srv.Sessions() {
			ev.to = ss
			n++
		}
		if n != 1 {
			f.log.Debug("dropped an upstream log message no request claims: several sessions are open", "server", ev.Server, "sessions", n)
			return
		}
	}
	f.pendMu.Lock()
	if ev.Kind == EventLog || ev.Kind == EventResourceUpdated {
		if len(f.pendLogs) < 256 { // bounded: a flood drops the excess
			ev.Params = append(json.RawMessage(nil), ev.Params...)
			f.pendLogs = append(f.pendLogs, ev)
		}
	} else {
		f.pending[ev.Kind] = true
	}
	f.pendMu.Unlock()
	select {
	case f.events <- struct{}{}:
	default:
	}
}

func (f *front) eventLoop() {
	defer close(f.loopDone)
	for {
		select {
		case <-f.quit:
			return
		case <-f.events:
		}
		f.pendMu.Lock()
		kinds := f.pending
		logs := f.pendLogs
		f.pending = map[EventKind]bool{}
		f.pendLogs = nil
		f.pendMu.Unlock()
		f.safely("event handling", func() { f.handleEvents(kinds, logs) })
	}
}

// safely runs fn, logging instead of crashing on a panic: a backend bug
// must not take the process (and the agent's session) down.
func (f *front) safely(what string, fn func()) {
	defer func() {
		if p := recover(); p != nil {
			f.log.Error("panic during "+what, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	fn()
}

func (f *front) handleEvents(kinds map[EventKind]bool, logs []Event) {
	ctx, cancel := context.WithTimeout(f.hard, f.opts.RefreshTimeout)
	defer cancel()
	if kinds[EventFeaturesChanged] {
		feat := f.b.Features() // never call the backend under f.mu
		f.mu.Lock()
		f.features = feat
		f.mu.Unlock()
		f.syncGatewayTools()
	}
	if kinds[EventToolsChanged] || kinds[EventFeaturesChanged] {
		f.syncTools(ctx) // may switch ModeAuto's surface
	}
	if f.flatNow.Load() {
		if kinds[EventResourcesChanged] {
			f.syncFlat(ctx, KindResources)
			f.syncFlat(ctx, KindResourceTemplates)
		}
		if kinds[EventPromptsChanged] {
			f.syncFlat(ctx, KindPrompts)
		}
	}
	for _, ev := range logs {
		f.forwardEvent(ctx, ev)
	}
}

// sdkLogger passes the SDK's own logs through at Warn and above: at Info
// it logs every connection, which for stateless HTTP is every request.
func sdkLogger(l *slog.Logger, component string) *slog.Logger {
	return slog.New(minLevel{l.Handler(), slog.LevelWarn}).With("component", component)
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(a), h.min}
}

func (h minLevel) WithGroup(n string) slog.Handler { return minLevel{h.Handler.WithGroup(n), h.min} }

// forwardEvent passes an upstream log message or resource update to the
// sessions that asked for it.
func (f *front) forwardEvent(ctx context.Context, ev Event) {
	switch ev.Kind {
	case EventResourceUpdated:
		var p mcp.ResourceUpdatedNotificationParams
		if err := json.Unmarshal(ev.Params, &p); err != nil || p.URI == "" {
			f.log.Warn("dropping malformed resource update", "server", ev.Server)
			return
		}
		if err := f.srv.ResourceUpdated(ctx, &p); err != nil {
			f.log.Debug("forwarding resource update failed", "err", err)
		}
	case EventLog:
		var p mcp.LoggingMessageParams
		if err := json.Unmarshal(ev.Params, &p); err != nil || p.Level == "" {
			f.log.Warn("dropping malformed upstream log message", "server", ev.Server)
			return
		}
		var data struct {
			Data json.RawMessage `json:"data"`
		}
		_ = json.Unmarshal(ev.Params, &data)
		p.Data = data.Data
		if ev.Server != "" {
			if p.Logger == "" {
				p.Logger = ev.Server
			} else {
				p.Logger = ev.Server + "/" + p.Logger
			}
		}
		// A message no request claims goes to the one session that was
		// open when it arrived (onEvent), if that session still is.
		_ = ev.to.Log(ctx, &p)
	}
}
