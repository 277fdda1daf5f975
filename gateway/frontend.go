package gateway

// This file is the gateway as front.Backend: what 'sluice serve' hands to
// the MCP server surface. It maps gateway calls, errors and upstream traffic
// onto the agent's request (its front.Peer) and the front's events.
// Traffic a server starts on its own is routed in upstreamtraffic.go;
// Serve (serve.go) runs the whole process.
//
// # Why flat mode launches servers that have no recorded catalog
//
// A flat-mode agent sees tools only if the gateway knows them when it asks
// for tools/list. Servers with a recorded catalog are listed from it and
// launch on their first call; Prepare launches, once at serve start, the
// trusted servers that have no catalog yet (exactly what 'sluice find
// --server ID --refresh' would do). Resources and prompts are listed from
// the servers running at the time (a launch announces itself, so they
// appear then); untrusted project servers are never listed or launched.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"sluice/gateway/admin"
	"sluice/gateway/catalog"
	"sluice/gateway/front"
	"sluice/gateway/mcp"
	"sluice/gateway/trace"
	"sluice/sandbox"
)

// DefaultFindLimit caps a find that names no limit (a model's find
// answer stays short).
const DefaultFindLimit = 50

// frontendOptions configures a frontend; nil means defaults.
type frontendOptions struct {
	// Flat: the front serves every capability as its own tool; Prepare
	// then launches trusted servers that have no recorded catalog.
	Flat bool
	// Metrics receives server states and filter and sandbox outcomes
	// (front counts the calls itself). nil: none.
	Metrics *front.Metrics
	// FindLimit caps a find without a limit; default DefaultFindLimit.
	FindLimit int
	// Server, with Flat, serves that one server alone ("" = every
	// trusted server): `sluice serve --server ID`.
	Server string
	// Expose adds capability globs to the configured expose lists
	// (`sluice serve --expose`); see expose.go.
	Expose []string
}

// frontend adapts a Gateway to front.Backend. Create it with newFrontend
// before the first call (it installs the upstream hooks), and let the front
// close it.
type frontend struct {
	g    *Gateway
	o    frontendOptions
	log  *slog.Logger
	stop func()
	// stopWatch ends watchBaselines (closed by Close).
	stopWatch chan struct{}

	mu       sync.Mutex
	subs     map[int]func(front.Event)
	nextSub  int
	active   map[string]map[uint64]front.Peer // server -> requests in flight
	seq      uint64
	logLevel string
	closed   bool
	closeErr error
	statesAt time.Time // last updateStates
	// exposeIdle is the last set of expose globs that matched nothing
	// (logged when it changes).
	exposeIdle string
	// redactedURIs maps, per server, a resource uri as listed (redacted)
	// to the one the server knows, for the resources whose listing the
	// redaction changed (List, ReadResource).
	redactedURIs map[string]map[string]string
	// redactedTemplates holds, per server, the spans of resource
	// templates the redaction changed (rememberRedactedTemplates).
	redactedTemplates map[string][]templateSpan
}

var _ front.Backend = (*frontend)(nil)

// newFrontend wraps g. It installs g's upstream hooks and follows its
// capability changes.
func newFrontend(g *Gateway, o *frontendOptions) *frontend {
	f := &frontend{g: g, log: g.log, subs: map[int]func(front.Event){}, active: map[string]map[uint64]front.Peer{}}
	if o != nil {
		f.o = *o
	}
	if f.o.FindLimit <= 0 {
		f.o.FindLimit = DefaultFindLimit
	}
	if m := f.o.Metrics; m != nil {
		g.SetFilterObserver(m.FilterOutcome)
	}
	g.setUpstreamHooks(upstreamHooks{
		Notify:       f.upstreamNotify,
		Request:      f.upstreamRequest,
		Capabilities: json.RawMessage(upstreamCapabilities),
	})
	f.stop = g.Subscribe(func() {
		// A launch or a relist: the flat tool list and the running set
		// (resources, prompts) may have changed.
		f.emit(front.Event{Kind: front.EventToolsChanged})
		f.emit(front.Event{Kind: front.EventResourcesChanged})
		f.emit(front.Event{Kind: front.EventPromptsChanged})
		go f.updateStates()
		f.mu.Lock()
		level := f.logLevel
		f.mu.Unlock()
		if level != "" {
			// A server launched after the agent chose a level gets it too.
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := f.SetLogLevel(ctx, level); err != nil {
					f.log.Info("logging/setLevel upstream failed", "error", err.Error())
				}
			}()
		}
	})
	f.stopWatch = make(chan struct{})
	go f.g.watchBaselines(f.stopWatch)
	go f.watchDeclarations(f.stopWatch)
	f.updateStates()
	return f
}

// views are the servers this front serves: all, or frontendOptions.Server.
func (f *frontend) views() []ServerView {
	all := f.g.Servers().Servers
	if f.o.Server == "" {
		return all
	}
	for _, v := range all {
		if v.ID == f.o.Server {
			return []ServerView{v}
		}
	}
	return nil
}

// Prepare readies the gateway for serving. In flat mode it launches, in
// parallel and bounded by ctx, every trusted server without a recorded
// catalog and records it (in gateway mode, those an expose glob may
// name); failures are logged and the server is simply not listed. It
// never launches an untrusted server.
func (f *frontend) Prepare(ctx context.Context) {
	views := f.views()
	var rules []exposeRule
	if !f.o.Flat {
		// Gateway mode lists only exposed tools: launch the servers an
		// expose glob may name.
		rules = exposeRules(f.g.reload(), views, f.o.Expose)
		if len(rules) == 0 {
			return
		}
	}
	what := "flat mode"
	if !f.o.Flat {
		what = "expose"
	}
	var wg sync.WaitGroup
	for _, v := range views {
		if !v.Trusted() || (!f.o.Flat && !mayExpose(rules, v.ID)) || f.g.known(v).prov != ProvMissing {
			continue
		}
		wg.Add(1)
		go func(v ServerView) {
			defer wg.Done()
			if err := f.g.refresh(ctx, v); err != nil {
				f.log.Warn(what+": could not launch a server without a recorded catalog; its tools are not listed", "server", v.ID, "error", firstLine(err.Error(), 300))
				return
			}
			f.log.Info(what+": launched a server to record its catalog", "server", v.ID)
		}(v)
	}
	wg.Wait()
	f.updateStates()
}

