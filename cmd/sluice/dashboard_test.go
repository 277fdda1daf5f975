package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// dash is a client of one serve's dashboard.
type dash struct {
	t      *testing.T
	base   string // http://host:port
	c      *http.Client
	csrf   string
	cookie string // the session, after a login with a per-process token
}

// dashLoginLine is the dashboard line serve and dashboard print on
// stderr; when the token was made for the process it has the login link
// (stderr is a terminal) or the file that holds it (it is not).
var dashLoginLine = regexp.MustCompile(`(?:sluice serve: dashboard at|sluice dashboard:) (http://[^/ ]+)/admin/(?: \(log in: (\S+) | \(log in with the link in (\S+?), )?`)

// lineLogin is the login link of a dashboard line's match: printed, or
// read from the file it names ("" = none).
func lineLogin(m []string) string {
	if m[2] != "" || m[3] == "" {
		return m[2]
	}
	b, err := os.ReadFile(m[3])
	if err != nil {
		return "unreadable login file: " + err.Error()
	}
	return strings.TrimSuffix(string(b), "\n")
}

// dashLogins maps a dashboard's host:port to the login link its process
// printed (only dashboards without an operator's token have one).
var dashLogins sync.Map

// noteDashboardLine records the login link of a dashboard line of stderr;
// it reports whether line was one.
func noteDashboardLine(line string) bool {
	m := dashLoginLine.FindStringSubmatch(line)
	if m == nil {
		return false
	}
	if link := lineLogin(m); link != "" {
		dashLogins.Store(strings.TrimPrefix(m[1], "http://"), link)
	}
	return true
}

// loginLink is the login link the dashboard at addr printed ("" = none).
func loginLink(addr string) string {
	v, _ := dashLogins.Load(addr)
	s, _ := v.(string)
	return s
}

func newDash(t *testing.T, addr string) *dash {
	t.Helper()
	d := newAnonDash(t, addr)
	if link := loginLink(addr); link != "" {
		d.login(link)
	}
	return d
}

