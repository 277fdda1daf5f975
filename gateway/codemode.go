package gateway

// This file wires code mode (package sandbox) into the gateway: Execute
// runs one Starlark script against every trusted server, through the same
// trust, admission and result-stage filters as a direct call, and passes the
// script's final value through the context-stage filters before it goes
// back to the model. It also gives describe its code-mode names and renders
// a server's .pyi-style docs.
//
// # Why the final value is wrapped as a CallToolResult
//
// Context-stage filters (shape, redaction, teams' own) read and write MCP
// CallToolResult JSON; that is the only shape they are written for. The
// script's `result` is arbitrary JSON, so Execute wraps it as
// {"content":[{"type":"text","text":"<result JSON>"}]} — text only, no
// structuredContent: a copy of the value in structuredContent would double
// the bytes a budget filter counts, and structuredContent must be an object
// while a script may return a list or a number. If the filters leave the
// wrapper as it was, or only rewrite the text into other valid JSON (a
// redaction), the run's result is that JSON again; if they change it into
// anything else (shape cut the text and added a note naming the offloaded
// full value), the run's result is the filtered CallToolResult itself and
// ResultFiltered is set, so a model can tell a shortened value from a
// complete one. The filters see the pseudo capability ExecuteCapability.
//
// # Why missing catalogs are refreshed only for the servers a script names
//
// Listing tools never launches a server, and neither does a script that
// does not need one. A trusted server without a recorded catalog is shown
// to the script as a module with no tools; if the pre-flight finds that the
// script names one of its tools, exactly those servers get a scoped refresh
// (launch, list, record), the same as 'sluice find --server ID --refresh',
// and the run starts with their live listings. Untrusted and stale project
// servers are not modules at all; a script naming one fails in pre-flight
// with an admission error carrying the trust remedy, and nothing launches.
//
// # Why approvals are asked once, up front, for the whole set
//
// A script cannot stop half way to ask a person: the calls it already made
// would have run. So every capability the script names literally (module
// functions, and strings given to call() and parallel()) is admitted
// before anything runs. When the surface can ask (the agent's elicitation,
// or the dashboard's approvals queue), the capabilities that need approval
// are asked for once, as one set bound to the sha256 of the script, and
// the run goes ahead with exactly that set approved; otherwise, or when
// declined, the whole run is refused with the remedy (an 'approve:' glob
// or an action class). Capabilities computed at run time go through Call's
// own admission with no approver, so they come back to the script as
// refusals (call() returns them as values).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"sluice/gateway/config"
	"sluice/sandbox"
)

// ExecuteCapability is the capability name the context-stage filters see
// for a script's final value; filter configs can name it in their
// capabilities globs.
const ExecuteCapability = "sluice__execute"

// DefaultScriptName names a script that came without a file name.
const DefaultScriptName = "script.star"

// Aliases for the sandbox's result types, so surfaces need only this
// package.
type (
	RunError   = sandbox.Error      // why a run failed (kind, limit, line, remedy, problems)
	RunProblem = sandbox.Problem    // one pre-flight finding
	CallRecord = sandbox.CallRecord // one tool call a script made
	RunStats   = sandbox.Stats      // counters of one run
)

// Kinds of RunError. They are stable strings a model reads.
const (
	RunSyntax    = sandbox.KindSyntax    // the script does not parse, or names unknown tools or arguments
	RunRuntime   = sandbox.KindRuntime   // a Starlark error: bad types, fail(), bad arguments at run time
	RunLimit     = sandbox.KindLimit     // a limit was hit; RunError.Limit names it
	RunTool      = sandbox.KindTool      // a tool failed (isError, transport, launch)
	RunAdmission = sandbox.KindAdmission // refused: untrusted server or approval required
	RunCancelled = sandbox.KindCancelled // the caller cancelled
	// RunFilter: the run finished but a fail-closed context-stage filter
	// failed on its final value, which is therefore withheld.
	RunFilter sandbox.Kind = "filter"
)

// ExecuteRequest is one code-mode run.
type ExecuteRequest struct {
	Script   string // Starlark source
	Filename string // shown in positions and backtraces; "" = DefaultScriptName
	// Timeout is the surface's own bound (an MCP request timeout, the
	// CLI's --timeout). The script's wall time is the user setting
	// sandbox.timeoutMs (default 30 s), never beyond Timeout when set.
	Timeout time.Duration
	// ForModel: a model submitted the script (the execute tool), so the
	// remedies in its errors are written for a model (SurfaceScriptModel);
	// otherwise for a person at the CLI (SurfaceScript).
	ForModel bool
	// Approve, when set, is asked once before the run for every
	// capability the pre-flight names that needs approval (the whole set,
	// bound to the script's digest). nil refuses such a script up front.
	Approve func(ctx context.Context, a ScriptApproval) (bool, error)
}