// ---------------------------------------------------------------------------
// front.Backend

// Instructions summarizes the trusted servers' own instructions, from their
// recorded catalogs.
func (f *frontend) Instructions() string {
	var b strings.Builder
	for _, v := range f.views() {
		if !v.Trusted() {
			continue
		}
		c, err := catalog.Load(f.g.cacheDir, f.g.catalogIdentity(v.decl), nil)
		if err != nil {
			continue
		}
		// Model-facing text from the server, so held like its tools: a
		// changed text waits for review (the reviewed one is relayed).
		text := f.g.reviewedInstructions(v, c.Server.Instructions)
		if strings.TrimSpace(text) == "" {
			continue
		}
		// Upstream text in the agent's initialize answer: redacted like
		// everything else the server says, before it is cut (a cut
		// secret may no longer look like one).
		red, err := f.g.RedactText(context.Background(), Capability(v.ID, "instructions"), strings.Join(strings.Fields(text), " "))
		if err != nil {
			f.log.Warn("leaving out a server's instructions the redaction filters could not clear", "server", v.ID, "error", errMessage(err))
			continue
		}
		fmt.Fprintf(&b, "Server %s: %s\n", v.ID, firstLine(red, 400))
	}
	return b.String()
}

// Ready fails once the gateway is closed.
func (f *frontend) Ready(context.Context) error {
	f.g.mu.Lock()
	closed := f.g.closed
	f.g.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return nil
}

// Features: code mode and result paging are always available; tools are
// exposed when an expose glob is in force.
func (f *frontend) Features() front.Features {
	return front.Features{ReadResult: true, Execute: true, Expose: f.exposing()}
}

// Find searches the catalogs (never launching, except a scoped refresh).
func (f *frontend) Find(ctx context.Context, req front.FindRequest, p front.Peer) (_ json.RawMessage, err error) {
	ctx = withPeer(ctx, p)
	ctx, span := f.g.startRequest(ctx, p, "tools/call find", trace.Attr{Key: "mcp.method.name", Value: "tools/call"}, trace.Attr{Key: "gen_ai.tool.name", Value: "find"})
	defer func() { span.End(err) }()
	limit := req.Limit
	if limit <= 0 || limit > f.o.FindLimit {
		limit = f.o.FindLimit
	}
	res, err := f.g.Find(ctx, FindRequest{Query: req.Query, Server: req.Server, Refresh: req.Refresh, Limit: limit})
	if err != nil && res == nil {
		return nil, f.toFrontFor(ctx, FindCapability, err)
	}
	f.maybeUpdateStates()
	out := findAnswer{Tools: res.Tools, Servers: make([]FindServer, len(res.Servers)), More: res.More}
	for i, s := range res.Servers {
		s.Remedy = s.fix.For(SurfaceModel)
		out.Servers[i] = s
	}
	if res.More > 0 {
		out.Hint = fmt.Sprintf("%d more matches; narrow the query or pass a server", res.More)
	}
	var next []string
	if len(res.Tools) > 0 {
		next = append(next, "describe the capabilities you need, then call them")
	}
	for _, s := range res.Servers {
		if s.Remedy != "" && s.Provenance == ProvMissing && s.Trust == "trusted" {
			next = append(next, "servers without a catalog: find with {\"server\":ID,\"refresh\":true} lists their tools")
			break
		}
	}
	out.Next = strings.Join(next, "; ")
	return f.guard(ctx, FindCapability)(jsonToolResult(out, false))
}

// guard returns a function that runs a composed answer through the
// filters (redaction, the context budget with a handle for the rest).
func (f *frontend) guard(ctx context.Context, capability string) func(json.RawMessage, error) (json.RawMessage, error) {
	return func(out json.RawMessage, err error) (json.RawMessage, error) {
		if err != nil {
			return nil, err
		}
		g, err := f.g.GuardAnswer(ctx, capability, out)
		if err != nil {
			return nil, f.toFrontFor(ctx, capability, err)
		}
		return g, nil
	}
}

type findAnswer struct {
	Tools   []FindTool   `json:"tools"`
	Servers []FindServer `json:"servers"`
	More    int          `json:"more,omitempty"`
	Hint    string       `json:"hint,omitempty"`
	Next    string       `json:"next,omitempty"`
}