// newAnonDash is a client of the dashboard at addr that has not logged in.
func newAnonDash(t *testing.T, addr string) *dash {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	d := &dash{t: t, base: "http://" + addr, c: &http.Client{Transport: tr, Timeout: 90 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	return d
}

// login logs in with the token of a login link, as the login page's
// script does: the fragment's token is posted to the login form.
func (d *dash) login(link string) {
	d.t.Helper()
	u, err := url.Parse(link)
	if err != nil || !strings.HasPrefix(u.Fragment, "token=") {
		d.t.Fatalf("login link %q", link)
	}
	d.get("/admin/login") // the CSRF token
	resp, body := d.post("/admin/login", url.Values{"token": {strings.TrimPrefix(u.Fragment, "token=")}, "_csrf": {d.csrf}}, false)
	for _, c := range resp.Cookies() {
		if c.Name == "sluice_admin" {
			d.cookie = c.Name + "=" + c.Value
		}
	}
	if resp.StatusCode != http.StatusSeeOther || d.cookie == "" {
		d.t.Fatalf("login with the printed link: %d %s", resp.StatusCode, body)
	}
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([0-9a-f]+)">`)

func (d *dash) get(path string, hdr ...string) (*http.Response, string) {
	d.t.Helper()
	req, err := http.NewRequest(http.MethodGet, d.base+path, nil)
	if err != nil {
		d.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if d.cookie != "" && req.Header.Get("Cookie") == "" {
		req.Header.Set("Cookie", d.cookie)
	}
	resp, err := d.c.Do(req)
	if err != nil {
		d.t.Fatalf("GET %s: %v", path, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if m := csrfMeta.FindStringSubmatch(string(b)); m != nil {
		d.csrf = m[1]
	}
	return resp, string(b)
}

func (d *dash) post(path string, form url.Values, withCSRF bool) (*http.Response, string) {
	d.t.Helper()
	req, err := http.NewRequest(http.MethodPost, d.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		d.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if withCSRF {
		req.Header.Set("X-CSRF-Token", d.csrf)
	}
	if d.cookie != "" {
		req.Header.Set("Cookie", d.cookie)
	}
	resp, err := d.c.Do(req)
	if err != nil {
		d.t.Fatalf("POST %s: %v", path, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// pending waits for one pending approval and returns its id and kind.
func (d *dash) pending() (id, kind string, caps []string) {
	d.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		_, body := d.get("/admin/api/approvals")
		var a struct {
			Pending []struct {
				ID      string `json:"id"`
				Request struct {
					Kind         string   `json:"kind"`
					Capabilities []string `json:"capabilities"`
					Digest       string   `json:"digest"`
				} `json:"request"`
			} `json:"pending"`
		}
		if err := json.Unmarshal([]byte(body), &a); err != nil {
			d.t.Fatalf("approvals: %v: %s", err, body)
		}
		if len(a.Pending) > 0 {
			p := a.Pending[0]
			return p.ID, p.Request.Kind, p.Request.Capabilities
		}
		time.Sleep(50 * time.Millisecond)
	}
	d.t.Fatal("no approval became pending")
	return "", "", nil
}

// TestDashboardOverHTTP drives the dashboard of a real 'sluice serve
// --http' with a real fixture server: pages, the JSON API, the security
// checks, a call from the dashboard, and an agent's call and script that
// wait for approval in the dashboard (the agent's client has no
// elicitation).
func TestDashboardOverHTTP(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx") + "    actionClass: execute\n  idle:\n    command: \"/bin/true\"\n    env:\n      API_KEY: \"s3cr3t-value\"\n")
	addr, _, stop := startHTTPServeProc(t, nil)
	defer stop()
	d := newDash(t, addr)

	// Every page renders behind a strict CSP; env values are masked.
	for _, p := range []string{"/admin/servers", "/admin/tools?q=echo&capability=fx__add", "/admin/filters", "/admin/results", "/admin/activity", "/admin/metrics"} {
		resp, body := d.get(p)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", p, resp.StatusCode, body)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "http") || strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: CSP %q is not strict", p, csp)
		}
		if strings.Contains(body, "s3cr3t-value") {
			t.Errorf("GET %s shows an env value", p)
		}
	}
	_, servers := d.get("/admin/servers")
	for _, s := range []string{"fx", "API_KEY=••••"} {
		if !strings.Contains(servers, s) {
			t.Errorf("servers page lacks %q", s)
		}
	}

	// The security checks.
	if resp, _ := d.post("/admin/api/tools/call", url.Values{"capability": {"fx__echo"}, "arguments": {`{"text":"x"}`}}, false); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a POST without the CSRF token: %d, want 403", resp.StatusCode)
	}
	if resp, _ := d.get("/admin/servers", "Host", "evil.example:80"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a foreign Host: %d, want 403", resp.StatusCode)
	}
	if resp, _ := d.get("/admin/servers", "Origin", "http://evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a foreign Origin: %d, want 403", resp.StatusCode)
	}
	if resp, _ := d.get("/admin/servers", "X-Forwarded-For", "203.0.113.9"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a proxied request: %d, want 403", resp.StatusCode)
	}

	// A call from the dashboard (the form's fields, typed numbers kept as
	// typed), then one the person approves on the form.
	resp, body := d.post("/admin/api/tools/call", url.Values{"capability": {"fx__echo"}, "arguments": {`{"text":"from the dashboard"}`}}, true)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "not approved") {
		t.Fatalf("dashboard call without the form's approval: %d %s", resp.StatusCode, body)
	}
	resp, body = d.post("/admin/api/tools/call", url.Values{"capability": {"fx__echo"}, "arguments": {`{"text":"from the dashboard"}`}, "approve": {"true"}}, true)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "from the dashboard") {
		t.Fatalf("dashboard call: %d %s", resp.StatusCode, body)
	}
	_, tools := d.get("/admin/tools?capability=fx__add")
	for _, s := range []string{`name="arg.a"`, `name="arg.b"`, "approval-required"} {
		if !strings.Contains(tools, s) {
			t.Errorf("the call form for fx__add lacks %q", s)
		}
	}
	resp, body = d.post("/admin/tools/call", url.Values{"capability": {"fx__add"}, "arg.a": {"12345678901234567890"}, "arg.b": {"1"}, "approve": {"on"}}, true)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "12345678901234567891") {
		t.Fatalf("dashboard form call of fx__add: %d %s", resp.StatusCode, body)
	}

	// An agent without elicitation: its call waits in the dashboard.
	cs := agentSession(t, "http://"+addr+"/mcp", "agent", "file:///tmp")
	type out struct {
		res *mcp.CallToolResult
		err error
	}
	call := func(name string, args map[string]any) chan out {
		ch := make(chan out, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
			ch <- out{r, err}
		}()
		return ch
	}
	ch := call("call", map[string]any{"capability": "fx__add", "arguments": map[string]any{"a": 2, "b": 3}})
	select {
	case o := <-ch:
		t.Fatalf("the call did not wait for approval: %v %q", o.err, toolText(o.res))
	case <-time.After(2 * time.Second):
	}
	id, kind, caps := d.pending()
	if kind != "call" || len(caps) != 1 || caps[0] != "fx__add" {
		t.Errorf("pending: %s %v", kind, caps)
	}
	_, act := d.get("/admin/activity")
	if !strings.Contains(act, "approve-"+id) {
		t.Errorf("the Activity page does not offer to approve %s", id)
	}
	if resp, body := d.post("/admin/api/approvals/"+id, url.Values{"decision": {"approve"}}, true); resp.StatusCode != http.StatusOK {
		t.Fatalf("approve: %d %s", resp.StatusCode, body)
	}
	o := <-ch
	if o.err != nil || o.res.IsError || !strings.Contains(toolText(o.res), "5") {
		t.Fatalf("approved call: %v %+v", o.err, o.res)
	}

	// Declined: the model's error names the dashboard.
	ch = call("call", map[string]any{"capability": "fx__add", "arguments": map[string]any{"a": 1, "b": 1}})
	id, _, _ = d.pending()
	d.post("/admin/api/approvals/"+id, url.Values{"decision": {"decline"}}, true)
	o = <-ch
	if o.err != nil || !o.res.IsError || !strings.Contains(toolText(o.res), "http://"+addr+"/admin/activity") {
		t.Fatalf("declined call: %v %q", o.err, toolText(o.res))
	}
	// The model is told where the dashboard is, never how to log in.
	if tok := tokenOf(t, loginLink(addr)); strings.Contains(toolText(o.res), tok) || strings.Contains(toolText(o.res), "#token") {
		t.Fatalf("the declined call's text carries the dashboard's login token: %q", toolText(o.res))
	}

	// A script: one approval for its whole set (parallel() included).
	script := "r = parallel([{\"tool\": \"fx__add\", \"args\": {\"a\": 1, \"b\": 2}}, {\"tool\": \"fx__echo\", \"args\": {\"text\": \"e\"}}])\nresult = [x.ok for x in r] + [fx.add(a=40, b=2)]\n"
	ch = call("execute", map[string]any{"script": script})
	id, kind, caps = d.pending()
	if kind != "script" || strings.Join(caps, ",") != "fx__add,fx__echo" {
		t.Errorf("pending script approval: %s %v (want both capabilities, once)", kind, caps)
	}
	d.post("/admin/api/approvals/"+id, url.Values{"decision": {"approve"}}, true)
	o = <-ch
	if o.err != nil || o.res.IsError || !strings.Contains(toolText(o.res), "42") {
		t.Fatalf("approved script: %v %q", o.err, toolText(o.res))
	}

	// Activity lists the calls; the audit log has every decision, 0600.
	_, body = d.get("/admin/api/activity")
	for _, s := range []string{`"capability": "fx__add"`, `"surface": "agent"`, `"surface": "script"`, `"surface": "dashboard"`, `"via": "dashboard"`} {
		if !strings.Contains(body, s) {
			t.Errorf("activity lacks %s", s)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(w.state, "*", "audit.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("audit logs: %v", logs)
	}
	fi, err := os.Stat(logs[0])
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("audit log mode: %v %v", fi, err)
	}
	b, _ := os.ReadFile(logs[0])
	if n := strings.Count(string(b), "\n"); n < 4 {
		t.Errorf("audit log has %d lines, want a line per decision (4):\n%s", n, b)
	}
	if !strings.Contains(string(b), `"digest":"`) {
		t.Errorf("the script's decision is not bound to its digest:\n%s", b)
	}

	// sluice status shows the running serve.
	r := sluiceProc(t, "", "status")
	want(t, r, exitOK, "dashboard: http://"+addr+"/admin/activity", "server fx", "pending approvals: 0")
	// Neither the audit log nor status carries the login token.
	if tok := tokenOf(t, loginLink(addr)); strings.Contains(string(b), tok) || strings.Contains(r.stdout+r.stderr, tok) {
		t.Errorf("the login token reached the audit log or sluice status")
	}
}

// TestDashboardLogin: with a token the dashboard asks for it once, then
// keeps an HttpOnly, SameSite=Strict cookie; nothing is served before.
func TestDashboardLogin(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	addr, _, stop := startHTTPServeProc(t, []string{"SLUICE_TOKEN=tok-123"})
	defer stop()
	d := newDash(t, addr)
	resp, _ := d.get("/admin/servers")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/admin/login" {
		t.Fatalf("before login: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := d.get("/admin/api/status"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("API before login: %d", resp.StatusCode)
	}
	d.get("/admin/login")
	if resp, _ := d.post("/admin/login", url.Values{"token": {"wrong"}, "_csrf": {d.csrf}}, false); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %d", resp.StatusCode)
	}
	resp, _ = d.post("/admin/login", url.Values{"token": {"tok-123"}, "_csrf": {d.csrf}}, false)
	cookie := resp.Header.Get("Set-Cookie")
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") {
		t.Fatalf("login: %d %q", resp.StatusCode, cookie)
	}
	name, val, _ := strings.Cut(strings.SplitN(cookie, ";", 2)[0], "=")
	resp, body := d.get("/admin/servers", "Cookie", name+"="+val)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "fx") {
		t.Fatalf("after login: %d", resp.StatusCode)
	}
	// /mcp still wants the bearer token, not the cookie.
	resp, _ = d.get("/mcp", "Cookie", name+"="+val)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/mcp with the dashboard cookie: %d, want 401", resp.StatusCode)
	}
}