// ExecuteResult is a run as it goes back to the caller. It has the fields
// of the sandbox's result; Result went through the context-stage filters.
type ExecuteResult struct {
	// Result is the JSON of the script's `result` global (null if unset or
	// on error), after the context-stage filters. When ResultFiltered is
	// set, the filters changed it and Result is the filtered MCP
	// CallToolResult (e.g. a shortened text plus a note naming where the
	// full value was stored).
	Result         json.RawMessage `json:"result"`
	ResultFiltered bool            `json:"resultFiltered,omitempty"`
	// ResultBytes is the size of the script's result JSON before the
	// context-stage filters.
	ResultBytes   int          `json:"resultBytes"`
	Logs          []string     `json:"logs"`
	LogsTruncated bool         `json:"logsTruncated,omitempty"`
	Calls         []CallRecord `json:"calls"`
	Stats         RunStats     `json:"stats"`
	Notes         []string     `json:"notes,omitempty"`
	Error         *RunError    `json:"error,omitempty"`
}

// Execute runs one script. Every trusted server is a module (its tools
// from the live listing or the recorded catalog); untrusted servers are
// invisible and never launched. The script is checked first (unknown
// tools and arguments, all problems at once), then every capability it
// names is admitted, then it runs under the user's sandbox limits. Tool
// calls go through Call (trust, admission with no approver, result-stage
// filters); the final value goes through the context-stage filters.
//
// A failed run is not an error: it comes back with Result.Error set and the
// calls that already ran. The error return is for the gateway itself
// (closed).
func (g *Gateway) Execute(ctx context.Context, req ExecuteRequest) (*ExecuteResult, error) {
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	name := req.Filename
	if name == "" {
		name = DefaultScriptName
	}
	lim := g.scriptLimits(req.Timeout)
	h := g.newScriptHost(lim.MaxConcurrency)
	if req.ForModel {
		h.surface = SurfaceScriptModel
	}

	var notes []string
	// Pre-flight against what is known without launching; refresh exactly
	// the servers with a missing catalog that the script names. The
	// refresh counts against the run's wall time.
	if len(h.missing) > 0 {
		_, err := sandbox.Check(name, req.Script, h.servers)
		var se *sandbox.Error
		if errors.As(err, &se) {
			// A script that names an untrusted server fails whatever the
			// refresh finds: refuse it now and launch nothing.
			if u := *se; g.explainUntrusted(&u, h) {
				return g.failedRun(&u, notes), nil
			}
			start := time.Now()
			rctx, cancel := context.WithTimeout(ctx, lim.Timeout)
			for _, id := range referencedServers(se, h.missing) {
				v := h.views[id]
				if err := g.refresh(rctx, v); err != nil {
					e := &RunError{Kind: RunTool, Message: fmt.Sprintf("server %s has no recorded catalog and could not be launched to list its tools: %s", id, firstLine(errMessage(err), 500)),
						Remedy: Remedy{Before: "fix the server, then", Step: StepRefresh, Server: id}.For(h.surface)}
					switch {
					case ctx.Err() != nil:
						e = &RunError{Kind: RunCancelled, Message: fmt.Sprintf("cancelled while server %s was starting to list its tools", id)}
					case errors.Is(rctx.Err(), context.DeadlineExceeded):
						e = &RunError{Kind: RunLimit, Limit: sandbox.LimitTime, Message: fmt.Sprintf("server %s did not start and list its tools within the run's time limit %s", id, lim.Timeout),
							Remedy: Remedy{Step: StepRefresh, Server: id, After: "once to record its catalog, or raise sandbox.timeoutMs"}.For(h.surface)}
					}
					cancel()
					return g.failedRun(e, notes), nil
				}
				notes = append(notes, fmt.Sprintf("server %s had no recorded catalog; it was launched once to list and record its tools", id))
				h.setListing(id, g.known(v))
			}
			cancel()
			lim.Timeout = max(lim.Timeout-time.Since(start), time.Millisecond)
		}
	}

	if req.Approve != nil {
		h.askApproval(ctx, req, name)
	}
	res := sandbox.Run(ctx, h, name, req.Script, &lim)
	out := &ExecuteResult{
		Result:        res.Result,
		Logs:          res.Logs,
		LogsTruncated: res.LogsTruncated,
		Calls:         res.Calls,
		Stats:         res.Stats,
		Notes:         append(notes, res.Notes...),
		Error:         res.Error,
	}
	if out.Error != nil && !g.explainUntrusted(out.Error, h) && !explainHeld(out.Error, h) {
		explainTruncated(out.Error, h)
	}
	if len(out.Result) == 0 {
		out.Result = json.RawMessage("null")
	}
	out.ResultBytes = len(out.Result)
	if out.Error == nil {
		g.filterFinal(ctx, out, h.surface)
	}
	return out, nil
}