// Describe returns full metadata for each named capability; names that
// fail are reported beside the others. With a server instead, it returns
// that server's code-mode docs (Gateway.Docs).
func (f *frontend) Describe(ctx context.Context, req front.DescribeRequest, p front.Peer) (_ json.RawMessage, err error) {
	ctx = withPeer(ctx, p)
	ctx, span := f.g.startRequest(ctx, p, "tools/call describe", trace.Attr{Key: "mcp.method.name", Value: "tools/call"}, trace.Attr{Key: "gen_ai.tool.name", Value: "describe"})
	defer func() { span.End(err) }()
	if req.Server != "" {
		// One server's code-mode docs, as plain text (.pyi style).
		docs, err := f.g.Docs(ctx, req.Server)
		if err != nil {
			return nil, f.toFrontFor(ctx, DescribeCapability, err)
		}
		text, _ := json.Marshal(docs)
		return f.guard(ctx, DescribeCapability)(json.RawMessage(`{"content":[{"type":"text","text":`+string(text)+`}]}`), nil)
	}
	type failure struct {
		Capability string `json:"capability"`
		Error      string `json:"error"`
		Remedy     string `json:"remedy,omitempty"`
	}
	var out struct {
		Capabilities []*ToolDetail `json:"capabilities"`
		Errors       []failure     `json:"errors,omitempty"`
	}
	out.Capabilities = []*ToolDetail{}
	for _, name := range req.Capabilities {
		d, err := f.g.Describe(ctx, name)
		if err != nil {
			fl := failure{Capability: name, Error: err.Error()}
			var ge *Error
			if errors.As(err, &ge) {
				fl.Error, fl.Remedy = ge.Message, ge.Remedy.For(SurfaceModel)
			}
			out.Errors = append(out.Errors, fl)
			continue
		}
		out.Capabilities = append(out.Capabilities, d)
	}
	if len(out.Capabilities) == 0 && len(out.Errors) == 1 {
		return nil, f.redactToolError(ctx, DescribeCapability, &front.ToolError{Message: out.Errors[0].Error, Remedy: out.Errors[0].Remedy})
	}
	return f.guard(ctx, DescribeCapability)(jsonToolResult(out, len(out.Capabilities) == 0))
}

// Call runs one capability for the agent: approvals are asked through
// elicitation, progress and upstream traffic go to the agent's request, a
// 2026-07-28 input_required result is relayed as is and its retry sent
// back upstream.
func (f *frontend) Call(ctx context.Context, req front.CallRequest, p front.Peer) (_ json.RawMessage, err error) {
	var ac *agentCallCtx
	if p == nil {
		ctx = mcp.WithExtras(ctx, f.extras(req, p))
	} else {
		ac = newAgentCall(ctx, p, f.extras(req, p))
		ac.f = f
		ctx = ac
	}
	if f.g.tracer != nil {
		var span *trace.Span
		ctx, span = f.g.startRequest(ctx, p, "tools/call "+req.Capability, trace.Attr{Key: "mcp.method.name", Value: "tools/call"}, trace.Attr{Key: "gen_ai.tool.name", Value: req.Capability}, trace.Attr{Key: "gen_ai.operation.name", Value: "execute_tool"})
		defer func() { span.End(err) }()
	}
	server, _, _ := SplitCapability(req.Capability)
	if p != nil {
		k := f.trackKey(server, p)
		defer f.untrack(server, k)
	}
	cr := CallRequest{Capability: req.Capability, Arguments: req.Arguments}
	if p != nil {
		if front.ProgressWanted(p) {
			// Without it the upstream request carries no progressToken:
			// no progress would reach an agent that asked for none.
			cr.OnProgress = f.progressTo(ctx, p, req.Capability)
		}
		cr.asker = ac // asks p (askApproval)
	}
	res, err := f.g.Call(ctx, cr)
	f.maybeUpdateStates()
	if err != nil {
		return nil, f.toFrontFor(ctx, req.Capability, err)
	}
	out := res.Result
	front.LoanOf(ctx).Lend(res) // the front gives it back once its answer is encoded
	return out, nil
}

// extras is what the upstream request carries for this agent.
func (f *frontend) extras(req front.CallRequest, p front.Peer) mcp.Extras {
	x := mcp.Extras{Method: "tools/call", InputRequired: true, Ordered: true}
	if p != nil {
		x.ClientCapabilities = p.ClientCapabilities()
	}
	if len(req.InputResponses) > 0 || req.RequestState != "" {
		m := map[string]json.RawMessage{}
		if len(req.InputResponses) > 0 {
			m["inputResponses"] = req.InputResponses
		}
		if req.RequestState != "" {
			m["requestState"], _ = json.Marshal(req.RequestState)
		}
		x.Params, _ = json.Marshal(m)
	}
	x.Meta = f.levelMeta()
	return x
}

func (f *frontend) levelMeta() json.RawMessage {
	f.mu.Lock()
	level := f.logLevel
	f.mu.Unlock()
	if level == "" {
		return nil
	}
	b, _ := json.Marshal(map[string]string{"io.modelcontextprotocol/logLevel": level})
	return b
}

// maxProgressMessage caps a relayed progress message.
const maxProgressMessage = 1024

// progressTo maps upstream progress params onto the agent's request; the
// message is redacted (dropped if that fails) and capped.
func (f *frontend) progressTo(ctx context.Context, p front.Peer, capability string) func(json.RawMessage) {
	return func(params json.RawMessage) {
		var n struct {
			Progress float64 `json:"progress"`
			Total    float64 `json:"total"`
			Message  string  `json:"message"`
		}
		if json.Unmarshal(params, &n) != nil {
			return
		}
		msg, err := f.g.RedactText(ctx, capability, n.Message)
		if err != nil {
			msg = "" // the progress still counts; its text is withheld
		}
		if len(msg) > maxProgressMessage {
			msg = truncate(msg, maxProgressMessage)
		}
		_ = p.Progress(ctx, n.Progress, n.Total, msg)
	}
}

// askApproval asks p's agent's user by elicitation to approve one call. A
// client that cannot be asked waits for a decision in the dashboard, when
// one is served (bounded); otherwise the call is refused at once (the
// refusal names the remedy). Every decision is audited.
func (f *frontend) askApproval(ctx context.Context, p front.Peer, r ApprovalRequest) (bool, error) {
	if p.Supports("elicitation") {
		msg := fmt.Sprintf("Allow sluice to run %s (action class %s)? Arguments: %s", r.Capability, r.Class, approvalArguments(r.Arguments))
		ok, err := p.Elicit(ctx, msg, nil)
		if err == nil {
			f.g.audit(admin.Decision{Kind: "call", Capabilities: []string{r.Capability}, RequestID: p.RequestID(), Via: "elicitation", Approved: ok})
			return ok, nil
		}
		if !errors.Is(err, front.ErrUnsupported) {
			return false, err
		}
	}
	return f.g.askDashboard(ctx, admin.ApprovalRequest{Kind: "call", Capabilities: []string{r.Capability}, Class: r.Class, Reason: r.Reason,
		Arguments: string(r.Arguments), RequestID: p.RequestID()})
}

