package admin

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Path is where the dashboard lives on any listener.
const Path = "/admin"

// Bounds of what one request may ask.
const (
	maxBody      = 1 << 20 // a form or JSON body
	maxFindLimit = 200
	actionWait   = 2 * time.Minute // a refresh, call or script from the dashboard
	pageBytes    = 16 << 10        // the Results viewer's page
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Options configures New.
type Options struct {
	Backend Backend
	// Token, when set, is asked once by a login form; a session cookie
	// (HttpOnly, SameSite=Strict) keeps the login. Nothing else is
	// served before. See NewToken for a dashboard without an operator's
	// token.
	Token string
	// TokenGenerated says Token was made for this process (NewToken), so
	// the login page points at the login link instead of the operator's
	// token file.
	TokenGenerated bool
	// Remote admits peers that are not loopback (serve --admin-remote).
	// Without it every request from another address is 403, however the
	// listener was bound. Remote needs a Token: New refuses it without.
	Remote bool
	// AllowedHosts and AllowedOrigins extend the loopback names accepted
	// in Host and Origin, as on /mcp.
	AllowedHosts   []string
	AllowedOrigins []string
	Approvals      *Approvals // nil = no approvals queue
	Activity       *Activity  // nil = no activity record
	Logger         *slog.Logger
	Version        string
	// Status adds the serving process's own facts (transport, mode,
	// address) to /admin/api/status.
	Status func() map[string]any
}

// Handler serves the dashboard under Path.
type Handler struct {
	o       Options
	b       Backend
	gate    *gate
	tmpl    map[string]*template.Template
	log     *slog.Logger
	started time.Time
}

// New builds the dashboard. It does not listen.
func New(o *Options) (*Handler, error) {
	if o == nil || o.Backend == nil {
		return nil, ErrNoBackend
	}
	if o.Remote && o.Token == "" {
		return nil, ErrRemoteNeedsToken
	}
	h := &Handler{o: *o, b: o.Backend, gate: newGate(o), log: o.Logger, started: time.Now()}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.o.Activity == nil {
		h.o.Activity = NewActivity(nil)
	}
	pages := []string{"login", "servers", "trust", "review", "tools", "filters", "results", "activity", "metrics"}
	h.tmpl = map[string]*template.Template{}
	for _, p := range pages {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+p+".html")
		if err != nil {
			return nil, fmt.Errorf("admin: template %s: %w", p, err)
		}
		h.tmpl[p] = t
	}
	return h, nil
}

// Activity is the record calls go to.
func (h *Handler) Activity() *Activity { return h.o.Activity }

var funcs = template.FuncMap{
	"ago": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return time.Since(t).Round(time.Second).String() + " ago"
	},
	"clock": func(t time.Time) string { return t.Format("15:04:05") },
	"dur": func(d time.Duration) string {
		if d == 0 {
			return "—"
		}
		return d.Round(10 * time.Microsecond).String()
	},
	"join": strings.Join,
	"keys": func(m map[string]string) []string {
		k := make([]string, 0, len(m))
		for x := range m {
			k = append(k, x)
		}
		sort.Strings(k)
		return k
	},
	"pretty": prettyJSON,
	"json": func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	},
}

func prettyJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return Visible(string(raw))
	}
	return Visible(b.String())
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin") // not no-referrer: it makes a form POST send "Origin: null"
	hd.Set("Cache-Control", "no-store")
	if !h.gate.peerAllowed(r) {
		h.log.Warn("dashboard: refused a request from a non-loopback peer", "remote", r.RemoteAddr)
		http.Error(w, "Forbidden: the sluice dashboard answers loopback clients only (serve --admin-remote opens it on purpose)", http.StatusForbidden)
		return
	}
	if !h.gate.hostAllowed(r.Host) {
		http.Error(w, "Forbidden: Host header not allowed (DNS rebinding protection)", http.StatusForbidden)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !h.gate.originAllowed(r, o) {
		http.Error(w, "Forbidden: Origin not allowed (it must be this dashboard's own address)", http.StatusForbidden)
		return
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		http.Error(w, "Forbidden: a request from another site", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	p := strings.TrimPrefix(r.URL.Path, Path)
	if strings.HasPrefix(p, "/assets/") && r.Method == http.MethodGet {
		h.asset(w, strings.TrimPrefix(p, "/assets/"))
		return
	}
	if p == "/login" {
		h.login(w, r)
		return
	}
	if !h.gate.loggedIn(r) {
		if strings.HasPrefix(p, "/api/") {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "log in to the dashboard first (" + Path + "/login)"})
			return
		}
		http.Redirect(w, r, Path+"/login", http.StatusSeeOther)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if r.Method != http.MethodPost {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if !h.gate.csrfOK(r) {
			http.Error(w, "Forbidden: missing or wrong CSRF token (reload the page)", http.StatusForbidden)
			return
		}
		h.post(w, r, p)
		return
	}
	h.get(w, r, p)
}

func (h *Handler) asset(w http.ResponseWriter, name string) {
	name = path.Clean("/" + name)[1:]
	b, err := fs.ReadFile(assetFS, "assets/"+name)
	if err != nil || strings.HasSuffix(name, ".json") {
		http.NotFound(w, nil)
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "max-age=300")
	_, _ = w.Write(b)
}

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if !h.gate.hasTok {
		http.Redirect(w, r, Path+"/servers", http.StatusSeeOther)
		return
	}
	msg := ""
	if r.Method == http.MethodPost {
		if !h.gate.csrfOK(r) {
			http.Error(w, "Forbidden: missing or wrong CSRF token (reload the page)", http.StatusForbidden)
			return
		}
		if wait := h.gate.loginWait(r); wait > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(wait.Round(time.Second)/time.Second)+1))
			http.Error(w, fmt.Sprintf("Too many wrong tokens from your address: wait %s before trying again", wait.Round(time.Second)), http.StatusTooManyRequests)
			return
		}
		if h.gate.tokenOK(r.PostFormValue("token")) {
			h.gate.loginSucceeded(r)
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: h.gate.newSession(), Path: Path, HttpOnly: true,
				SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(loginTTL / time.Second)})
			http.Redirect(w, r, Path+"/servers", http.StatusSeeOther)
			return
		}
		h.gate.loginFailed(r)
		h.log.Warn("dashboard: a login with a wrong token", "remote", r.RemoteAddr)
		msg = "That is not the token this sluice was started with."
		w.WriteHeader(http.StatusUnauthorized)
	}
	h.render(w, "login", map[string]any{"Message": msg, "Generated": h.o.TokenGenerated})
}

// page is what every template gets.
type page struct {
	Title   string
	Nav     string
	CSRF    string
	Version string
	Pending int
	Flash   string
	Error   string
	Data    any
	Logout  bool // a token is configured: offer to log out
}

