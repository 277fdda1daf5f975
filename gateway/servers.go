package gateway

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"sluice/gateway/admin"
	"sluice/gateway/config"
	"sluice/gateway/proc"
	"sluice/gateway/trust"
)

// ServerView is one declared server as sluice sees it now: where it was
// declared, whether it may run, and how it is running.
type ServerView struct {
	ID      string   `json:"id"`
	Scope   string   `json:"scope"`
	File    string   `json:"file"`
	Line    int      `json:"line"`
	Column  int      `json:"column"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Cwd     string   `json:"cwd"`
	// Env is the env as declared: ${env:NAME} references are shown as
	// written, never expanded, so no gateway value appears here.
	Env      map[string]string `json:"env,omitempty"`
	PassEnv  []string          `json:"passEnv,omitempty"`
	Receives []config.Grant    `json:"receives,omitempty"` // gateway variables the server receives (names only)
	// Program is the absolute path the command resolves to on the
	// gateway's PATH ("" when not found); trust records bind it.
	Program string `json:"program,omitempty"`
	Digest  string `json:"digest"`
	// CLI lists a cli server's tools (Command and Args are then empty).
	CLI []CLIToolView `json:"cli,omitempty"`

	// URL and Transport are set for a remote server (Command is empty).
	// Headers are as declared, like Env: references shown, never expanded.
	URL       string            `json:"url,omitempty"`
	Transport string            `json:"transport,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	// Auth is a remote server's stored OAuth state: "none", "authorized
	// until ...", "expired, refreshable", "expired", or "header" when a
	// declared Authorization header is sent instead.
	Auth string `json:"auth,omitempty"`

	Trust       string `json:"trust"` // trusted | untrusted | stale
	ActionClass string `json:"actionClass"`
	// ClassSet: the class comes from the declaration or trust record; when
	// false a trusted server's read-only tool annotations may decide.
	ClassSet bool     `json:"actionClassSet"`
	Reason   string   `json:"reason,omitempty"`
	Remedy   string   `json:"remedy,omitempty"`
	Review   string   `json:"review,omitempty"`
	Changed  []string `json:"changed,omitempty"`

	Run      RunState `json:"run"`
	RunError string   `json:"runError,omitempty"`
	// ToolChange is set (by AddToolChanges) when the server's tools differ
	// from their reviewed baseline.
	ToolChange *ToolChange `json:"toolChange,omitempty"`
	// Exposed are the tools expose globs list directly beside the gateway
	// tools (set by AddExposure).
	Exposed []ExposedTool `json:"exposed,omitempty"`

	decl config.Server
}

// Trusted reports whether the server may be launched.
func (v *ServerView) Trusted() bool { return v.Trust == string(trust.Trusted) }

// Report is the whole picture: servers plus every diagnostic of both
// declaration files and the trust file.
type Report struct {
	ConfigDir   string       `json:"configDir"`
	UserFile    string       `json:"userFile"`
	ProjectRoot string       `json:"projectRoot,omitempty"`
	ProjectFile string       `json:"projectFile,omitempty"`
	Servers     []ServerView `json:"servers"`
	// Expose lists the expose globs of the declarations and what each
	// exposes now (set by AddExposure).
	Expose      []ExposeGlob `json:"expose,omitempty"`
	Diagnostics []Diagnostic `json:"diagnostics,omitempty"`
	Errors      bool         `json:"errors"`
}

// Diagnostic is one problem in a declaration or trust file.
type Diagnostic struct {
	Severity string `json:"severity"`
	File     string `json:"file"`
	Line     int    `json:"line,omitempty"`
	Column   int    `json:"column,omitempty"`
	Field    string `json:"field,omitempty"`
	Message  string `json:"message"`
	Fix      string `json:"fix,omitempty"`
}

func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.File)
	if d.Line > 0 {
		fmt.Fprintf(&b, ":%d", d.Line)
		if d.Column > 0 {
			fmt.Fprintf(&b, ":%d", d.Column)
		}
	}
	fmt.Fprintf(&b, ": %s: ", d.Severity)
	if d.Field != "" {
		b.WriteString(d.Field + ": ")
	}
	b.WriteString(d.Message)
	if d.Fix != "" {
		b.WriteString(" (fix: " + d.Fix + ")")
	}
	return b.String()
}