// approvalShown is how many bytes of a call's arguments an elicitation
// shows; the dashboard's approval card shows them whole.
const approvalShown = 4096

// approvalArguments is a call's arguments as an elicitation shows them to
// the person approving it.
//
// # Why escapes and a count of what is not shown
//
// The model writes the arguments, and a prompt-injected model would like
// its "yes" to cover more than the person read. So the JSON is compacted
// (its own whitespace cannot push the rest off the screen), characters
// that make text read differently from what it is (controls, bidi
// overrides, zero-width and other invisible format characters, line
// separators) show as escapes, and arguments longer than approvalShown
// are cut with the number of bytes not shown and where to see them all,
// instead of a bare ellipsis after the first line.
func approvalArguments(raw json.RawMessage) string {
	var c bytes.Buffer
	text := string(raw)
	if json.Compact(&c, raw) == nil {
		text = c.String()
	}
	text = admin.Visible(text)
	if len(text) <= approvalShown {
		return text
	}
	cut := approvalShown
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return fmt.Sprintf("%s … [%d more bytes are NOT shown here, and approving allows them too; decline, and approve it in sluice's dashboard (sluice serve --admin ADDR), which shows the arguments whole]", text[:cut], len(text)-cut)
}

// scriptApprover asks for a script's whole set of capabilities that need
// approval, the same way as approver.
func (f *frontend) scriptApprover(p front.Peer) func(context.Context, ScriptApproval) (bool, error) {
	return func(ctx context.Context, a ScriptApproval) (bool, error) {
		if p.Supports("elicitation") {
			var list []string
			for _, c := range a.Capabilities {
				list = append(list, c+" ("+a.Classes[c]+")")
			}
			msg := fmt.Sprintf("Allow a sluice script (sha256 %s) to call %s? Only these calls are approved, for this script only.", a.Digest[:16], strings.Join(list, ", "))
			ok, err := p.Elicit(ctx, msg, nil)
			if err == nil {
				f.g.audit(admin.Decision{Kind: "script", Capabilities: a.Capabilities, Digest: a.Digest, RequestID: p.RequestID(), Via: "elicitation", Approved: ok})
				return ok, nil
			}
			if !errors.Is(err, front.ErrUnsupported) {
				return false, err
			}
		}
		return f.g.askDashboard(ctx, admin.ApprovalRequest{Kind: "script", Capabilities: a.Capabilities, Script: a.Script, Digest: a.Digest, RequestID: p.RequestID(),
			Reason: "the script names these capabilities, which need approval"})
	}
}

// ReadResult pages a stored result. A page is held to the context budget:
// a longer (or, once encoded, larger) one is shortened and the note says
// where to continue.
func (f *frontend) ReadResult(ctx context.Context, req front.ReadResultRequest, p front.Peer) (json.RawMessage, error) {
	ctx = withPeer(ctx, p)
	h := req.Handle
	if h == "" {
		h = req.Ref
	}
	budget := int64(f.g.Budget())
	length := req.Length
	if room := budget - readResultOverhead; length <= 0 || length > room {
		length = room
	}
	for {
		page, err := f.g.ReadResult(h, req.Offset, length)
		if err != nil {
			return nil, f.toFrontFor(ctx, ReadResultCapability, err)
		}
		out, err := readResultAnswer(page)
		if err != nil || int64(len(out)) <= budget || length <= 64 {
			return out, err
		}
		// Escapes made it larger than its bytes: take fewer.
		length = max(64, length*(budget-readResultOverhead)/int64(len(out)))
	}
}

// readResultOverhead is room kept for read_result's note and metadata.
const readResultOverhead = 1024

func readResultAnswer(page *ResultPage) (json.RawMessage, error) {
	note := fmt.Sprintf("[bytes %d-%d of %d; end of result]", page.Offset, page.Offset+page.Length, page.Total)
	if !page.EOF {
		note = fmt.Sprintf("[bytes %d-%d of %d; continue with {\"handle\":%q,\"offset\":%d}]", page.Offset, page.Offset+page.Length, page.Total, page.Handle, page.Next)
	}
	pj, err := json.Marshal(page)
	if err != nil {
		return nil, err
	}
	var meta map[string]json.RawMessage
	_ = json.Unmarshal(pj, &meta)
	data := meta["data"]
	delete(meta, "data")
	mj, _ := json.Marshal(meta)
	nj, _ := json.Marshal(note)
	var b bytes.Buffer
	b.WriteString(`{"content":[{"type":"text","text":`)
	b.Write(data)
	b.WriteString(`},{"type":"text","text":`)
	b.Write(nj)
	b.WriteString(`}],"structuredContent":`)
	b.Write(mj)
	b.WriteString(`}`)
	return b.Bytes(), nil
}

// ExecuteFilename names the script of the "execute" tool in positions and
// backtraces.
const ExecuteFilename = "execute.star"