func (h *Handler) render(w http.ResponseWriter, name string, data any) {
	p := page{Title: name, Nav: name, CSRF: h.gate.csrf, Version: h.o.Version, Pending: len(h.o.Approvals.Pending()), Data: data}
	if pp, ok := data.(page); ok {
		pp.Nav, pp.CSRF, pp.Version, pp.Pending = name, h.gate.csrf, h.o.Version, len(h.o.Approvals.Pending())
		if pp.Title == "" {
			pp.Title = name
		}
		p = pp
	}
	p.Logout = h.gate.hasTok && name != "login"
	var b bytes.Buffer
	if err := h.tmpl[name].Execute(&b, p); err != nil {
		h.log.Error("dashboard: rendering failed", "page", name, "error", err.Error())
		http.Error(w, "the page could not be rendered: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func apiErr(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, map[string]string{"error": err.Error()})
}

func (h *Handler) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), actionWait)
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, p string) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	q := r.URL.Query()
	switch {
	case p == "" || p == "/":
		http.Redirect(w, r, Path+"/servers", http.StatusSeeOther)
	case p == "/servers":
		h.serversPage(w, r, "", nil)
	case strings.HasPrefix(p, "/servers/") && strings.HasSuffix(p, "/trust"):
		id := strings.TrimSuffix(strings.TrimPrefix(p, "/servers/"), "/trust")
		offer, err := h.b.TrustPrompt(ctx, id)
		pg := page{Title: "trust " + id, Data: map[string]any{"ID": id}}
		if err != nil {
			pg.Error = err.Error()
		} else {
			pg.Data = map[string]any{"ID": id, "Prompt": offer.Text, "Digest": offer.Digest, "Program": offer.Program}
		}
		h.render(w, "trust", pg)
	case strings.HasPrefix(p, "/servers/") && strings.HasSuffix(p, "/review"):
		h.reviewGet(w, r, strings.TrimSuffix(strings.TrimPrefix(p, "/servers/"), "/review"), false)
	case strings.HasPrefix(p, "/api/servers/") && strings.HasSuffix(p, "/review"):
		h.reviewGet(w, r, strings.TrimSuffix(strings.TrimPrefix(p, "/api/servers/"), "/review"), true)
	case p == "/tools":
		h.toolsPage(w, r, nil)
	case p == "/filters":
		h.filtersPage(w, r, "", nil)
	case p == "/results":
		h.resultsPage(w, r)
	case p == "/activity":
		h.render(w, "activity", page{Data: map[string]any{"Calls": h.o.Activity.Recent(200), "Pending": h.o.Approvals.Pending(),
			"Decisions": h.o.Approvals.Decisions(50), "Queue": h.o.Approvals != nil, "Total": h.o.Activity.Total()}})
	case p == "/metrics":
		h.render(w, "metrics", page{Data: map[string]any{"Series": h.o.Activity.Metrics()}})

	case p == "/api/status":
		writeJSON(w, http.StatusOK, h.status(ctx))
	case p == "/api/servers":
		s, diags, err := h.b.Servers(ctx)
		if err != nil {
			apiErr(w, http.StatusInternalServerError, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"servers": masked(s), "diagnostics": diags})
	case p == "/api/tools":
		limit, _ := strconv.Atoi(q.Get("limit"))
		t, err := h.b.Find(ctx, q.Get("q"), clampLimit(limit))
		if err != nil {
			apiErr(w, http.StatusBadRequest, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"tools": t})
	case p == "/api/describe":
		d, err := h.b.Describe(ctx, q.Get("capability"))
		if err != nil {
			apiErr(w, http.StatusNotFound, err)
			return
		}
		writeJSON(w, http.StatusOK, d)
	case p == "/api/filters":
		f, err := h.b.Filters(ctx)
		if err != nil {
			apiErr(w, http.StatusInternalServerError, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"filters": f})
	case p == "/api/results":
		rs, err := h.b.Results(ctx)
		if err != nil {
			apiErr(w, http.StatusInternalServerError, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"results": rs})
	case strings.HasPrefix(p, "/api/results/"):
		off, _ := strconv.ParseInt(q.Get("offset"), 10, 64)
		pg, err := h.b.ReadResult(ctx, strings.TrimPrefix(p, "/api/results/"), off, pageBytes)
		if err != nil {
			apiErr(w, http.StatusNotFound, err)
			return
		}
		writeJSON(w, http.StatusOK, pg)
	case p == "/api/activity":
		writeJSON(w, http.StatusOK, map[string]any{"calls": h.o.Activity.Recent(200), "total": h.o.Activity.Total(), "decisions": h.o.Approvals.Decisions(50)})
	case p == "/api/approvals":
		writeJSON(w, http.StatusOK, map[string]any{"pending": h.o.Approvals.Pending()})
	case p == "/api/metrics":
		writeJSON(w, http.StatusOK, map[string]any{"series": h.o.Activity.Metrics()})
	default:
		http.NotFound(w, r)
	}
}