// Servers resolves every declared server against the trust file.
func (g *Gateway) Servers() *Report {
	l := g.reload()
	st := g.trustState()
	r := &Report{ConfigDir: l.ConfigDir, UserFile: l.UserFile, ProjectRoot: l.ProjectRoot, ProjectFile: l.ProjectFile, Errors: l.Errors()}
	for _, d := range l.Diagnostics {
		r.Diagnostics = append(r.Diagnostics, Diagnostic{Severity: string(d.Severity), File: d.File, Line: d.Line, Column: d.Column, Field: d.Field, Message: d.Message, Fix: d.Fix})
	}
	for _, d := range st.Diagnostics {
		r.Diagnostics = append(r.Diagnostics, Diagnostic{Severity: "error", File: d.File, Message: d.Message, Fix: d.Fix})
		r.Errors = true
	}
	for _, d := range st.Warnings {
		r.Diagnostics = append(r.Diagnostics, Diagnostic{Severity: "warning", File: d.File, Message: d.Message, Fix: d.Fix})
	}
	for _, w := range g.allowWarnings {
		r.Diagnostics = append(r.Diagnostics, Diagnostic{Severity: "warning", File: "$SLUICE_ALLOW_COMMANDS", Message: w,
			Fix: "list bare program names separated by commas, like node,uvx"})
	}
	sc := g.scopeOf(l)
	for _, d := range l.Servers {
		if !sc.hasServer(d.ID) {
			continue
		}
		r.Servers = append(r.Servers, g.view(d, l, st))
		for _, dg := range envDiagnostics(d) {
			r.Diagnostics = append(r.Diagnostics, dg)
			r.Errors = true
		}
	}
	return r
}

// envDiagnostics reports, before anything launches, every env entry and
// passEnv name the launcher would refuse (LD_PRELOAD, NODE_OPTIONS ...),
// each with its reason code. The launcher refuses them again at spawn.
func envDiagnostics(d config.Server) []Diagnostic {
	var out []Diagnostic
	add := func(field string, err error) {
		// The launcher's message names the variable, the reason code and
		// the fix; it never carries a value.
		out = append(out, Diagnostic{Severity: "error", File: d.File, Line: d.Line, Column: d.Column, Field: field, Message: err.Error()})
	}
	keys := make([]string, 0, len(d.Env))
	for k := range d.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, err := proc.BuildEnv(map[string]string{k: "x"}, nil, nil); err != nil {
			add("servers."+d.ID+".env."+k, err)
		}
	}
	for _, k := range d.PassEnv {
		if _, err := proc.BuildEnv(nil, []string{k}, []string{k + "=x"}); err != nil {
			add("servers."+d.ID+".passEnv", err)
		}
	}
	return out
}

func (g *Gateway) view(d config.Server, l *config.Loaded, st *trust.State) ServerView {
	v := ServerView{
		ID: d.ID, Scope: string(d.Scope), File: d.File, Line: d.Line, Column: d.Column,
		Command: d.Command, Args: d.Args, Cwd: d.Dir, PassEnv: d.PassEnv, Digest: d.Digest,
		Receives: d.Grants(), Program: d.Program,
		URL: d.URL, Transport: d.Transport,
		decl: d,
	}
	if len(d.Env) > 0 {
		v.Env = d.Env
	}
	v.CLI = cliViews(d)
	if len(d.Headers) > 0 {
		v.Headers = d.Headers
	}
	v.Auth = g.authState(d)
	ts := trust.Resolve(trust.Decl{
		Program:      d.Program,
		Scope:        trust.Scope(d.Scope),
		ProjectRoot:  l.ProjectRoot,
		ID:           d.ID,
		Digest:       d.Digest,
		FieldDigests: d.FieldDigests(),
		ActionClass:  d.ActionClass,
	}, st)
	v.Trust, v.ActionClass, v.ClassSet, v.Reason, v.Remedy, v.Review, v.Changed = string(ts.Status), ts.ActionClass, ts.ClassSet, ts.Reason, ts.Remedy, ts.Review, ts.Changed
	v.Run = RunIdle
	if s := g.peekSlot(d.ID, d.Digest); s != nil {
		st, err := s.State()
		run := RunState(st)
		v.Run = run
		if err != nil && run != RunReady {
			v.RunError = err.Error()
		}
	}
	return v
}

// server resolves one declared server by id.
func (g *Gateway) server(id string) (ServerView, error) {
	return g.serverIn(g.reload(), g.trustState(), id)
}