// Execute runs a code-mode script.
func (f *frontend) Execute(ctx context.Context, req front.ExecuteRequest, p front.Peer) (_ json.RawMessage, err error) {
	ctx = withPeer(ctx, p)
	ctx, span := f.g.startRequest(ctx, p, "tools/call execute", trace.Attr{Key: "mcp.method.name", Value: "tools/call"}, trace.Attr{Key: "gen_ai.tool.name", Value: "execute"}, trace.Attr{Key: "gen_ai.operation.name", Value: "execute_tool"})
	defer func() { span.End(err) }()
	ctx = withCaller(ctx, f, p) // the script's calls are this agent's
	er := ExecuteRequest{Script: req.Script, Filename: ExecuteFilename, ForModel: true}
	if p != nil {
		er.Approve = f.scriptApprover(p)
	}
	if req.TimeoutMs > 0 {
		// Execute takes the smaller of this and sandbox.timeoutMs.
		er.Timeout = time.Duration(min(req.TimeoutMs, int64(math.MaxInt64/int64(time.Millisecond)))) * time.Millisecond
	}
	res, err := f.g.Execute(ctx, er)
	f.maybeUpdateStates()
	if err != nil {
		return nil, f.toFrontFor(ctx, ExecuteCapability, err)
	}
	f.o.Metrics.SandboxOutcome(sandboxOutcome(res.Error))
	// Logs, errors and call summaries as well as the value: all of it
	// is redacted and held to the budget.
	return f.guard(ctx, ExecuteCapability)(res.ToolResult())
}

func sandboxOutcome(e *RunError) string {
	if e == nil {
		return "ok"
	}
	switch e.Kind {
	case RunCancelled:
		return "canceled"
	case RunLimit:
		switch e.Limit {
		case sandbox.LimitTime:
			return "timeout"
		case sandbox.LimitSteps, sandbox.LimitCalls, sandbox.LimitMemory:
			return e.Limit
		case sandbox.LimitOutputBytes:
			return "output"
		}
	}
	return "error"
}

// List returns the trusted servers' items of one kind (flat mode).
func (f *frontend) List(ctx context.Context, kind front.Kind) ([]front.Item, error) {
	var items []front.Item
	views := f.views()
	if kind == front.KindTools {
		var trusted []ServerView
		var marks []frontItem
		for _, v := range views {
			if !v.Trusted() {
				continue
			}
			trusted = append(trusted, v)
			for _, t := range f.g.known(v).tools {
				items = append(items, front.Item{Server: v.ID, Raw: t.raw})
				marks = append(marks, frontItem{server: v.ID, tool: t.Name})
			}
		}
		f.markExposed(marks, exposeRules(f.g.reload(), trusted, f.o.Expose))
		for i := range items {
			items[i].Expose = marks[i].expose
		}
		red, _ := f.redactItems(ctx, items, func(i int) string { return Capability(marks[i].server, marks[i].tool) })
		return red, nil
	}
	method, field, capName := "", "", ""
	switch kind {
	case front.KindResources:
		method, field, capName = "resources/list", "resources", "resources"
	case front.KindResourceTemplates:
		method, field, capName = "resources/templates/list", "resourceTemplates", "resources"
	case front.KindPrompts:
		method, field, capName = "prompts/list", "prompts", "prompts"
	default:
		return nil, fmt.Errorf("unknown kind %q", kind)
	}
	for _, v := range views {
		if !v.Trusted() {
			continue
		}
		l := f.g.running(v)
		if l == nil {
			continue
		}
		c := l.Client()
		if topMember(c.ServerInfo().Capabilities, capName) == nil {
			l.Release(true)
			continue
		}
		got, _, err := c.List(ctx, method, field)
		l.Release(err == nil)
		if err != nil {
			f.log.Warn("flat mode: listing failed", "server", v.ID, "method", method, "error", err.Error())
			continue
		}
		for _, raw := range got {
			items = append(items, front.Item{Server: v.ID, Raw: raw})
		}
	}
	red, from := f.redactItems(ctx, items, func(i int) string { return Capability(items[i].Server, method) })
	switch kind {
	case front.KindResources:
		f.rememberRedactedURIs(items, red, from)
	case front.KindResourceTemplates:
		f.rememberRedactedTemplates(items, red, from)
	}
	return red, nil
}

// rememberRedactedURIs records, for each resource whose uri the redaction
// changed, the uri the server knows it by: the agent reads what it was
// listed, and the server is asked for its own. from[i] is the index in
// before of after[i].
func (f *frontend) rememberRedactedURIs(before, after []front.Item, from []int) {
	uri := func(raw json.RawMessage) string {
		var h struct {
			URI string `json:"uri"`
		}
		_ = json.Unmarshal(raw, &h)
		return h.URI
	}
	m := map[string]map[string]string{}
	for i, it := range after {
		orig, listed := uri(before[from[i]].Raw), uri(it.Raw)
		if orig == listed || listed == "" {
			continue
		}
		if m[it.Server] == nil {
			m[it.Server] = map[string]string{}
		}
		m[it.Server][listed] = orig
	}
	f.mu.Lock()
	f.redactedURIs = m
	f.mu.Unlock()
}

// templateSpan is the part of a resource template the redaction changed:
// listed is what the agent saw, orig what the server wrote. A span is
// mapped back only at the start of a uri expanded from its template:
// prefix is the listed template up to the span's end, with no expression
// in it. Anywhere else, the agent could have the server's own secret put
// into a uri of its choosing and sent off by a server that fetches what
// it is asked for.
type templateSpan struct{ prefix, listed, orig string }

// rememberRedactedTemplates records, for each resource template whose
// uriTemplate the redaction changed, the changed span (between the common
// prefix and suffix of the two forms): the agent expands the template as
// listed, and the server is asked for the uri with its own span back.
func (f *frontend) rememberRedactedTemplates(before, after []front.Item, from []int) {
	tmpl := func(raw json.RawMessage) string {
		var h struct {
			URITemplate string `json:"uriTemplate"`
		}
		_ = json.Unmarshal(raw, &h)
		return h.URITemplate
	}
	m := map[string][]templateSpan{}
	for i, it := range after {
		orig, listed := tmpl(before[from[i]].Raw), tmpl(it.Raw)
		if orig == listed || listed == "" {
			continue
		}
		p := 0
		for p < len(orig) && p < len(listed) && orig[p] == listed[p] {
			p++
		}
		q := 0
		for q < len(orig)-p && q < len(listed)-p && orig[len(orig)-1-q] == listed[len(listed)-1-q] {
			q++
		}
		span := templateSpan{prefix: listed[:len(listed)-q], listed: listed[p : len(listed)-q], orig: orig[p : len(orig)-q]}
		if span.listed == "" || strings.ContainsAny(span.prefix, "{}") {
			continue // after or inside an expression: not mapped back
		}
		m[it.Server] = append(m[it.Server], span)
	}
	f.mu.Lock()
	f.redactedTemplates = m
	f.mu.Unlock()
}