func (g *Gateway) failedRun(e *RunError, notes []string) *ExecuteResult {
	return &ExecuteResult{Result: json.RawMessage("null"), ResultBytes: 4, Logs: []string{}, Calls: []CallRecord{}, Notes: notes, Error: e}
}

// filterFinal runs the context-stage filters on the final value (see the
// file comment for the wrapping).
func (g *Gateway) filterFinal(ctx context.Context, out *ExecuteResult, s Surface) {
	wrapped := wrapResult(out.Result)
	filtered, held, err := g.filterResult(ctx, ExecuteCapability, wrapped, true)
	defer held.Release() // below, the value is copied out of filtered (unwrapResult decodes it)
	if err != nil {
		out.Result = json.RawMessage("null")
		e := &RunError{Kind: RunFilter, Message: "the script's result was withheld: a context filter failed: " + firstLine(errMessage(err), 500)}
		var ge *Error
		if errors.As(err, &ge) {
			e.Remedy = ge.Remedy.For(s)
		}
		out.Error = e
		return
	}
	if bytes.Equal(filtered, wrapped) {
		return
	}
	if v, ok := unwrapResult(filtered); ok {
		out.Result = v
		return
	}
	out.Result = append(json.RawMessage(nil), filtered...)
	out.ResultFiltered = true
}

// wrapResult makes a script's result JSON a text-only CallToolResult.
func wrapResult(v json.RawMessage) json.RawMessage {
	var compact bytes.Buffer
	if json.Compact(&compact, v) != nil {
		compact.Reset()
		compact.Write(v)
	}
	text, _ := json.Marshal(compact.String()) // a string always marshals
	var b bytes.Buffer
	b.WriteString(`{"content":[{"type":"text","text":`)
	b.Write(text)
	b.WriteString(`}]}`)
	return b.Bytes()
}

// unwrapResult returns the JSON text of a CallToolResult that is still
// exactly one text item holding valid JSON.
func unwrapResult(raw json.RawMessage) (json.RawMessage, bool) {
	var r map[string]json.RawMessage
	if json.Unmarshal(raw, &r) != nil || len(r) != 1 {
		return nil, false
	}
	var items []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if json.Unmarshal(r["content"], &items) != nil || len(items) != 1 || items[0].Type != "text" || items[0].Text == nil {
		return nil, false
	}
	t := []byte(*items[0].Text)
	if !json.Valid(t) {
		return nil, false
	}
	return t, true
}

// scriptLimits turns the user's sandbox settings into sandbox limits: zero
// keeps the sandbox default; the wall time is never beyond surface.
func (g *Gateway) scriptLimits(surface time.Duration) sandbox.Limits {
	s := g.reload().Settings.Sandbox
	l := limitsFrom(s)
	if l.Timeout <= 0 {
		l.Timeout = sandbox.DefaultTimeout
	}
	if surface > 0 && surface < l.Timeout {
		l.Timeout = surface
	}
	if l.MaxConcurrency <= 0 {
		l.MaxConcurrency = sandbox.DefaultMaxConcurrency
	}
	return l
}