// serverIn resolves one declared server by id in l against st.
func (g *Gateway) serverIn(l *config.Loaded, st *trust.State, id string) (ServerView, error) {
	if e, hidden := g.hiddenServerErr(l, id); hidden {
		return ServerView{}, e
	}
	d, ok := l.Server(id)
	if !ok {
		if err := notLoadedErr(l, id); err != nil {
			return ServerView{}, err
		}
		sc := g.scopeOf(l)
		known := make([]string, 0, len(l.Servers))
		for _, s := range l.Servers {
			if sc.hasServer(s.ID) {
				known = append(known, s.ID)
			}
		}
		msg := fmt.Sprintf("no server %q is declared", id)
		if len(known) > 0 {
			msg += " (declared: " + strings.Join(known, ", ") + ")"
		}
		if near := Suggest(id, known); near != "" {
			msg += "; did you mean " + near + "?"
		}
		for _, d := range l.Diagnostics {
			msg += brokenFileNote(d.Severity == config.SeverityError, d.File, d.Line, d.Message)
		}
		return ServerView{}, &Error{Kind: KindUnknown, Server: id, Message: msg, Remedy: Remedy{Step: StepServers}}
	}
	return g.view(d, l, st), nil
}

// BrokenFileNote says, for a message that a server is not declared, which
// declaration file declares nothing because of a fatal error (a YAML
// syntax error, an unreadable file), where the server may be meant to be:
// "; FILE:LINE declares nothing: WHY". It is "" when every file loaded.
func BrokenFileNote(ds []Diagnostic) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(brokenFileNote(d.Severity == string(config.SeverityError), d.File, d.Line, d.Message))
	}
	return b.String()
}

func brokenFileNote(isErr bool, file string, line int, msg string) string {
	if !isErr || !strings.Contains(msg, "contributes nothing") {
		return ""
	}
	if line > 0 {
		file += ":" + strconv.Itoa(line)
	}
	why := strings.TrimSuffix(strings.TrimSuffix(msg, "; the file contributes nothing"), "; it contributes nothing")
	return fmt.Sprintf("; %s declares nothing: %s", file, why)
}

// notLoadedErr is the error for a server id that is declared but was not
// loaded because its declaration has errors: it names the first error,
// where it is and its fix (nil when no error concerns id).
func notLoadedErr(l *config.Loaded, id string) error {
	var first *config.Diagnostic
	n := 0
	for i, d := range l.Diagnostics {
		if d.Severity != config.SeverityError || (d.Field != "servers."+id && !strings.HasPrefix(d.Field, "servers."+id+".")) {
			continue
		}
		if first == nil {
			first = &l.Diagnostics[i]
		}
		n++
	}
	if first == nil {
		return nil
	}
	at := fmt.Sprintf("%s:%d:%d", first.File, first.Line, first.Column)
	msg := fmt.Sprintf("server %q is declared but not loaded: its declaration has an error at %s: %s: %s", id, at, first.Field, first.Message)
	if n > 1 {
		msg += fmt.Sprintf(" (and %d more errors)", n-1)
	}
	fix := first.Fix
	if fix == "" {
		fix = "correct " + first.Field
	}
	return &Error{Kind: KindBadInput, Server: id, Message: msg,
		Remedy: Remedy{Before: fix + " at " + at + ", then run 'sluice check'", Step: StepUser}}
}

// untrustedErr is the refusal for a server that may not run.
func untrustedErr(v ServerView) *Error {
	msg := fmt.Sprintf("server %s is %s: %s", v.ID, v.Trust, v.Reason)
	remedy := v.Remedy
	if v.Review != "" {
		remedy = "review it with '" + v.Review + "', then run '" + v.Remedy + "'"
	} else if remedy != "" {
		remedy = "run '" + remedy + "'"
	}
	e := &Error{Kind: KindUntrusted, Server: v.ID, Message: msg}
	if remedy != "" {
		e.Remedy = fixUser(remedy)
	}
	return e
}

// TrustPlan is what 'sluice trust' is about to record, for showing first.
type TrustPlan struct {
	Server      ServerView
	ProjectRoot string
	ActionClass string
	TrustFile   string
}