// Status is the state of the serving process, for 'sluice status'.
func (h *Handler) status(ctx context.Context) map[string]any {
	out := map[string]any{"pid": os.Getpid(), "started": h.started, "version": h.o.Version, "calls": h.o.Activity.Total(),
		"pending": len(h.o.Approvals.Pending())}
	if h.o.Status != nil {
		for k, v := range h.o.Status() {
			out[k] = v
		}
	}
	if s, diags, err := h.b.Servers(ctx); err == nil {
		type brief struct {
			ID, Scope, Trust, Run, Provenance string
			Tools                             int
		}
		var bs []brief
		for _, x := range s {
			bs = append(bs, brief{x.ID, x.Scope, x.Trust, x.Run, x.Provenance, x.Tools})
		}
		out["servers"], out["diagnostics"] = bs, len(diags)
	}
	if f, err := h.b.Filters(ctx); err == nil {
		out["filters"] = f
	}
	return out
}

// Status is the JSON /admin/api/status answers, for callers in the same
// process (the serve's status socket).
func (h *Handler) Status(ctx context.Context) map[string]any { return h.status(ctx) }

func clampLimit(n int) int {
	if n <= 0 || n > maxFindLimit {
		return 50
	}
	return n
}

func (h *Handler) post(w http.ResponseWriter, r *http.Request, p string) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	api := strings.HasPrefix(p, "/api/")
	p = strings.TrimPrefix(p, "/api")
	done := func(flash string, err error, back func(flash, errText string)) {
		if api {
			if err != nil {
				apiErr(w, http.StatusBadRequest, err)
				return
			}
			writeJSON(w, http.StatusOK, map[string]string{"ok": flash})
			return
		}
		et := ""
		if err != nil {
			et = err.Error()
		}
		back(flash, et)
	}
	servers := func(flash, et string) { h.serversPage(w, r, flash, errorsNew(et)) }
	switch {
	case p == "/logout" && !api:
		h.gate.endSession(r)
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: Path, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: -1})
		http.Redirect(w, r, Path+"/login", http.StatusSeeOther)
	case strings.HasPrefix(p, "/servers/"):
		rest := strings.TrimPrefix(p, "/servers/")
		id, action, _ := strings.Cut(rest, "/")
		var err error
		switch action {
		case "refresh":
			err = h.b.Refresh(ctx, id)
		case "trust":
			// The trust shown, not whatever the file says now.
			var fields map[string]string
			if fields, err = postedFields(r, "digest", "program"); err != nil {
				break
			}
			digest := fields["digest"]
			if digest == "" {
				err = errors.New("the trust form lacks the digest of the declaration you viewed; open its trust page and confirm there")
				break
			}
			err = h.b.Trust(ctx, id, digest, fields["program"])
			if errors.Is(err, ErrTrustChanged) {
				if api {
					apiErr(w, http.StatusConflict, err)
					return
				}
				w.WriteHeader(http.StatusConflict)
				h.render(w, "trust", page{Title: "trust " + id, Error: err.Error() + ": " + Path + "/servers/" + id + "/trust", Data: map[string]any{"ID": id}})
				return
			}
		case "review":
			h.reviewPost(w, r, id, api)
			return
		case "untrust":
			err = h.b.Untrust(ctx, id)
		case "restart":
			err = h.b.Restart(ctx, id)
		default:
			http.NotFound(w, r)
			return
		}
		done(action+" "+id+": done", err, servers)
	case p == "/tools/call":
		h.postCall(w, r, ctx, api)
	case p == "/tools/execute":
		h.postExecute(w, r, ctx, api)
	case p == "/filters/enable":
		names, err := h.b.EnableFilter(ctx, r.PostFormValue("name"))
		flash := "nothing was disabled"
		if len(names) > 0 {
			flash = "re-enabled: " + strings.Join(names, ", ")
		}
		done(flash, err, func(f, et string) { h.filtersPage(w, r, f, errorsNew(et)) })
	case p == "/filters/test":
		var cfg json.RawMessage
		if c := strings.TrimSpace(r.PostFormValue("config")); c != "" {
			cfg = json.RawMessage(c)
		}
		out, err := h.b.TestFilter(ctx, r.PostFormValue("module"), cfg, []byte(r.PostFormValue("input")))
		if api {
			if err != nil {
				apiErr(w, http.StatusBadRequest, err)
				return
			}
			writeJSON(w, http.StatusOK, out)
			return
		}
		h.filtersPage(w, r, "", err, out)
	case strings.HasPrefix(p, "/approvals/"):
		id := strings.TrimPrefix(p, "/approvals/")
		yes := r.PostFormValue("decision") == "approve"
		err := errors.New("no approvals queue in this process")
		if pd, ok := h.o.Approvals.Get(id); ok && yes && pd.Request.Hidden > 0 && r.PostFormValue(ConfirmUnseenField) != "yes" {
			// What is approved must have been seen, or knowingly not.
			err = fmt.Errorf("%d bytes of this request are not shown; approving it needs %s=yes (tick \"approve without seeing them\")", pd.Request.Hidden, ConfirmUnseenField)
			if api {
				apiErr(w, http.StatusBadRequest, err)
			} else {
				http.Error(w, err.Error(), http.StatusBadRequest)
			}
			return
		}
		if h.o.Approvals != nil {
			err = h.o.Approvals.Decide(id, yes)
		}
		if api {
			done("decided", err, nil)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		http.Redirect(w, r, Path+"/activity", http.StatusSeeOther)
	default:
		http.NotFound(w, r)
	}
}