// upstreamURI returns the uri server knows the resource listed as uri by:
// a resource listed under a redacted uri, or a uri expanded from a
// template listed redacted.
func (f *frontend) upstreamURI(server, uri string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if orig, ok := f.redactedURIs[server][uri]; ok {
		return orig, true
	}
	for _, sp := range f.redactedTemplates[server] {
		if rest, ok := strings.CutPrefix(uri, sp.prefix); ok {
			return sp.prefix[:len(sp.prefix)-len(sp.listed)] + sp.orig + rest, true
		}
	}
	return "", false
}

// redactItems runs every listed item through the redaction filters of
// capability(i) (the tool's capability; SERVER__METHOD for resources and
// prompts, as forward names their reads): what the front registers is
// listed to agents as is. An item a fail-closed filter cannot clear is
// left out, never listed unredacted.
// It also returns, for each item kept, its index in items.
func (f *frontend) redactItems(ctx context.Context, items []front.Item, capability func(i int) string) ([]front.Item, []int) {
	out := items[:0:0]
	var from []int
	for i, it := range items {
		raw, err := f.g.RedactJSON(ctx, capability(i), it.Raw)
		if err != nil {
			f.log.Warn("leaving out a listed item the redaction filters could not clear", "server", it.Server, "capability", capability(i), "error", errMessage(err))
			continue
		}
		it.Raw = raw
		out = append(out, it)
		from = append(from, i)
	}
	return out, from
}

// forward sends one request to a trusted server, launching it if needed.
func (f *frontend) forward(ctx context.Context, server, method string, params json.RawMessage, p front.Peer) (json.RawMessage, error) {
	ctx = withPeer(ctx, p)
	v, err := f.g.callServer(server)
	if err != nil {
		return nil, f.toFront(ctx, err)
	}
	if !v.Trusted() {
		return nil, f.toFront(ctx, untrustedErr(v))
	}
	l, err := f.g.lease(ctx, v.decl)
	if err != nil {
		return nil, f.toFront(ctx, err)
	}
	ok := false
	defer func() { l.Release(ok) }()
	done := f.track(server, p)
	defer done()
	x := mcp.Extras{Meta: f.levelMeta(), InputRequired: true, Ordered: true}
	if p != nil {
		x.ClientCapabilities = p.ClientCapabilities()
	}
	res, err := l.Client().Request(mcp.WithExtras(ctx, x), method, params, &mcp.CallOptions{Timeout: l.Timeout("", 0)})
	capability := server + "__" + method
	if err != nil {
		return nil, f.toFrontFor(ctx, capability, upstreamErr(server, method, err))
	}
	ok = true
	// Relayed as is, but redacted first.
	red, err := f.g.RedactJSON(ctx, capability, res)
	if err != nil {
		return nil, f.toFrontFor(ctx, capability, err)
	}
	return red, nil
}

// ReadResource forwards resources/read to the owning server; with no
// server it reads a stored result (sluice://results/<handle>[?offset=N]),
// one page within the context budget, naming the next page's URI.
func (f *frontend) ReadResource(ctx context.Context, server string, params json.RawMessage, p front.Peer) (json.RawMessage, error) {
	if server != "" {
		// A resource listed under a redacted uri is read by its own.
		var m map[string]json.RawMessage
		if json.Unmarshal(params, &m) == nil {
			var uri string
			if json.Unmarshal(m["uri"], &uri) == nil {
				if orig, ok := f.upstreamURI(server, uri); ok {
					m["uri"], _ = json.Marshal(orig)
					params, _ = json.Marshal(m)
				}
			}
		}
		return f.forward(ctx, server, "resources/read", params, p)
	}
	var rp struct {
		URI string `json:"uri"`
	}
	_ = json.Unmarshal(params, &rp)
	rest, ok := strings.CutPrefix(rp.URI, ResultURIPrefix)
	if !ok {
		return nil, &front.ToolError{Message: "no such resource: " + truncate(rp.URI, 200), Remedy: "read a uri from a resource_link of a shortened result"}
	}
	handle, query, _ := strings.Cut(rest, "?")
	var offset int64
	if v, ok := strings.CutPrefix(query, "offset="); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, &front.ToolError{Message: "offset in " + truncate(rp.URI, 200) + " is not a non-negative integer", Remedy: "use the uri a page names as next"}
		}
		offset = n
	}
	page, err := f.g.ReadResult(handle, offset, int64(f.g.Budget()-readResultOverhead))
	if err != nil {
		return nil, f.toFrontFor(ctx, ReadResultCapability, err)
	}
	content := map[string]any{"uri": rp.URI, "mimeType": "application/json", "text": page.Data}
	if page.Encoding == "base64" {
		content = map[string]any{"uri": rp.URI, "mimeType": "application/octet-stream", "blob": base64.StdEncoding.EncodeToString([]byte(page.Data))}
	}
	meta := map[string]any{"offset": page.Offset, "length": page.Length, "total": page.Total}
	if !page.EOF {
		meta["next"] = ResultURIPrefix + handle + "?offset=" + strconv.FormatInt(page.Next, 10)
	}
	return json.Marshal(map[string]any{"contents": []any{content}, "_meta": map[string]any{"sluice/page": meta}})
}