// TestDashboardApprovalTimeout: nobody decides, so the waiting call ends
// after --approval-timeout with an error that names the dashboard, and the
// timeout is in the audit log.
func TestDashboardApprovalTimeout(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx") + "    actionClass: execute\n")
	addr, _, stop := startHTTPServeProc(t, nil, "--approval-timeout", "2s")
	defer stop()
	cs := agentSession(t, "http://"+addr+"/mcp", "agent", "file:///tmp")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call", Arguments: map[string]any{"capability": "fx__add", "arguments": map[string]any{"a": 1, "b": 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if txt := toolText(r); !r.IsError || !strings.Contains(txt, "nobody approved it within 2s") || !strings.Contains(txt, "http://"+addr+"/admin/activity") {
		t.Fatalf("the timed-out call: %q", txt)
	}
	logs, _ := filepath.Glob(filepath.Join(w.state, "*", "audit.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("audit logs: %v", logs)
	}
	b, _ := os.ReadFile(logs[0])
	if !strings.Contains(string(b), `"via":"timeout"`) || !strings.Contains(string(b), `"capabilities":["fx__add"]`) {
		t.Errorf("the audit log lacks the timeout:\n%s", b)
	}
	if r := sluiceProc(t, "", "serve", "--approval-timeout", "-1s"); r.code != exitUsage || !strings.Contains(r.stderr, "--approval-timeout") {
		t.Errorf("a negative --approval-timeout: %s", r)
	}
}