func limitsFrom(s config.SandboxLimits) sandbox.Limits {
	clampInt := func(v int64) int {
		if v > math.MaxInt32 {
			return math.MaxInt32
		}
		if v < 0 {
			return 0
		}
		return int(v)
	}
	l := sandbox.Limits{
		MaxCalls:       clampInt(s.MaxCalls),
		MaxResultBytes: clampInt(s.MaxResultBytes),
		MaxLogBytes:    clampInt(s.MaxLogBytes),
		MaxOutputBytes: clampInt(s.MaxOutputBytes),
		MaxMemoryBytes: max(s.MaxMemoryBytes, 0),
		MaxConcurrency: clampInt(s.MaxConcurrency),
		MaxDepth:       clampInt(s.MaxDepth),
	}
	if s.MaxSteps > 0 {
		l.MaxSteps = uint64(s.MaxSteps)
	}
	if s.TimeoutMs > 0 {
		const maxMs = int64(math.MaxInt64 / int64(time.Millisecond))
		l.Timeout = time.Duration(min(s.TimeoutMs, maxMs)) * time.Millisecond
	}
	return l
}

// scriptHost adapts the gateway to sandbox.Host for one run. It is built
// from the trusted servers' known listings and never launches by itself;
// only Call does, through Gateway.Call.
type scriptHost struct {
	g         *Gateway
	perServer int
	servers   []sandbox.Server
	index     map[string]int        // server id -> position in servers
	views     map[string]ServerView // trusted servers
	tools     map[string]toolInfo   // capability -> tool
	missing   map[string]bool       // trusted servers without a catalog
	truncated map[string]int        // servers whose listing was cut: tools listed
	untrusted []ServerView
	surface   Surface              // whom remedies speak to: SurfaceScript or SurfaceScriptModel
	holds     map[string]*toolHold // per server: its listing compared with the baseline
	// approved are the capabilities a person approved for this run (the
	// whole set the pre-flight named, bound to the script's digest).
	approved map[string]bool
	declined string // why the set was not approved, for the refusal
}

func (g *Gateway) newScriptHost(perServer int) *scriptHost {
	h := &scriptHost{g: g, perServer: perServer, index: map[string]int{}, views: map[string]ServerView{},
		tools: map[string]toolInfo{}, missing: map[string]bool{}, truncated: map[string]int{}, surface: SurfaceScript}
	for _, v := range g.Servers().Servers {
		if !v.Trusted() {
			h.untrusted = append(h.untrusted, v)
			continue
		}
		h.views[v.ID] = v
		h.index[v.ID] = len(h.servers)
		h.servers = append(h.servers, sandbox.Server{ID: v.ID})
		h.setListing(v.ID, g.known(v))
	}
	return h
}

// setListing installs a server's tools (a missing listing shows no tools).
func (h *scriptHost) setListing(id string, l listing) {
	i := h.index[id]
	h.servers[i].Tools = nil
	for c := range h.tools {
		if s, _, _ := SplitCapability(c); s == id {
			delete(h.tools, c)
		}
	}
	if l.prov == ProvMissing {
		h.missing[id] = true
		return
	}
	delete(h.missing, id)
	delete(h.truncated, id)
	if h.holds == nil {
		h.holds = map[string]*toolHold{}
	}
	h.holds[id] = l.hold
	if l.truncated {
		h.truncated[id] = len(l.tools)
	}
	for _, t := range l.tools {
		h.servers[i].Tools = append(h.servers[i].Tools, sandboxTool(t))
		h.tools[Capability(id, t.Name)] = t
	}
	h.servers[i].Hidden = l.hidden
}

func sandboxTool(t toolInfo) sandbox.Tool {
	return sandbox.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema}
}

func (h *scriptHost) Servers() []sandbox.Server { return h.servers }

// Admit refuses a capability that needs approval (no approver exists in a
// script) with the remedy that makes it run.
func (h *scriptHost) Admit(capability string) error {
	server, _, _ := SplitCapability(capability)
	v, ok := h.views[server]
	t, known := h.tools[capability]
	if ok && !known {
		if _, tool, _ := SplitCapability(capability); tool != "" {
			if why := h.g.hiddenTool(v, tool); why != "" {
				e := hiddenToolErr(v, tool, why)
				return sandbox.Refused(capability, e.Message, e.Remedy.For(h.surface))
			}
		}
	}
	if !ok || !known {
		return sandbox.Refused(capability, capability+" is not a known capability of a trusted server", Remedy{Step: StepFind, After: "to list capabilities"}.For(h.surface))
	}
	a := h.g.admission(v, t)
	if a.Approved || h.approved[capability] {
		return nil
	}
	if h.declined != "" {
		return sandbox.Refused(capability, "not approved: "+a.Reason+"; "+h.declined, a.fix.For(h.surface))
	}
	return sandbox.Refused(capability, "not approved: "+a.Reason+"; a script cannot ask for approval", a.fix.For(h.surface))
}