// masked hides the literal env and header values and the url's query
// values of user declarations (the user's own file, where secrets live). A project declaration's
// values are shown as declared: its file is in the repository, and what
// it says is exactly what trusting it means; 'sluice trust' shows the
// same.
func masked(s []Server) []Server {
	for i := range s {
		if s[i].Scope != "project" {
			s[i].Env, s[i].Headers = maskMap(s[i].Env), maskMap(s[i].Headers)
			s[i].URL = MaskURL(s[i].URL)
		}
	}
	return s
}

func errorsNew(s string) error {
	if s == "" {
		return nil
	}
	return errors.New(s)
}

func (h *Handler) serversPage(w http.ResponseWriter, r *http.Request, flash string, perr error) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	s, diags, err := h.b.Servers(ctx)
	pg := page{Flash: flash, Data: map[string]any{"Servers": masked(s), "Diagnostics": diags}}
	if perr != nil {
		pg.Error = perr.Error()
	} else if err != nil {
		pg.Error = err.Error()
	}
	h.render(w, "servers", pg)
}

var handleRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`sluice://results/([A-Za-z0-9_-]{8,128})`) })

// handles finds stored-result handles named in a result.
func handles(b []byte) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range handleRe().FindAllSubmatch(b, 8) {
		if h := string(m[1]); !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

type toolsData struct {
	Query      string
	Tools      []Tool
	Detail     *ToolDetail
	Fields     []Field
	Args       string
	Call       *CallOutcome
	Handles    []string
	Script     string
	Run        json.RawMessage
	RunParsed  *runView
	Signatures string
	Limits     []string
}

type runView struct {
	Result json.RawMessage `json:"result"`
	Logs   []string        `json:"logs"`
	Calls  json.RawMessage `json:"calls"`
	Stats  json.RawMessage `json:"stats"`
	Notes  []string        `json:"notes"`
	Error  json.RawMessage `json:"error"`
}

func (h *Handler) toolsPage(w http.ResponseWriter, r *http.Request, fill func(*toolsData, *page)) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	q := r.URL.Query()
	d := &toolsData{Query: q.Get("q"), Script: "result = []\n"}
	pg := page{}
	var err error
	d.Tools, err = h.b.Find(ctx, d.Query, 50)
	if err != nil {
		pg.Error = err.Error()
	}
	capName := q.Get("capability")
	if capName == "" {
		capName = r.PostFormValue("capability")
	}
	if capName != "" {
		d.Detail, err = h.b.Describe(ctx, capName)
		if err != nil {
			pg.Error = err.Error()
		} else {
			d.Fields = FormFields(d.Detail.InputSchema)
		}
	}
	d.Signatures, _ = h.b.Signatures(ctx)
	d.Limits = h.b.Limits(ctx)
	if fill != nil {
		fill(d, &pg)
	}
	pg.Data = d
	h.render(w, "tools", pg)
}

