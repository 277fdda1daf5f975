package gateway

// This file connects the dashboard (gateway/admin) to the gateway: the
// admin.Backend over Find, Describe, Call, Execute, the servers, filters
// and results; the record of calls; the approvals queue that callers
// without elicitation wait in; and serving it on its own listener.

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"sluice/gateway/admin"
	"sluice/gateway/internal/files"
	"sluice/gateway/mcp"
	"sluice/sandbox"
)

// DashboardOptions configures the dashboard of a serve (ServeOptions) or
// of 'sluice dashboard' (Dashboard).
type DashboardOptions struct {
	// Addr is the dashboard's own listen address (serve --admin,
	// 'sluice dashboard'). With --http and no Addr it is served under
	// /admin/ on the MCP listener.
	Addr string
	// Remote admits clients that are not loopback (--admin-remote) and
	// permits a non-loopback Addr. Without it the dashboard refuses every
	// other peer even when serve was bound with --allow-remote.
	Remote bool
	// Token, when set, is asked once by a login form. Without one the
	// dashboard makes its own for this process (admin.NewToken): loopback
	// alone is every local user. OnListen is given its login link.
	Token string
	// PlanText renders a trust plan exactly as 'sluice trust' shows it
	// (the CLI supplies its own renderer); nil = a plain summary.
	PlanText func(*TrustPlan) string
	// ApprovalTimeout bounds how long a call waits for a decision in the
	// dashboard; 0 = 2 minutes.
	ApprovalTimeout time.Duration
	// AuditFile is where approval decisions are logged (JSON lines,
	// 0600); "" = <state dir>/audit.jsonl.
	AuditFile string
	Version   string
	// OnListen receives the dashboard's base URL (http://host:port) and,
	// when the token was made for this process, the link that logs a
	// browser in with it ("" when the operator gave the token). The link
	// is a secret: show it to the operator only (standard error), never
	// in a log line or to an agent.
	OnListen func(base, login string)
}

// dashState is what a serving gateway keeps for its dashboard.
type dashState struct {
	activity  *admin.Activity
	approvals *admin.Approvals
	handler   *admin.Handler
	madeToken string // the per-process token; "" when the operator gave one
	// exposure is the serving front's live expose set (its --expose flags
	// included); nil without a serving front: the declarations' set.
	exposure func() ([]ExposeGlob, map[string][]ExposedTool)
}

// loginURL is the login link for the dashboard at base when its token was
// made for this process, else "".
func (d *dashState) loginURL(base string) string {
	if d.madeToken == "" {
		return ""
	}
	return admin.LoginURL(base, d.madeToken)
}

// dashKey marks a call from the dashboard; agentKey carries an agent's
// request id.
type (
	dashKey  struct{}
	agentKey struct{}
)

// gatewayDash is the dashboard state of g, nil when none is served.
func (g *Gateway) dashboard() *dashState { return g.dash.Load() }

// newDashboard builds the dashboard of g and records it on g (calls are
// recorded and approvals queued from then on).
func newDashboard(g *Gateway, o *DashboardOptions, status func() map[string]any) (*dashState, error) {
	audit := o.AuditFile
	if audit == "" {
		audit = g.auditFile()
	}
	q, err := admin.NewApprovals(admin.ApprovalOptions{Timeout: o.ApprovalTimeout, AuditFile: audit, AuditLock: files.Lock})
	if err != nil {
		return nil, &Error{Kind: KindGateway, Message: "cannot open the approvals audit log: " + err.Error(), Remedy: fixText("fix the state directory, or set SLUICE_STATE_DIR"), Err: err}
	}
	act := admin.NewActivity(nil)
	token, made := o.Token, ""
	if token == "" {
		token = admin.NewToken()
		made = token
	}
	h, err := admin.New(&admin.Options{
		Backend: &dashBackend{g: g, planText: o.PlanText}, Token: token, TokenGenerated: made != "", Remote: o.Remote,
		Approvals: q, Activity: act, Logger: g.log, Version: o.Version, Status: status,
	})
	if err != nil {
		return nil, err
	}
	d := &dashState{activity: act, approvals: q, handler: h, madeToken: made}
	g.dash.Store(d)
	return d, nil
}