// PlanTrust resolves a project server for trusting; it writes nothing.
func (g *Gateway) PlanTrust(id, actionClass string) (*TrustPlan, error) {
	switch actionClass {
	case "", trust.ActionRead, trust.ActionExecute, trust.ActionUnknown:
	default:
		return nil, &Error{Kind: KindBadInput, Message: fmt.Sprintf("action class %q is not one of read, execute, unknown", actionClass)}
	}
	v, err := g.server(id)
	if err != nil {
		return nil, err
	}
	if v.Scope != string(config.ScopeProject) {
		return nil, &Error{Kind: KindBadInput, Server: id, Message: fmt.Sprintf("server %s is declared in user scope (%s) and is trusted by authorship; trust records are for project declarations", id, v.File),
			Remedy: fixText("set actionClass in the user declaration instead")}
	}
	if v.Program == "" && v.decl.Command != "" {
		// Trust binds the program the command resolves to; there is none.
		return nil, &Error{Kind: KindBadInput, Server: id, Message: fmt.Sprintf("server %s: command %q is not found on your PATH, so there is no program to trust", id, v.Command),
			Remedy: fixUser("install the program, then run 'sluice trust " + id + "' again")}
	}
	if actionClass == "" {
		// Re-trusting keeps the class already recorded; a first record has
		// none: tools annotated read-only run, every other call asks.
		if rec, ok := g.trustState().Find(g.reload().ProjectRoot, id); ok {
			actionClass = rec.ActionClass
		}
	}
	return &TrustPlan{Server: v, ProjectRoot: g.reload().ProjectRoot, ActionClass: actionClass, TrustFile: trust.FilePath(g.configDir)}, nil
}

// Trust records the plan in the trust file, and the decision in the audit
// log (via cli).
func (g *Gateway) Trust(p *TrustPlan) error { return g.trust(p, viaCLI) }

// trust is Trust with the audit log's Via.
func (g *Gateway) trust(p *TrustPlan, via string) error {
	if err := proc.MkdirPrivate(g.configDir); err != nil {
		return &Error{Kind: KindGateway, Message: "cannot create the config directory: " + err.Error(), Err: err}
	}
	d := p.Server.decl
	err := trust.Upsert(p.TrustFile, trust.Record{
		ProjectRoot: p.ProjectRoot,
		ID:          d.ID,
		Digest:      d.Digest,
		Fields:      d.FieldDigests(),
		Program:     d.Program,
		ActionClass: p.ActionClass,
		TrustedAt:   g.opts.now(),
	})
	g.invalidateViews()
	if err != nil {
		return &Error{Kind: KindGateway, Server: d.ID, Message: "cannot record trust: " + err.Error(), Err: err}
	}
	g.audit(admin.Decision{Kind: "trust", Capabilities: []string{d.ID}, Digest: d.Digest, ProjectRoot: p.ProjectRoot,
		Class: p.ActionClass, Via: via, Approved: true})
	// A project server's baseline is recorded at trust time: the first
	// listing after this trust is what later listings are compared with.
	if err := g.removeBaseline(g.catalogIdentity(d)); err != nil {
		return &Error{Kind: KindGateway, Server: d.ID, Message: "trust recorded, but the old tool baseline could not be removed: " + err.Error(), Err: err}
	}
	return nil
}

// Untrust removes the trust record of a project server; it reports whether
// one existed. A running instance is closed. A removal is recorded in the
// audit log (via cli).
func (g *Gateway) Untrust(id string) (bool, error) { return g.untrust(id, viaCLI) }

// untrust is Untrust with the audit log's Via.
func (g *Gateway) untrust(id, via string) (bool, error) {
	l := g.reload()
	if l.ProjectRoot == "" {
		return false, &Error{Kind: KindBadInput, Message: "no project root; run inside a project or pass --project DIR"}
	}
	if d, ok := l.Server(id); ok && d.Scope == config.ScopeUser {
		return false, &Error{Kind: KindBadInput, Server: id, Message: fmt.Sprintf("server %s is declared in user scope and has no trust record; remove or edit its declaration in %s", id, d.File)}
	}
	removed, err := trust.Remove(trust.FilePath(g.configDir), l.ProjectRoot, id)
	g.invalidateViews()
	if err != nil {
		return false, &Error{Kind: KindGateway, Server: id, Message: "cannot update the trust file: " + err.Error(), Err: err}
	}
	if removed {
		g.audit(admin.Decision{Kind: "untrust", Capabilities: []string{id}, ProjectRoot: l.ProjectRoot, Via: via, Approved: false})
	}
	g.mu.Lock()
	s := g.ups[id]
	delete(g.ups, id)
	g.mu.Unlock()
	if s != nil {
		g.goBG(func() { s.Shutdown() })
	}
	return removed, nil
}