func (h *Handler) postCall(w http.ResponseWriter, r *http.Request, ctx context.Context, api bool) {
	capName := r.PostFormValue("capability")
	var args json.RawMessage
	var err error
	if raw := strings.TrimSpace(r.PostFormValue("arguments")); raw != "" || api {
		args = json.RawMessage(raw)
		if raw == "" {
			args = json.RawMessage(`{}`)
		}
		if !json.Valid(args) {
			err = &FormError{Reason: "the arguments are not valid JSON"}
		}
	} else {
		var d *ToolDetail
		if d, err = h.b.Describe(ctx, capName); err == nil {
			args, err = ArgsFromForm(FormFields(d.InputSchema), r.PostForm)
		}
	}
	var out *CallOutcome
	if err == nil {
		out, err = h.b.Call(ctx, capName, args, r.PostFormValue("approve") == "on" || r.PostFormValue("approve") == "true")
	}
	if api {
		if err != nil {
			apiErr(w, http.StatusBadRequest, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	h.toolsPage(w, r, func(d *toolsData, pg *page) {
		d.Args = string(args)
		if err != nil {
			pg.Error = err.Error()
			return
		}
		d.Call = out
		d.Handles = handles(out.Result)
	})
}

func (h *Handler) postExecute(w http.ResponseWriter, r *http.Request, ctx context.Context, api bool) {
	script := r.PostFormValue("script")
	out, err := h.b.Execute(ctx, script, r.PostFormValue("approve") == "on" || r.PostFormValue("approve") == "true")
	if api {
		if err != nil {
			apiErr(w, http.StatusBadRequest, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
		return
	}
	h.toolsPage(w, r, func(d *toolsData, pg *page) {
		d.Script = script
		if err != nil {
			pg.Error = err.Error()
			return
		}
		d.Run = out
		var rv runView
		if json.Unmarshal(out, &rv) == nil {
			d.RunParsed = &rv
		}
		d.Handles = handles(out)
	})
}

func (h *Handler) filtersPage(w http.ResponseWriter, r *http.Request, flash string, perr error, test ...json.RawMessage) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	f, err := h.b.Filters(ctx)
	data := map[string]any{"Filters": f, "Module": r.PostFormValue("module"), "Input": r.PostFormValue("input"), "Config": r.PostFormValue("config")}
	if len(test) > 0 && test[0] != nil {
		data["Test"] = test[0]
	}
	pg := page{Flash: flash, Data: data}
	if perr != nil {
		pg.Error = perr.Error()
	} else if err != nil {
		pg.Error = err.Error()
	}
	h.render(w, "filters", pg)
}

func (h *Handler) resultsPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	q := r.URL.Query()
	rs, err := h.b.Results(ctx)
	data := map[string]any{"Results": rs}
	pg := page{}
	if err != nil {
		pg.Error = err.Error()
	}
	if hd := q.Get("handle"); hd != "" {
		off, _ := strconv.ParseInt(q.Get("offset"), 10, 64)
		p, err := h.b.ReadResult(ctx, hd, max(off, 0), pageBytes)
		if err != nil {
			pg.Error = err.Error()
		} else {
			data["Page"] = p
			if p.Offset > 0 {
				data["Prev"] = max(p.Offset-pageBytes, 0)
			}
		}
	}
	pg.Data = data
	h.render(w, "results", pg)
}