// listenDashboard serves d on its own listener until ctx ends.
func listenDashboard(ctx context.Context, g *Gateway, d *dashState, o *DashboardOptions) (stop func(), err error) {
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, &Error{Kind: KindBadInput, Message: fmt.Sprintf("dashboard address %q: want host:port, e.g. 127.0.0.1:8765", o.Addr), Err: err}
	}
	if !o.Remote {
		ip := net.ParseIP(host)
		if !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
			return nil, &Error{Kind: KindBadInput, Message: fmt.Sprintf("dashboard address %q is not a loopback address", o.Addr),
				Remedy: fixText("use 127.0.0.1:PORT, or pass --admin-remote (and a token) to open it on purpose")}
		}
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, &Error{Kind: KindBadInput, Message: fmt.Sprintf("cannot listen on %s for the dashboard: %v", o.Addr, err), Remedy: fixText("use a free loopback address such as 127.0.0.1:0"), Err: err}
	}
	srv := &http.Server{Handler: d.handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	go func() { _ = srv.Serve(ln) }()
	base := dashboardBase(ln.Addr().String())
	d.approvals.SetURL(base)
	g.log.Info("serving the dashboard", "url", base+admin.Path+"/")
	if o.OnListen != nil {
		o.OnListen(base, d.loginURL(base))
	}
	stopped := make(chan struct{})
	var once atomic.Bool
	stop = func() {
		if once.Swap(true) {
			return
		}
		close(stopped)
		d.approvals.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			_ = srv.Close()
		}
	}
	go func() {
		select {
		case <-ctx.Done():
			stop()
		case <-stopped:
		}
	}()
	return stop, nil
}