// askApproval asks req.Approve once for every capability the script
// names that needs approval. A script that does not pass the pre-flight
// asks nothing (the run reports its problems).
func (h *scriptHost) askApproval(ctx context.Context, req ExecuteRequest, name string) {
	pf, err := sandbox.Check(name, req.Script, h.servers)
	if err != nil {
		return
	}
	a := ScriptApproval{Classes: map[string]string{}, Digest: scriptDigest(req.Script), Script: req.Script}
	for _, c := range pf.Capabilities {
		server, _, _ := SplitCapability(c)
		v, ok := h.views[server]
		t, known := h.tools[c]
		if !ok || !known {
			continue
		}
		if ad := h.g.admission(v, t); !ad.Approved {
			a.Capabilities = append(a.Capabilities, c)
			a.Classes[c] = ad.Class
		}
	}
	if len(a.Capabilities) == 0 {
		return
	}
	yes, err := req.Approve(ctx, a)
	switch {
	case err != nil:
		h.declined = "approval could not be asked: " + firstLine(err.Error(), 300)
	case !yes:
		h.declined = "the script's calls were declined"
	default:
		h.approved = map[string]bool{}
		for _, c := range a.Capabilities {
			h.approved[c] = true
		}
	}
}

// Call runs one tool through Gateway.Call with no approver and without the
// context stage (the script's final value is what reaches the model).
func (h *scriptHost) Call(ctx context.Context, capability string, args json.RawMessage) (sandbox.CallResult, error) {
	r, err := h.g.Call(ctx, CallRequest{Capability: capability, Arguments: args, Raw: true, Yes: h.approved[capability]})
	if err != nil {
		return sandbox.CallResult{}, hostError(capability, err, h.surface)
	}
	return sandbox.CallResult{Raw: r.Result, Release: r.Release}, nil
}

// hostError maps a gateway error to the sandbox's two kinds: refusals
// (untrusted, approval) are admission; everything else is a tool failure.
// Only the first line of the message goes to the script: server stderr
// tails stay in the gateway's logs.
func hostError(capability string, err error, s Surface) error {
	var ge *Error
	if !errors.As(err, &ge) {
		return &sandbox.HostError{Kind: sandbox.HostTool, Capability: capability, Message: firstLine(err.Error(), 500), Err: err}
	}
	kind := sandbox.HostTool
	if ge.Kind == KindRefused || ge.Kind == KindUntrusted {
		kind = sandbox.HostAdmission
	}
	return &sandbox.HostError{Kind: kind, Capability: capability, Message: firstLine(ge.Message, 500), Remedy: ge.Remedy.For(s), Err: err}
}

// MaxConcurrency is the run's own ceiling (sandbox.maxConcurrency, default
// 8) for every server: the native client multiplexes requests over one
// stdio pipe by JSON-RPC id, so several calls in flight cost a server no
// more than it chooses to spend; the cap keeps one script from flooding it.
func (h *scriptHost) MaxConcurrency(string) int { return h.perServer }