// TestDashboardGateWithAllowRemote: 'serve --allow-remote' opens /mcp to
// other hosts, not the dashboard: a request from a non-loopback address of
// this machine is refused until --admin-remote opens it on purpose.
func TestDashboardGateWithAllowRemote(t *testing.T) {
	ip := nonLoopbackIP(t)
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	for _, open := range []bool{false, true} {
		args := []string{"--allow-remote"}
		if open {
			args = append(args, "--admin-remote")
		}
		cmd := append([]string{"--http", net.JoinHostPort(ip, "0")}, args...)
		addr, _, stop := startHTTPServeProc(t, []string{"SLUICE_TOKEN=tok-remote"}, cmd...) // the later --http wins
		_, port, _ := net.SplitHostPort(addr)
		d := newDash(t, net.JoinHostPort(ip, port))
		resp, body := d.get("/admin/login", "Host", "127.0.0.1:"+port)
		switch {
		case !open && (resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "loopback clients only")):
			t.Errorf("from %s with --allow-remote only: %d %s", ip, resp.StatusCode, body)
		case open && resp.StatusCode != http.StatusOK:
			t.Errorf("from %s with --admin-remote: %d %s", ip, resp.StatusCode, body)
		}
		stop()
	}
}

// nonLoopbackIP is an address of this machine that is not loopback.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("this machine has no non-loopback IPv4 address to connect from")
	return ""
}