// dashboardBase is the URL a person opens for a dashboard bound to addr:
// a wildcard bind (0.0.0.0, ::) is reached at loopback, the address the
// dashboard's gate admits without --admin-remote.
func dashboardBase(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip.To4() == nil {
			host = "::1"
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}

// Dashboard serves the dashboard alone ('sluice dashboard') until ctx ends
// or SIGTERM, SIGINT or SIGHUP (its terminal closed) arrives (the last two
// unless started ignored, see stopSignals); the gateway is closed when it
// returns.
func Dashboard(ctx context.Context, g *Gateway, o DashboardOptions) error {
	defer g.Close()
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	ctx, cancel := signal.NotifyContext(ctx, stopSignals()...)
	defer cancel()
	d, err := newDashboard(g, &o, func() map[string]any { return map[string]any{"transport": "dashboard only"} })
	if err != nil {
		return err
	}
	stop, err := listenDashboard(ctx, g, d, &o)
	if err != nil {
		return err
	}
	<-ctx.Done()
	stop()
	return nil
}

// Call records the call for the dashboard when one is served.
func (g *Gateway) Call(ctx context.Context, req CallRequest) (*CallResult, error) {
	d := g.dashboard()
	if d == nil {
		return g.call(ctx, req)
	}
	start := time.Now()
	res, err := g.call(ctx, req)
	c := admin.Call{Time: start, Capability: req.Capability, Duration: time.Since(start), BytesIn: len(req.Arguments), Surface: "cli"}
	c.Server, _, _ = SplitCapability(req.Capability)
	if rid, ok := ctx.Value(agentKey{}).(string); ok {
		c.RequestID, c.Surface = rid, "agent"
	} else if cl, ok := ctx.Value(callerKey{}).(caller); ok {
		c.RequestID, c.Surface = cl.p.RequestID(), "agent"
	}
	if _, ok := ctx.Value(dashKey{}).(bool); ok {
		c.Surface = "dashboard"
	}
	if req.Raw {
		c.Surface = "script"
	}
	switch {
	case err == nil && res.IsError:
		c.Outcome, c.BytesOut = "tool-error", len(res.Result)
	case err == nil:
		c.Outcome, c.BytesOut = "ok", len(res.Result)
	case KindOf(err) == KindRefused || KindOf(err) == KindUntrusted:
		c.Outcome = "refused"
	default:
		c.Outcome = "error"
	}
	d.activity.Record(c)
	return res, err
}

// askDashboard queues r for a decision in the dashboard, when one is
// served; the error then says where to decide.
func (g *Gateway) askDashboard(ctx context.Context, r admin.ApprovalRequest) (bool, error) {
	d := g.dashboard()
	if d == nil {
		return false, errors.New("the agent's client does not support elicitation, and no dashboard is served to approve it in (serve --http serves one under /admin/, or add --admin 127.0.0.1:PORT)")
	}
	ok, err := d.approvals.Ask(ctx, r)
	if err != nil || !ok {
		return false, errors.New(d.approvals.WaitText(err))
	}
	return true, nil
}

// auditFile is the audit log every process of this state directory
// appends to: <state dir>/audit.jsonl.
func (g *Gateway) auditFile() string { return filepath.Join(g.stateDir, "audit.jsonl") }

// viaCLI is the audit log's Via of a decision made through the gateway's
// exported API, which the command line calls (sluice trust, untrust,
// review --accept); the dashboard's decisions say dashboard.
const viaCLI = "cli"

// audit records a decision taken outside the approvals queue
// (elicitation, the dashboard's own forms, the command line) in the audit
// log: through the dashboard's queue when this process serves one (so its
// Activity page has it at once), else straight into the file. Either way
// the file's writers are serialised across processes (files.Lock).
func (g *Gateway) audit(dec admin.Decision) {
	var err error
	if d := g.dashboard(); d != nil {
		err = d.approvals.Audit(dec)
	} else {
		err = admin.AuditLog{Path: g.auditFile(), Lock: files.Lock}.Append(dec)
	}
	if err != nil {
		g.log.Warn("writing the approvals audit log failed", "file", g.auditFile(), "error", err.Error())
	}
}

// ScriptApproval is what a surface asks a person before a script whose
// pre-flight names capabilities that need approval runs: the whole set at
// once, bound to the script's digest.
type ScriptApproval struct {
	Capabilities []string
	Classes      map[string]string // capability -> action class
	Digest       string            // sha256 of the script source, hex
	Script       string
}

func scriptDigest(src string) string {
	s := sha256.Sum256([]byte(src))
	return hex.EncodeToString(s[:])
}

// dashBackend is admin.Backend over a gateway.
type dashBackend struct {
	g        *Gateway
	planText func(*TrustPlan) string
}

var _ admin.Backend = (*dashBackend)(nil)

func (b *dashBackend) Servers(ctx context.Context) ([]admin.Server, []string, error) {
	rep := b.g.Servers()
	b.g.AddToolChanges(rep)
	var globs []ExposeGlob
	var exposed map[string][]ExposedTool
	if d := b.g.dashboard(); d != nil && d.exposure != nil {
		globs, exposed = d.exposure()
	} else {
		globs, exposed = b.g.exposureOf(rep.Servers, nil)
	}
	found, _ := b.g.Find(ctx, FindRequest{Limit: 1})
	fs := map[string]FindServer{}
	if found != nil {
		for _, s := range found.Servers {
			fs[s.ID] = s
		}
	}
	var out []admin.Server
	for _, v := range rep.Servers {
		// Args as 'sluice servers' shows them: a user declaration's literal
		// credentials hidden (admin masks env, headers and the url itself).
		s := admin.Server{ID: v.ID, Scope: v.Scope, File: v.File, Line: v.Line, Kind: "stdio", Command: v.Command, Args: v.Masked().Args, URL: v.URL,
			Env: v.Env, Headers: v.Headers, Trust: v.Trust, ActionClass: v.ActionClass, Reason: v.Reason, Remedy: v.Remedy, Changed: v.Changed,
			Run: string(v.Run), RunError: v.RunError}
		switch {
		case v.URL != "":
			s.Kind = "remote"
		case len(v.CLI) > 0:
			s.Kind = "cli"
		}
		if f, ok := fs[v.ID]; ok {
			s.Provenance, s.Tools = string(f.Provenance), f.Tools
			if f.RecordedAt != nil {
				s.RecordedAt = *f.RecordedAt
			}
		}
		s.StderrTail = b.g.redactedTail(ctx, b.g.stderrTail(v.ID))
		if tc := v.ToolChange; tc != nil {
			s.ToolChange, s.Held = tc.Summary, tc.Held
		}
		for _, e := range exposed[v.ID] {
			s.Exposed = append(s.Exposed, admin.ExposedTool{Capability: e.Capability, Globs: e.Globs})
		}
		out = append(out, s)
	}
	var diags []string
	for _, d := range rep.Diagnostics {
		diags = append(diags, d.String())
	}
	for _, e := range globs {
		if len(e.Tools) == 0 {
			diags = append(diags, fmt.Sprintf("expose glob %s from %s exposes nothing now: no listed tool matches (untrusted, hidden by tools: or the profile, held for review, or not in the catalog yet)", e.Glob, e.Source))
		}
	}
	return out, diags, nil
}

// stderrTail is the stderr tail of the server's last failure, when its
// slot kept one.
func (g *Gateway) stderrTail(id string) string {
	g.mu.Lock()
	s := g.ups[id]
	g.mu.Unlock()
	if s == nil {
		return ""
	}
	_, err := s.State()
	var me *mcp.Error
	if errors.As(err, &me) {
		return me.StderrTail
	}
	return ""
}

// redactedTail is a stderr tail as the dashboard may show it: through
// the redaction filters, as the same lines relayed to the log are (a
// server that prints a secret while it fails must not put it on a page).
// A tail that cannot be redacted is withheld.
func (g *Gateway) redactedTail(ctx context.Context, tail string) string {
	if tail == "" {
		return ""
	}
	obj, _ := json.Marshal(map[string]string{"stderr": tail})
	out, err := g.RedactLog(ctx, obj)
	var v struct{ Stderr string }
	if err == nil {
		err = json.Unmarshal(out, &v)
	}
	if err != nil {
		g.log.Warn("the dashboard withholds a server's stderr tail the redaction filters could not clear", "error", errMessage(err))
		return "(the stderr tail is withheld: its redaction failed)"
	}
	return v.Stderr
}

func (b *dashBackend) TrustPrompt(_ context.Context, id string) (*admin.TrustOffer, error) {
	p, err := b.g.PlanTrust(id, "")
	if err != nil {
		return nil, errors.New(errMessage(err))
	}
	// Exactly the CLI's text: a project declaration's literal values are
	// in a repository file and are what is being trusted, so they are
	// shown as declared (references unexpanded).
	v := p.Server
	offer := &admin.TrustOffer{Digest: p.Server.Digest, Program: p.Server.Program}
	if b.planText != nil {
		offer.Text = b.planText(p)
	} else {
		offer.Text = fmt.Sprintf("Trusting project server %s\n  declared at: %s:%d\n  digest: %s\n  trust file: %s\n", v.ID, v.File, v.Line, v.Digest, p.TrustFile)
	}
	return offer, nil
}

// Trust plans afresh and records it only when the plan binds what the
// person was shown: a declaration swapped between the view and the click
// is refused, not trusted.
func (b *dashBackend) Trust(_ context.Context, id, digest, program string) error {
	p, err := b.g.PlanTrust(id, "")
	if err != nil {
		return errors.New(errMessage(err))
	}
	if p.Server.Digest != digest || p.Server.Program != program {
		return admin.ErrTrustChanged
	}
	if err := b.g.trust(p, "dashboard"); err != nil {
		return errors.New(errMessage(err))
	}
	return nil
}

func (b *dashBackend) Untrust(_ context.Context, id string) error {
	removed, err := b.g.untrust(id, "dashboard")
	if err != nil {
		return errors.New(errMessage(err))
	}
	if !removed {
		return fmt.Errorf("server %s had no trust record", id)
	}
	return nil
}

func (b *dashBackend) Refresh(ctx context.Context, id string) error {
	_, err := b.g.Find(ctx, FindRequest{Server: id, Refresh: true, Limit: 1})
	if err != nil {
		return errors.New(errMessage(err))
	}
	return nil
}

func (b *dashBackend) Restart(_ context.Context, id string) error {
	v, err := b.g.server(id)
	if err != nil {
		return errors.New(errMessage(err))
	}
	b.g.mu.Lock()
	s := b.g.ups[v.ID]
	delete(b.g.ups, v.ID)
	b.g.mu.Unlock()
	if s == nil {
		return fmt.Errorf("server %s is not running; its next call starts it", id)
	}
	s.Shutdown()
	return nil
}

func (b *dashBackend) Find(ctx context.Context, q string, limit int) ([]admin.Tool, error) {
	r, err := b.g.Find(ctx, FindRequest{Query: q, Limit: limit})
	if err != nil {
		return nil, errors.New(errMessage(err))
	}
	out := make([]admin.Tool, 0, len(r.Tools))
	for _, t := range r.Tools {
		desc := t.Description
		if len(desc) > 300 {
			desc = firstLine(desc, 300)
		}
		out = append(out, admin.Tool{Capability: t.Capability, Server: t.Server, Title: t.Title, Description: desc, ReadOnly: t.ReadOnly, Score: t.Score})
	}
	return out, nil
}

func (b *dashBackend) Describe(ctx context.Context, capName string) (*admin.ToolDetail, error) {
	d, err := b.g.Describe(ctx, capName)
	if err != nil {
		return nil, errors.New(errMessage(err))
	}
	raw, _ := json.Marshal(d)
	return &admin.ToolDetail{Capability: d.Capability, Description: d.Description, Signature: d.Signature, ActionClass: d.ActionClass,
		Admission: d.Admission, InputSchema: d.InputSchema, JSON: raw}, nil
}

func (b *dashBackend) Call(ctx context.Context, capName string, args json.RawMessage, approved bool) (*admin.CallOutcome, error) {
	ctx = context.WithValue(ctx, dashKey{}, true)
	req := CallRequest{Capability: capName, Arguments: args}
	if approved {
		req.Approve = func(_ context.Context, r ApprovalRequest) (bool, error) {
			b.g.audit(admin.Decision{Kind: "call", Capabilities: []string{r.Capability}, Via: "dashboard form", Approved: true})
			return true, nil
		}
	}
	r, err := b.g.Call(ctx, req)
	if err != nil {
		return nil, errors.New(errMessage(err))
	}
	return &admin.CallOutcome{Result: r.Result, IsError: r.IsError, RawBytes: r.RawBytes, Duration: r.Duration}, nil
}

func (b *dashBackend) Execute(ctx context.Context, script string, approved bool) (json.RawMessage, error) {
	ctx = context.WithValue(ctx, dashKey{}, true)
	req := ExecuteRequest{Script: script, Filename: "dashboard.star"}
	if approved {
		req.Approve = func(_ context.Context, a ScriptApproval) (bool, error) {
			b.g.audit(admin.Decision{Kind: "script", Capabilities: a.Capabilities, Digest: a.Digest, Via: "dashboard form", Approved: true})
			return true, nil
		}
	}
	r, err := b.g.Execute(ctx, req)
	if err != nil {
		return nil, errors.New(errMessage(err))
	}
	return json.Marshal(r)
}

func (b *dashBackend) Signatures(ctx context.Context) (string, error) {
	rep := b.g.Servers()
	var parts []string
	for _, v := range rep.Servers {
		if !v.Trusted() {
			continue
		}
		if d, err := b.g.Docs(ctx, v.ID); err == nil {
			parts = append(parts, d)
		}
	}
	return strings.Join(parts, "\n"), nil
}

func (b *dashBackend) Limits(context.Context) []string {
	lim := b.g.scriptLimits(0)
	def := func(v, d int) int {
		if v <= 0 {
			return d
		}
		return v
	}
	lim.MaxCalls = def(lim.MaxCalls, sandbox.DefaultMaxCalls)
	lim.MaxResultBytes = def(lim.MaxResultBytes, sandbox.DefaultMaxResultBytes)
	lim.MaxLogBytes = def(lim.MaxLogBytes, sandbox.DefaultMaxLogBytes)
	if lim.MaxMemoryBytes <= 0 {
		lim.MaxMemoryBytes = sandbox.DefaultMaxMemoryBytes
	}
	return []string{
		"time " + lim.Timeout.String(),
		fmt.Sprintf("calls %d", lim.MaxCalls),
		fmt.Sprintf("concurrency %d per server", lim.MaxConcurrency),
		fmt.Sprintf("result %d bytes", lim.MaxResultBytes),
		fmt.Sprintf("logs %d bytes", lim.MaxLogBytes),
		fmt.Sprintf("memory %d bytes", lim.MaxMemoryBytes),
	}
}

func (b *dashBackend) Filters(context.Context) ([]admin.Filter, error) {
	var out []admin.Filter
	for _, f := range b.g.FilterStatuses() {
		out = append(out, admin.Filter{Name: f.Name, Module: f.Module, Stage: f.Stage, State: f.State, Calls: f.Calls, Failures: f.Failures,
			LastError: f.LastError, DisabledFor: f.DisabledFor, P50: f.P50})
	}
	return out, nil
}

func (b *dashBackend) EnableFilter(_ context.Context, name string) ([]string, error) {
	return b.g.EnableFilters(name), nil
}

func (b *dashBackend) TestFilter(ctx context.Context, module string, cfg json.RawMessage, input []byte) (json.RawMessage, error) {
	if module == "" {
		return nil, errors.New("name the filter module: builtin:NAME or a path to a .wasm file")
	}
	if len(cfg) > 0 && !json.Valid(cfg) {
		return nil, errors.New("the filter config is not valid JSON")
	}
	r, err := FilterTest(ctx, FilterTestRequest{Module: module, Config: cfg, Input: input, CacheDir: CompileCacheDir(os.Getenv)})
	if err != nil {
		return nil, errors.New(errMessage(err))
	}
	return json.Marshal(r)
}

func (b *dashBackend) Results(context.Context) ([]admin.StoredResult, error) {
	p := b.g.pipeline
	if p == nil || p.storeDir == "" {
		return nil, nil
	}
	ents, err := os.ReadDir(p.storeDir)
	if err != nil {
		return nil, err
	}
	var out []admin.StoredResult
	for _, e := range ents {
		h, ok := strings.CutSuffix(e.Name(), ".result")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil {
			out = append(out, admin.StoredResult{Handle: h, Bytes: fi.Size(), Modified: fi.ModTime()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Modified.After(out[j].Modified) })
	if len(out) > 500 {
		out = out[:500]
	}
	return out, nil
}

func (b *dashBackend) ReadResult(_ context.Context, handle string, offset, length int64) (*admin.ResultPage, error) {
	p, err := b.g.ReadResult(handle, offset, length)
	if err != nil {
		return nil, errors.New(errMessage(err))
	}
	out := &admin.ResultPage{Handle: p.Handle, Offset: p.Offset, Next: p.Next, Total: p.Total, EOF: p.EOF, Data: p.Data}
	if !utf8.ValidString(p.Data) {
		out.Data, out.Base64 = base64.StdEncoding.EncodeToString([]byte(p.Data)), true
	}
	return out, nil
}