// referencedServers returns the servers of missing that a pre-flight
// error shows the script naming: `server "ID" has no tool ...` for module
// functions and `unknown tool "ID__..."` for capability strings.
func referencedServers(e *sandbox.Error, missing map[string]bool) []string {
	seen := map[string]bool{}
	var ids []string
	for _, p := range e.Problems {
		for id := range missing {
			if seen[id] {
				continue
			}
			if strings.Contains(p.Message, fmt.Sprintf("server %q has no tool ", id)) ||
				strings.Contains(p.Message, `unknown tool "`+id+Sep) {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// explainTruncated adds to an error that shows the script naming a tool
// a server does not list that the server's listing was truncated, when it
// was: the tool may exist past the cap.
func explainTruncated(e *RunError, h *scriptHost) {
	for id, n := range h.truncated {
		names := func(msg string) bool {
			return strings.Contains(msg, fmt.Sprintf("server %q has no tool ", id)) || strings.Contains(msg, `unknown tool "`+id+Sep)
		}
		hit := names(e.Message)
		for i, p := range e.Problems {
			if names(p.Message) {
				e.Problems[i].Message += "; " + truncatedNote(id, n)
				hit = true
			}
		}
		if hit && !strings.Contains(e.Message, truncatedNote(id, n)) {
			e.Message += "; " + truncatedNote(id, n)
		}
	}
}

// explainUntrusted turns a pre-flight failure that names an untrusted or
// stale server into an admission error with the trust remedy (and says
// so): the script did not see the server because it may not run, not
// because it is absent.
func (g *Gateway) explainUntrusted(e *RunError, h *scriptHost) bool {
	if e.Kind != RunSyntax || len(h.untrusted) == 0 {
		return false
	}
	for _, v := range h.untrusted {
		mod := sandbox.Ident(v.ID)
		for _, p := range e.Problems {
			if p.Message == "undefined: "+mod || strings.HasPrefix(p.Message, "undefined: "+mod+" ") ||
				strings.Contains(p.Message, `unknown tool "`+v.ID+Sep) {
				u := untrustedErr(v)
				e.Kind = RunAdmission
				e.Message = u.Message
				e.Remedy = u.Remedy.For(h.surface)
				e.Line, e.Column = p.Line, p.Column
				return true
			}
		}
	}
	return false
}

func errMessage(err error) string {
	var ge *Error
	if errors.As(err, &ge) {
		return ge.Message
	}
	return err.Error()
}

// codeNames computes the Starlark names over every trusted server (ids
// only, plus the tools of one server), as a run would: module names depend
// on the set of ids, function names on one server's tools.
func (g *Gateway) codeNames(id string, tools []toolInfo) *sandbox.Names {
	var servers []sandbox.Server
	for _, v := range g.Servers().Servers {
		if !v.Trusted() {
			continue
		}
		s := sandbox.Server{ID: v.ID}
		if v.ID == id {
			for _, t := range tools {
				s.Tools = append(s.Tools, sandboxTool(t))
			}
		}
		servers = append(servers, s)
	}
	return sandbox.Mangle(servers)
}

// decorate adds code-mode details (module and signature) to a description.
func (g *Gateway) decorate(d *ToolDetail, v ServerView, tools []toolInfo) {
	if !v.Trusted() {
		return
	}
	n := g.codeNames(v.ID, tools)
	d.Module = n.Modules[v.ID]
	for _, t := range tools {
		if t.Name != d.Tool {
			continue
		}
		sig := sandbox.Signature(sandboxTool(t))
		if full, ok := n.Tools[Capability(v.ID, t.Name)]; ok {
			fn := strings.TrimPrefix(full, d.Module+".")
			if base := sandbox.Ident(t.Name); fn != base {
				sig = strings.Replace(sig, "def "+base+"(", "def "+fn+"(", 1)
			}
		}
		d.Signature = sig
		return
	}
}

// Docs returns the .pyi-style code-mode docs of one trusted server: its
// module name and one signature per tool with a one-line summary. It never
// launches: without a recorded catalog it fails with KindMissing and the
// refresh remedy.
func (g *Gateway) Docs(ctx context.Context, server string) (string, error) {
	v, err := g.server(server)
	if err != nil {
		return "", err
	}
	if !v.Trusted() {
		return "", untrustedErr(v)
	}
	l := g.known(v)
	if l.prov == ProvMissing {
		return "", &Error{Kind: KindMissing, Server: server, Message: fmt.Sprintf("no recorded catalog for server %s", server),
			Remedy: Remedy{Step: StepRefresh, Server: server, After: "to launch it once and record its tools"}}
	}
	n := g.codeNames(v.ID, l.tools)
	s := sandbox.Server{ID: v.ID}
	for _, t := range l.tools {
		s.Tools = append(s.Tools, sandboxTool(t))
	}
	return n.Docs(s), nil
}

// MaxModelLogBytes bounds the print() output the "execute" tool hands a
// model: the last lines up to this many bytes, with a note of what was
// dropped. The CLI's --json keeps every line.
const MaxModelLogBytes = 4096

// maxModelCallGroups bounds the per-capability call summary a model sees.
const maxModelCallGroups = 32

// ToolResult renders a run as the MCP CallToolResult of the "execute" tool:
// one text item holding a model-facing summary of the run as compact JSON
// (numbers keep their text), and isError when the run failed. The summary
// is bounded: calls are aggregated per capability (count, ok, failed,
// bytes, ms, the first error), logs keep their last MaxModelLogBytes, and
// the result is the context-filtered value. The full run object (every
// call and log line) stays with the caller ('sluice run --json'). It is not
// repeated as structuredContent: a model would read every byte twice.
func (r *ExecuteResult) ToolResult() (json.RawMessage, error) {
	var run bytes.Buffer
	enc := json.NewEncoder(&run)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r.modelSummary()); err != nil {
		return nil, &Error{Kind: KindGateway, Message: "cannot encode the run: " + err.Error(), Err: err}
	}
	text, err := json.Marshal(strings.TrimRight(run.String(), "\n"))
	if err != nil {
		return nil, &Error{Kind: KindGateway, Message: "cannot encode the run: " + err.Error(), Err: err}
	}
	var b bytes.Buffer
	b.WriteString(`{"content":[{"type":"text","text":`)
	b.Write(text)
	b.WriteString(`}]`)
	if r.Error != nil {
		b.WriteString(`,"isError":true`)
	}
	b.WriteString(`}`)
	return b.Bytes(), nil
}

// runSummary is what a model reads of a run.
type runSummary struct {
	Result         json.RawMessage `json:"result"`
	ResultFiltered bool            `json:"resultFiltered,omitempty"`
	ResultBytes    int             `json:"resultBytes"`
	Error          *RunError       `json:"error,omitempty"`
	Logs           []string        `json:"logs,omitempty"`
	LogsNote       string          `json:"logsNote,omitempty"`
	Calls          []callSummary   `json:"calls,omitempty"`
	CallsNote      string          `json:"callsNote,omitempty"`
	Stats          RunStats        `json:"stats"`
	Notes          []string        `json:"notes,omitempty"`
}

// callSummary aggregates a run's calls of one capability.
type callSummary struct {
	Capability string `json:"capability"`
	Count      int    `json:"count"`
	OK         int    `json:"ok"`
	Failed     int    `json:"failed,omitempty"`
	Bytes      int    `json:"bytes"`
	Ms         int64  `json:"ms"`
	FirstError string `json:"firstError,omitempty"`
}

func (r *ExecuteResult) modelSummary() runSummary {
	s := runSummary{Result: r.Result, ResultFiltered: r.ResultFiltered, ResultBytes: r.ResultBytes, Error: r.Error, Stats: r.Stats, Notes: r.Notes}
	if len(s.Result) == 0 {
		s.Result = json.RawMessage("null")
	}
	s.Logs, s.LogsNote = tailLogs(r.Logs, MaxModelLogBytes)
	if r.LogsTruncated {
		s.LogsNote = strings.TrimSpace(s.LogsNote + " print() output beyond sandbox.maxLogBytes was not kept.")
	}
	idx := map[string]int{}
	var groups []callSummary
	dropped := 0
	for _, c := range r.Calls {
		i, ok := idx[c.Capability]
		if !ok {
			if len(groups) == maxModelCallGroups {
				dropped++
				continue
			}
			i = len(groups)
			idx[c.Capability] = i
			groups = append(groups, callSummary{Capability: c.Capability})
		}
		g := &groups[i]
		g.Count++
		g.Bytes += c.Bytes
		g.Ms += c.Ms
		if c.OK {
			g.OK++
		} else {
			g.Failed++
			if g.FirstError == "" {
				g.FirstError = firstLine(c.Error, 300)
			}
		}
	}
	s.Calls = groups
	if dropped > 0 {
		s.CallsNote = fmt.Sprintf("%d calls to further capabilities are not summarized here", dropped)
	}
	return s
}

// tailLogs keeps the last log lines that fit in max bytes (a longer last
// line keeps its tail) and says what was dropped.
func tailLogs(logs []string, max int) ([]string, string) {
	total, n := 0, 0
	for i := len(logs) - 1; i >= 0 && total+len(logs[i]) <= max; i-- {
		total += len(logs[i])
		n++
	}
	kept := append([]string(nil), logs[len(logs)-n:]...)
	dropped := 0
	for _, l := range logs[:len(logs)-n] {
		dropped += len(l)
	}
	if n == 0 && len(logs) > 0 {
		last := logs[len(logs)-1]
		cut := len(last) - max
		for cut < len(last) && !utf8.RuneStart(last[cut]) {
			cut++
		}
		kept = []string{"[...]" + last[cut:]}
		dropped -= len(last) - cut
	}
	if dropped == 0 {
		return kept, ""
	}
	return kept, fmt.Sprintf("print() output shortened: the first %d bytes were dropped, %d of %d lines shown (the CLI's 'sluice run --json' keeps them all).", dropped, len(kept), len(logs))
}