// GetPrompt forwards prompts/get to the owning server.
func (f *frontend) GetPrompt(ctx context.Context, server string, params json.RawMessage, p front.Peer) (json.RawMessage, error) {
	return f.forward(ctx, server, "prompts/get", params, p)
}

// Complete forwards completion/complete to the owning server.
func (f *frontend) Complete(ctx context.Context, server string, params json.RawMessage) (json.RawMessage, error) {
	return f.forward(ctx, server, "completion/complete", params, nil)
}

// SetLogLevel forwards logging/setLevel to the running legacy servers that
// declared logging; modern servers get the level in each request's _meta.
func (f *frontend) SetLogLevel(ctx context.Context, level string) error {
	f.mu.Lock()
	f.logLevel = level
	f.mu.Unlock()
	params, _ := json.Marshal(map[string]string{"level": level})
	var errs []error
	for _, v := range f.views() {
		if !v.Trusted() {
			continue
		}
		l := f.g.running(v)
		if l == nil {
			continue
		}
		ok := true
		if c := l.Client(); c.Era() == "legacy" && topMember(c.ServerInfo().Capabilities, "logging") != nil {
			if _, err := c.Request(ctx, "logging/setLevel", params, &mcp.CallOptions{Timeout: l.Timeout("", 0)}); err != nil {
				errs = append(errs, fmt.Errorf("server %s: %w", v.ID, err))
				ok = false
			}
		}
		l.Release(ok)
	}
	return errors.Join(errs...)
}

// Subscribe registers fn for backend events.
func (f *frontend) Subscribe(fn func(front.Event)) func() {
	f.mu.Lock()
	k := f.nextSub
	f.nextSub++
	f.subs[k] = fn
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		delete(f.subs, k)
		f.mu.Unlock()
	}
}

func (f *frontend) emit(ev front.Event) {
	f.mu.Lock()
	fns := make([]func(front.Event), 0, len(f.subs))
	keys := make([]int, 0, len(f.subs))
	for k := range f.subs {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	for _, k := range keys {
		fns = append(fns, f.subs[k])
	}
	f.mu.Unlock()
	for _, fn := range fns {
		fn(ev)
	}
}

// Close tears every upstream server down. An incomplete teardown (a
// process group survived) is an error naming the servers.
func (f *frontend) Close() error {
	f.mu.Lock()
	if f.closed {
		err := f.closeErr
		f.mu.Unlock()
		return err
	}
	f.closed = true
	f.mu.Unlock()
	f.stop()
	close(f.stopWatch)
	bad := f.g.Close()
	f.updateStates()
	var err error
	if len(bad) > 0 {
		var names []string
		for _, t := range bad {
			names = append(names, fmt.Sprintf("%s (process group %d: %s)", t.Server, t.Outcome.Pgid, t.Outcome.Reason))
		}
		err = &Error{Kind: KindGateway, Message: "incomplete teardown: " + strings.Join(names, ", ") + "; those processes may still be running"}
	}
	f.mu.Lock()
	f.closeErr = err
	f.mu.Unlock()
	return err
}

// maybeUpdateStates runs updateStates at most once a second: it reads the
// declarations and the trust file, too much for every call.
func (f *frontend) maybeUpdateStates() {
	if f.o.Metrics == nil {
		return
	}
	f.mu.Lock()
	due := time.Since(f.statesAt) >= time.Second
	if due {
		f.statesAt = time.Now()
	}
	f.mu.Unlock()
	if due {
		f.updateStates()
	}
}

// updateStates records every server's run state in the metrics.
func (f *frontend) updateStates() {
	if f.o.Metrics == nil {
		return
	}
	f.mu.Lock()
	f.statesAt = time.Now()
	f.mu.Unlock()
	f.g.mu.Lock()
	closed := f.g.closed
	f.g.mu.Unlock()
	for _, v := range f.views() {
		state := "idle"
		switch {
		case closed:
			state = "closed"
		case !v.Trusted():
			state = "pending"
		case v.Run == RunReady:
			state = "ready"
		case v.Run == RunStarting:
			state = "starting"
		case v.Run == RunBackoff || v.Run == RunCrashLoop:
			state = "failed"
		}
		f.o.Metrics.SetServerState(v.ID, state)
	}
}

// ---------------------------------------------------------------------------
// Errors and results

// toFront maps a gateway error to what front shows: cancellation stays a
// context error, an upstream JSON-RPC error becomes a protocol error, a
// gateway error a tool error with its remedy.
func (f *frontend) toFront(ctx context.Context, err error) error {
	return f.toFrontFor(ctx, "", err)
}

// toFrontFor is toFront for an answer about capability: the text of the
// error is redacted (as capability's results are) and held to the
// budget, with a handle for the rest.
func (f *frontend) toFrontFor(ctx context.Context, capability string, err error) error {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || mcp.CodeOf(err) == mcp.CodeAborted) {
		return ctx.Err()
	}
	var me *mcp.Error
	if errors.As(err, &me) && me.Code == mcp.CodeServer && me.RPC != nil {
		return f.upstreamError(ctx, capability, me.RPC)
	}
	if errors.Is(err, ErrClosed) {
		return &front.ToolError{Message: "sluice is shutting down; the call did not run.", Remedy: "retry once the gateway is back", Err: err}
	}
	var ge *Error
	if errors.As(err, &ge) && ge.Kind == KindFilter && ge.Capability != "" {
		// A result pipeline's filter failure: its text is the gateway's own
		// (failureText: never guest or upstream bytes), and redacting it
		// would run the filter
		// that just failed, refused or is disabled for this server again:
		// the explanation itself would be withheld.
		return &front.ToolError{Message: truncate(ge.Message, maxErrorText), Remedy: ge.Remedy.For(SurfaceModel), Err: err}
	}
	if errors.As(err, &ge) {
		return f.redactToolError(ctx, capability, &front.ToolError{Message: ge.Message, Remedy: ge.Remedy.For(SurfaceModel), Err: err})
	}
	return err
}

// maxErrorText caps the message of an error shown to a model.
const maxErrorText = 4096

// redactToolError redacts and caps the text of a tool error (a gateway
// error may quote an upstream server).
func (f *frontend) redactToolError(ctx context.Context, capability string, te *front.ToolError) error {
	if capability == "" {
		capability = "sluice__error"
	}
	msg, err := f.g.RedactText(ctx, capability, te.Message)
	if err != nil {
		msg = "the error's text was withheld: its redaction failed"
	}
	if len(msg) > maxErrorText {
		msg = truncate(msg, maxErrorText)
	}
	te.Message = msg
	return te
}

// upstreamError relays an upstream JSON-RPC error: message and data
// redacted; when they exceed the budget the whole (redacted) error is
// stored, and the message is cut and names the handle.
func (f *frontend) upstreamError(ctx context.Context, capability string, rpc *mcp.RPCError) error {
	if capability == "" {
		capability = "sluice__error"
	}
	data := rpc.Data
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	wrapped, _ := json.Marshal(struct {
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}{rpc.Message, data})
	red, err := f.g.RedactJSON(ctx, capability, wrapped)
	if err != nil {
		return &front.ProtocolError{Code: rpc.Code, Message: "the upstream server's error was withheld: its redaction failed"}
	}
	var e struct {
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if json.Unmarshal(red, &e) != nil {
		return &front.ProtocolError{Code: rpc.Code, Message: "the upstream server's error was withheld"}
	}
	if string(e.Data) == "null" {
		e.Data = nil
	}
	if budget := f.g.Budget(); len(e.Message)+len(e.Data) > budget-512 {
		note := fmt.Sprintf(" [sluice: this error was %d bytes, over the %d-byte context budget", len(red), budget)
		if h, err := f.g.StoreFull(red); err == nil {
			note += "; the full error is stored under handle " + h + "; read it with read_result]"
			e.Data, _ = json.Marshal(map[string]any{"sluice": map[string]any{"omittedBytes": len(red), "handle": h, "uri": ResultURIPrefix + h}})
		} else {
			note += "; it could not be stored]"
			e.Data = nil
		}
		e.Message = truncate(e.Message, min(len(e.Message), budget/4)) + note
	}
	return &front.ProtocolError{Code: rpc.Code, Message: e.Message, Data: e.Data}
}

// jsonToolResult renders v as a CallToolResult: compact JSON text for the
// model, the same object as structuredContent.
func jsonToolResult(v any, isError bool) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	obj := bytes.TrimRight(buf.Bytes(), "\n")
	if !utf8.Valid(obj) {
		// The encoder copies a json.RawMessage (a cached schema) without
		// looking at its UTF-8. Such bytes can only sit inside strings of
		// the valid JSON it wrote, so U+FFFD in their place keeps it valid.
		obj = bytes.ToValidUTF8(obj, []byte("\uFFFD"))
	}
	text, err := json.Marshal(string(obj))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`{"content":[{"type":"text","text":`)
	b.Write(text)
	b.WriteString(`}],"structuredContent":`)
	b.Write(obj)
	if isError {
		b.WriteString(`,"isError":true`)
	}
	b.WriteString(`}`)
	return b.Bytes(), nil
}

// topMember returns the raw value of a top-level member of a JSON object, or
// nil.
func topMember(obj json.RawMessage, name string) json.RawMessage {
	var m map[string]json.RawMessage
	if len(obj) == 0 || json.Unmarshal(obj, &m) != nil {
		return nil
	}
	return m[name]
}

// agentCallCtx carries an agent's call's request id under both keys the
// gateway reads it by (the log's request_id, the dashboard's agent
// attribution) and the upstream request's extras in one context node,
// the id boxed once: what withPeer, a second context.WithValue and
// mcp.WithExtras did in six allocations, in two.
type agentCallCtx struct {
	context.Context
	rid string
	// ridv is rid as an any, boxed by the first Value that asks for it
	// (most calls log nothing through the gateway and have no dashboard:
	// boxing it up front was an allocation a call).
	ridv atomic.Value
	x    mcp.Extras
	// f asks p for the call's approval (askApproval), when set.
	f *frontend
	p front.Peer
}

// askApproval asks c's agent (frontend.askApproval).
func (c *agentCallCtx) askApproval(ctx context.Context, r ApprovalRequest) (bool, error) {
	return c.f.askApproval(ctx, c.p, r)
}

func (c *agentCallCtx) Value(key any) any {
	switch key.(type) {
	case requestIDKey, agentKey:
		if v := c.ridv.Load(); v != nil {
			return v
		}
		var v any = c.rid
		c.ridv.Store(v) // a concurrent first asker stores an equal value
		return v
	}
	if mcp.IsExtrasKey(key) {
		return &c.x
	}
	return c.Context.Value(key)
}

// withAgentCall is withPeer, the agent's request id for the dashboard
// (agentKey) and mcp.WithExtras(x), for an agent's tools/call. An empty
// request id is no log id (RequestIDFrom reads "" as none) but still an
// agent's call.
func withAgentCall(ctx context.Context, p front.Peer, x mcp.Extras) context.Context {
	if p == nil {
		return mcp.WithExtras(ctx, x)
	}
	return newAgentCall(ctx, p, x)
}

// newAgentCall is withAgentCall's node for a peer (p not nil).
func newAgentCall(ctx context.Context, p front.Peer, x mcp.Extras) *agentCallCtx {
	return &agentCallCtx{Context: ctx, rid: p.RequestID(), x: x, p: p}
}

// withPeer puts the agent request's id on ctx, so the gateway's log lines
// for it carry request_id.
func withPeer(ctx context.Context, p front.Peer) context.Context {
	if p == nil {
		return ctx
	}
	return WithRequestID(ctx, p.RequestID())
}
