package admin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeBackend is a Backend with fixed answers, for the handler's own
// behaviour (gate, forms, JSON); the gateway's Backend is tested end to
// end through the sluice binary.
type fakeBackend struct {
	calls   []string // capability + args, as called
	digest  string   // the declaration's digest now
	trusted []string
	review  *ToolReview // the review now (review_test.go)
	accept  []string    // digests accepted
}

func (f *fakeBackend) Servers(context.Context) ([]Server, []string, error) {
	return []Server{{ID: "fx", Scope: "user", Trust: "trusted", Run: "idle", Env: map[string]string{"API_KEY": "s3cr3t", "REF": "${env:HOME}"},
		Headers: map[string]string{"Authorization": "Bearer abc"}}}, nil, nil
}
func (f *fakeBackend) TrustPrompt(context.Context, string) (*TrustOffer, error) {
	return &TrustOffer{Text: "prompt", Digest: f.digest}, nil
}
func (f *fakeBackend) Trust(_ context.Context, id, digest, _ string) error {
	if digest != f.digest {
		return ErrTrustChanged
	}
	f.trusted = append(f.trusted, id)
	return nil
}
func (f *fakeBackend) Untrust(context.Context, string) error { return nil }
func (f *fakeBackend) Refresh(context.Context, string) error { return nil }
func (f *fakeBackend) Restart(context.Context, string) error { return nil }
func (f *fakeBackend) Find(context.Context, string, int) ([]Tool, error) {
	return []Tool{{Capability: "fx__add", Server: "fx"}}, nil
}
func (f *fakeBackend) Describe(_ context.Context, c string) (*ToolDetail, error) {
	return &ToolDetail{Capability: c, InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"s":{"type":"string"}},"required":["a"]}`)}, nil
}
func (f *fakeBackend) Call(_ context.Context, c string, args json.RawMessage, approved bool) (*CallOutcome, error) {
	f.calls = append(f.calls, c+" "+string(args))
	return &CallOutcome{Result: json.RawMessage(`{"content":[]}`)}, nil
}
func (f *fakeBackend) Execute(context.Context, string, bool) (json.RawMessage, error) {
	return json.RawMessage(`{"result":1}`), nil
}
func (f *fakeBackend) Signatures(context.Context) (string, error) { return "", nil }
func (f *fakeBackend) Limits(context.Context) []string            { return nil }
func (f *fakeBackend) Filters(context.Context) ([]Filter, error)  { return nil, nil }
func (f *fakeBackend) EnableFilter(context.Context, string) ([]string, error) {
	return nil, nil
}
func (f *fakeBackend) TestFilter(context.Context, string, json.RawMessage, []byte) (json.RawMessage, error) {
	return nil, errors.New("no filters here")
}
func (f *fakeBackend) Results(context.Context) ([]StoredResult, error) { return nil, nil }
func (f *fakeBackend) ReadResult(context.Context, string, int64, int64) (*ResultPage, error) {
	return nil, errors.New("no such result")
}

func newTestHandler(t *testing.T, o Options) (*Handler, *fakeBackend) {
	t.Helper()
	fb := &fakeBackend{}
	o.Backend = fb
	h, err := New(&o)
	if err != nil {
		t.Fatal(err)
	}
	return h, fb
}

func do(h http.Handler, method, target, remote string, body url.Values, hdr map[string]string) *httptest.ResponseRecorder {
	var r *http.Request
	if body != nil {
		r = httptest.NewRequest(method, target, strings.NewReader(body.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		r = httptest.NewRequest(method, target, nil)
	}
	r.RemoteAddr = remote
	r.Host = "127.0.0.1:8765"
	for k, v := range hdr {
		if k == "Host" {
			r.Host = v
			continue
		}
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

const loop = "127.0.0.1:5555"

func TestGateFailsClosed(t *testing.T) {
	h, _ := newTestHandler(t, Options{})
	cases := []struct {
		name   string
		remote string
		hdr    map[string]string
		want   int
	}{
		{"loopback v4", loop, nil, 200},
		{"loopback v6", "[::1]:5555", nil, 200},
		{"a LAN peer", "192.168.1.7:5555", nil, 403},
		{"an unparsable peer", "garbage", nil, 403},
		{"relayed by a proxy", loop, map[string]string{"X-Forwarded-For": "203.0.113.9"}, 403},
		{"Forwarded", loop, map[string]string{"Forwarded": "for=203.0.113.9"}, 403},
		{"a foreign Host", loop, map[string]string{"Host": "evil.example:8765"}, 403},
		{"localhost Host", loop, map[string]string{"Host": "localhost:8765"}, 200},
		{"a foreign Origin", loop, map[string]string{"Origin": "http://evil.example"}, 403},
		{"a null Origin", loop, map[string]string{"Origin": "null"}, 403},
		{"a loopback Origin", loop, map[string]string{"Origin": "http://127.0.0.1:8765"}, 200},
	}
	for _, c := range cases {
		w := do(h, "GET", "/admin/servers", c.remote, nil, c.hdr)
		if w.Code != c.want {
			t.Errorf("%s: %d, want %d", c.name, w.Code, c.want)
		}
		if csp := w.Header().Get("Content-Security-Policy"); csp != CSP {
			t.Errorf("%s: CSP %q", c.name, csp)
		}
	}
	// --admin-remote opens it on purpose.
	hr, _ := newTestHandler(t, Options{Remote: true, Token: "t"})
	if w := do(hr, "GET", "/admin/login", "192.168.1.7:5555", nil, map[string]string{"Host": "gw.lan:8765"}); w.Code != 200 {
		t.Errorf("remote with --admin-remote: %d", w.Code)
	}
}

func TestCSRFOnEveryMutation(t *testing.T) {
	h, fb := newTestHandler(t, Options{})
	paths := []string{"/admin/servers/fx/refresh", "/admin/servers/fx/trust", "/admin/servers/fx/untrust", "/admin/servers/fx/restart",
		"/admin/tools/call", "/admin/tools/execute", "/admin/filters/enable", "/admin/filters/test", "/admin/approvals/x",
		"/admin/api/tools/call", "/admin/api/approvals/x"}
	for _, p := range paths {
		if w := do(h, "POST", p, loop, url.Values{"capability": {"fx__add"}, "arguments": {"{}"}}, nil); w.Code != 403 {
			t.Errorf("POST %s without a CSRF token: %d, want 403", p, w.Code)
		}
		if w := do(h, "POST", p, loop, url.Values{"_csrf": {"0000"}, "capability": {"fx__add"}}, nil); w.Code != 403 {
			t.Errorf("POST %s with a wrong CSRF token: %d, want 403", p, w.Code)
		}
	}
	if len(fb.calls) != 0 {
		t.Fatalf("a call ran without a CSRF token: %v", fb.calls)
	}
	for _, m := range []string{"PUT", "DELETE", "PATCH"} {
		if w := do(h, m, "/admin/api/tools/call", loop, nil, nil); w.Code != 405 {
			t.Errorf("%s: %d, want 405", m, w.Code)
		}
	}
	// With the token: the form's fields become the arguments, numbers as typed.
	w := do(h, "POST", "/admin/api/tools/call", loop, url.Values{"capability": {"fx__add"}, "arguments": {`{"a":12345678901234567890}`}},
		map[string]string{"X-CSRF-Token": h.gate.csrf})
	if w.Code != 200 || len(fb.calls) != 1 || fb.calls[0] != `fx__add {"a":12345678901234567890}` {
		t.Fatalf("call with the CSRF token: %d %s %v", w.Code, w.Body, fb.calls)
	}
	w = do(h, "POST", "/admin/tools/call", loop, url.Values{"_csrf": {h.gate.csrf}, "capability": {"fx__add"}, "arg.a": {"7"}, "arg.s": {"x"}}, nil)
	if w.Code != 200 || fb.calls[1] != `fx__add {"a":7,"s":"x"}` {
		t.Fatalf("form call: %d %v", w.Code, fb.calls)
	}
	w = do(h, "POST", "/admin/tools/call", loop, url.Values{"_csrf": {h.gate.csrf}, "capability": {"fx__add"}, "arg.a": {"1.5"}}, nil)
	if !strings.Contains(w.Body.String(), "is not an integer") || len(fb.calls) != 2 {
		t.Fatalf("a bad integer reached the call: %v\n%s", fb.calls, w.Body)
	}
}

func TestLoginCookie(t *testing.T) {
	h, _ := newTestHandler(t, Options{Token: "tok-1"})
	for _, p := range []string{"/admin/servers", "/admin/activity", "/admin/"} {
		if w := do(h, "GET", p, loop, nil, nil); w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/admin/login" {
			t.Errorf("GET %s before login: %d %s", p, w.Code, w.Header().Get("Location"))
		}
	}
	if w := do(h, "GET", "/admin/api/servers", loop, nil, nil); w.Code != 401 || strings.Contains(w.Body.String(), "fx") {
		t.Errorf("API before login: %d %s", w.Code, w.Body)
	}
	if w := do(h, "GET", "/admin/assets/app.js", loop, nil, nil); w.Code != 200 {
		t.Errorf("assets before login: %d", w.Code)
	}
	if w := do(h, "POST", "/admin/login", loop, url.Values{"token": {"tok-1"}}, nil); w.Code != 403 {
		t.Errorf("login without CSRF: %d", w.Code)
	}
	if w := do(h, "POST", "/admin/login", loop, url.Values{"token": {"nope"}, "_csrf": {h.gate.csrf}}, nil); w.Code != 401 || w.Header().Get("Set-Cookie") != "" {
		t.Errorf("a wrong token: %d %q", w.Code, w.Header().Get("Set-Cookie"))
	}
	w := do(h, "POST", "/admin/login", loop, url.Values{"token": {"tok-1"}, "_csrf": {h.gate.csrf}}, nil)
	ck := w.Result().Cookies()
	if w.Code != http.StatusSeeOther || len(ck) != 1 || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode || ck[0].Path != Path {
		t.Fatalf("login: %d %+v", w.Code, ck)
	}
	w = do(h, "GET", "/admin/api/servers", loop, nil, map[string]string{"Cookie": ck[0].Name + "=" + ck[0].Value})
	if w.Code != 200 {
		t.Fatalf("after login: %d", w.Code)
	}
	// Env and header values are masked; a variable reference holds none.
	body := w.Body.String()
	if strings.Contains(body, "s3cr3t") || strings.Contains(body, "Bearer abc") || !strings.Contains(body, "${env:HOME}") {
		t.Errorf("unmasked: %s", body)
	}
	if w := do(h, "GET", "/admin/api/servers", loop, nil, map[string]string{"Cookie": ck[0].Name + "=forged"}); w.Code != 401 {
		t.Errorf("a forged cookie: %d", w.Code)
	}
}

func TestApprovalsQueue(t *testing.T) {
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	q, err := NewApprovals(ApprovalOptions{Timeout: time.Hour, AuditFile: audit})
	if err != nil {
		t.Fatal(err)
	}
	q.SetURL("http://127.0.0.1:1")
	type res struct {
		ok  bool
		err error
	}
	ask := func(ctx context.Context, r ApprovalRequest) chan res {
		ch := make(chan res, 1)
		go func() {
			ok, err := q.Ask(ctx, r)
			ch <- res{ok, err}
		}()
		return ch
	}
	waitPending := func(n int) []Pending {
		for {
			if p := q.Pending(); len(p) == n {
				return p
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// Approved.
	ch := ask(context.Background(), ApprovalRequest{Kind: "call", Capabilities: []string{"fx__add"}})
	p := waitPending(1)
	if err := q.Decide(p[0].ID, true); err != nil {
		t.Fatal(err)
	}
	if r := <-ch; !r.ok || r.err != nil {
		t.Fatalf("approved: %+v", r)
	}
	if err := q.Decide(p[0].ID, true); !errors.Is(err, ErrUnknownApproval) {
		t.Errorf("deciding twice: %v", err)
	}
	// Declined.
	ch = ask(context.Background(), ApprovalRequest{Kind: "script", Capabilities: []string{"a__b", "c__d"}, Digest: "abc"})
	p = waitPending(1)
	_ = q.Decide(p[0].ID, false)
	if r := <-ch; r.ok || r.err != nil {
		t.Fatalf("declined: %+v", r)
	}
	// The caller gives up.
	ctx, cancel := context.WithCancel(context.Background())
	ch = ask(ctx, ApprovalRequest{Kind: "call", Capabilities: []string{"fx__x"}})
	waitPending(1)
	cancel()
	if r := <-ch; r.ok || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled: %+v", r)
	}
	waitPending(0)
	// Bounded wait.
	qt, _ := NewApprovals(ApprovalOptions{Timeout: 20 * time.Millisecond})
	if ok, err := qt.Ask(context.Background(), ApprovalRequest{Kind: "call"}); ok || !errors.Is(err, ErrApprovalTimeout) {
		t.Fatalf("timeout: %v %v", ok, err)
	}
	if txt := qt.WaitText(ErrApprovalTimeout); !strings.Contains(txt, "20ms") {
		t.Errorf("timeout text: %s", txt)
	}
	if txt := q.WaitText(nil); !strings.Contains(txt, "http://127.0.0.1:1/admin/activity") {
		t.Errorf("declined text does not name the dashboard: %s", txt)
	}
	// A closed queue refuses waiting and new requests.
	ch = ask(context.Background(), ApprovalRequest{Kind: "call"})
	waitPending(1)
	q.Close()
	if r := <-ch; !errors.Is(r.err, ErrApprovalClosed) {
		t.Fatalf("closed: %+v", r)
	}
	if _, err := q.Ask(context.Background(), ApprovalRequest{}); !errors.Is(err, ErrApprovalClosed) {
		t.Fatalf("ask after close: %v", err)
	}

	// The audit log: one JSON line per outcome, 0600.
	fi, err := os.Stat(audit)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("audit file: %v %v", fi, err)
	}
	b, _ := os.ReadFile(audit)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var vias []string
	for _, l := range lines {
		var d Decision
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		vias = append(vias, d.Via+":"+map[bool]string{true: "yes", false: "no"}[d.Approved])
	}
	if got := strings.Join(vias, " "); got != "dashboard:yes dashboard:no cancelled:no closed:no" {
		t.Errorf("audit: %s\n%s", got, b)
	}
	if !strings.Contains(lines[1], `"digest":"abc"`) {
		t.Errorf("the script decision lost its digest: %s", lines[1])
	}
	if d := q.Decisions(2); len(d) != 2 || d[0].Via != "closed" {
		t.Errorf("recent decisions, newest first: %+v", d)
	}
}

func TestApprovalsQueueIsBounded(t *testing.T) {
	q, _ := NewApprovals(ApprovalOptions{Timeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, maxPending)
	for range maxPending {
		go func() { _, err := q.Ask(ctx, ApprovalRequest{Kind: "call"}); done <- err }()
	}
	for len(q.Pending()) < maxPending {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := q.Ask(ctx, ApprovalRequest{Kind: "call"}); !errors.Is(err, ErrTooManyPending) {
		t.Fatalf("beyond the bound: %v", err)
	}
	cancel()
	for range maxPending {
		<-done
	}
}

func TestAuditRefusesSymlinkAndRotates(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	os.WriteFile(target, nil, 0o644)
	link := filepath.Join(dir, "audit.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := NewApprovals(ApprovalOptions{AuditFile: link}); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("a symlinked audit log: %v", err)
	}
	file := filepath.Join(dir, "a.jsonl")
	q, err := NewApprovals(ApprovalOptions{AuditFile: file})
	if err != nil {
		t.Fatal(err)
	}
	var big []string // a line of about 8 KiB, the most one line holds
	for range maxAuditCaps {
		big = append(big, strings.Repeat("x", maxAuditCapName))
	}
	for range (maxAuditFileBytes / (8 << 10)) + 4 {
		if err := q.Audit(Decision{Kind: "call", Capabilities: big, Via: "dashboard"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{file, file + ".1"} {
		fi, err := os.Stat(f)
		if err != nil || fi.Size() > maxAuditFileBytes {
			t.Errorf("%s: %v %v (bound %d)", f, fi, err, maxAuditFileBytes)
		}
	}
}

func TestActivityAndMetrics(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	a := NewActivity(func() time.Time { return now })
	for i := range maxCalls + 10 {
		out := "ok"
		if i%10 == 0 {
			out = "error"
		}
		a.Record(Call{Time: now.Add(-time.Duration(i%3) * time.Minute), Capability: "fx__add", Server: "fx", Outcome: out, Duration: time.Duration(i+1) * time.Millisecond})
	}
	if a.Total() != maxCalls+10 || len(a.Recent(0)) != maxCalls {
		t.Fatalf("total %d, kept %d", a.Total(), len(a.Recent(0)))
	}
	if r := a.Recent(1); r[0].Duration != time.Duration(maxCalls+10)*time.Millisecond {
		t.Errorf("newest first: %+v", r[0])
	}
	m := a.Metrics()
	if len(m) != 1 || m[0].Server != "fx" || len(m[0].Minutes) != metricMinutes || m[0].Calls != maxCalls+10 {
		t.Fatalf("metrics: %+v", m)
	}
	last := m[0].P99[metricMinutes-1]
	if last <= 0 || m[0].P50[metricMinutes-1] > last {
		t.Errorf("p50 %v > p99 %v", m[0].P50[metricMinutes-1], last)
	}
	if m[0].PerSec[metricMinutes-4] != 0 {
		t.Errorf("a minute with no calls has a rate")
	}
}

func TestMask(t *testing.T) {
	for in, want := range map[string]string{"": "", "abc": "••••", strings.Repeat("k", 40): "••••", "${env:TOKEN}": "${env:TOKEN}",
		"Bearer ${env:GITHUB_TOKEN}": "••••${env:GITHUB_TOKEN}", "x${env:A}y": "••••${env:A}••••", "${env:A}${env:B}": "${env:A}${env:B}",
		"$${env:A}": "••••", "a${unterminated": "••••"} {
		if got := Mask(in); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFormFields(t *testing.T) {
	f := FormFields(json.RawMessage(`{"type":"object","properties":{"z":{"type":"boolean"},"n":{"type":"number"},"e":{"type":"string","enum":["a","b"]},"o":{"type":"object"}},"required":["n"]}`))
	var names []string
	for _, x := range f {
		names = append(names, x.Name+":"+x.Type)
	}
	if got := strings.Join(names, " "); got != "n:number e:string o:json z:boolean" {
		t.Fatalf("fields: %s", got)
	}
	args, err := ArgsFromForm(f, url.Values{"arg.n": {"1e400"}, "arg.o": {`{"k":[1]}`}, "arg.z": {"on"}})
	if err != nil || string(args) != `{"n":1e400,"o":{"k":[1]},"z":true}` {
		t.Fatalf("args %s %v", args, err)
	}
	if _, err := ArgsFromForm(f, url.Values{}); err == nil || !strings.Contains(err.Error(), `"n": is required`) {
		t.Errorf("missing required: %v", err)
	}
	if _, err := ArgsFromForm(f, url.Values{"arg.n": {"1"}, "arg.o": {"{"}}); err == nil || !strings.Contains(err.Error(), `"o"`) {
		t.Errorf("bad JSON: %v", err)
	}
}

func TestRemoteNeedsTokenAndOwnOrigin(t *testing.T) {
	if _, err := New(&Options{Backend: &fakeBackend{}, Remote: true}); !errors.Is(err, ErrRemoteNeedsToken) {
		t.Fatalf("Remote without a token: %v", err)
	}
	hr, _ := newTestHandler(t, Options{Remote: true, Token: "t"})
	lan := "192.168.1.7:5555"
	cases := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"its own origin", map[string]string{"Host": "gw.lan:8765", "Origin": "http://gw.lan:8765"}, 200},
		{"no Origin", map[string]string{"Host": "gw.lan:8765"}, 200},
		{"another site", map[string]string{"Host": "gw.lan:8765", "Origin": "http://evil.example"}, 403},
		{"another port", map[string]string{"Host": "gw.lan:8765", "Origin": "http://gw.lan:9999"}, 403},
		{"another scheme", map[string]string{"Host": "gw.lan:8765", "Origin": "https://gw.lan:8765"}, 403},
		{"Sec-Fetch-Site cross-site", map[string]string{"Host": "gw.lan:8765", "Sec-Fetch-Site": "cross-site"}, 403},
	}
	for _, c := range cases {
		if w := do(hr, "GET", "/admin/login", lan, nil, c.hdr); w.Code != c.want {
			t.Errorf("remote, %s: %d, want %d", c.name, w.Code, c.want)
		}
	}
	// Loopback: another loopback port or scheme is another site too.
	h, _ := newTestHandler(t, Options{})
	for _, c := range []struct {
		origin string
		want   int
	}{
		{"http://127.0.0.1:8765", 200}, {"http://127.0.0.1:9999", 403}, {"https://127.0.0.1:8765", 403},
		{"http://localhost:8765", 403}, {"http://127.0.0.1:8765/x", 403},
	} {
		if w := do(h, "GET", "/admin/servers", loop, nil, map[string]string{"Origin": c.origin}); w.Code != c.want {
			t.Errorf("loopback, Origin %s: %d, want %d", c.origin, w.Code, c.want)
		}
	}
	if w := do(h, "GET", "/admin/servers", loop, nil, map[string]string{"Sec-Fetch-Site": "cross-site"}); w.Code != 403 {
		t.Errorf("loopback, Sec-Fetch-Site cross-site: %d", w.Code)
	}
	if w := do(h, "GET", "/admin/servers", loop, nil, map[string]string{"Sec-Fetch-Site": "same-origin"}); w.Code != 200 {
		t.Errorf("loopback, Sec-Fetch-Site same-origin: %d", w.Code)
	}
}

// TestApprovalCardShowsAllArguments: the card shows a call's whole
// arguments up to MaxShown; beyond, it says how much is not shown and
// approving needs the explicit extra confirmation. The audit line carries
// the sha256 of the whole arguments.
func TestApprovalCardShowsAllArguments(t *testing.T) {
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	q, err := NewApprovals(ApprovalOptions{Timeout: time.Hour, AuditFile: audit})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := newTestHandler(t, Options{Approvals: q})
	ask := func(args string) (chan bool, Pending) {
		ch := make(chan bool, 1)
		go func() {
			ok, _ := q.Ask(context.Background(), ApprovalRequest{Kind: "call", Capabilities: []string{"fx__w"}, Arguments: args})
			ch <- ok
		}()
		for {
			if p := q.Pending(); len(p) == 1 {
				return ch, p[0]
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	decide := func(id string, extra url.Values) int {
		v := url.Values{"_csrf": {h.gate.csrf}, "decision": {"approve"}}
		for k, x := range extra {
			v[k] = x
		}
		return do(h, "POST", "/admin/approvals/"+id, loop, v, nil).Code
	}
	// 5000 bytes: all of it shown, the tail included.
	mid := `{"path":"notes.txt","text":"` + strings.Repeat("a", 5000) + `","then":"rm -rf TAIL-MARK"}`
	ch, p := ask(mid)
	page := do(h, "GET", "/admin/activity", loop, nil, nil).Body.String()
	if !strings.Contains(page, "TAIL-MARK") || strings.Contains(page, "TRUNCATED") || p.Request.Hidden != 0 {
		t.Fatalf("arguments under the cap are not shown whole (hidden %d)", p.Request.Hidden)
	}
	if c := decide(p.ID, nil); c != http.StatusSeeOther || !<-ch {
		t.Fatalf("approving shown arguments: %d", c)
	}
	// Beyond the cap: marked, and approving needs the confirmation.
	big := `{"text":"` + strings.Repeat("b", MaxShown) + `","then":"HIDDEN-MARK"}`
	ch, p = ask(big)
	page = do(h, "GET", "/admin/activity", loop, nil, nil).Body.String()
	hidden := len(big) - MaxShown
	if p.Request.Hidden != hidden || !strings.Contains(page, "TRUNCATED — "+itoa(hidden)+" bytes not shown") || strings.Contains(page, "HIDDEN-MARK") {
		t.Fatalf("over the cap: hidden %d, want %d; marked: %v", p.Request.Hidden, hidden, strings.Contains(page, "TRUNCATED"))
	}
	if c := decide(p.ID, nil); c != http.StatusBadRequest {
		t.Fatalf("approving unseen bytes without the confirmation: %d", c)
	}
	if _, still := q.Get(p.ID); !still {
		t.Fatal("the refused approval left the queue")
	}
	if c := decide(p.ID, url.Values{ConfirmUnseenField: {"yes"}}); c != http.StatusSeeOther || !<-ch {
		t.Fatalf("approving with the confirmation: %d", c)
	}
	b, _ := os.ReadFile(audit)
	for _, a := range []string{mid, big} {
		sum := sha256.Sum256([]byte(a))
		if !strings.Contains(string(b), `"argumentsSha256":"`+hex.EncodeToString(sum[:])+`"`) {
			t.Errorf("the audit log lacks the arguments' sha256:\n%s", b)
		}
	}
}

// TestDecideRacesTheWaitEnding: a caller that stops waiting right after
// Decide took its request still gets the decision Decide reported, and
// the audit log holds one line for it.
func TestDecideRacesTheWaitEnding(t *testing.T) {
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	q, err := NewApprovals(ApprovalOptions{Timeout: time.Hour, AuditFile: audit})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	type res struct {
		ok  bool
		err error
	}
	ch := make(chan res, 1)
	go func() {
		ok, err := q.Ask(ctx, ApprovalRequest{Kind: "call", Capabilities: []string{"fx__w"}})
		ch <- res{ok, err}
	}()
	var p []Pending
	for len(p) == 0 {
		time.Sleep(5 * time.Millisecond)
		p = q.Pending()
	}
	var got res
	// The wait ends between Decide taking the request and returning.
	q.afterDecide = func() { cancel(); got = <-ch }
	if err := q.Decide(p[0].ID, true); err != nil {
		t.Fatal(err)
	}
	if !got.ok || got.err != nil {
		t.Fatalf("Decide approved it, the caller was told %+v", got)
	}
	b, _ := os.ReadFile(audit)
	if n := strings.Count(string(b), "\n"); n != 1 || !strings.Contains(string(b), `"approved":true`) {
		t.Fatalf("audit lines: %d\n%s", n, b)
	}
}

// TestLoginBackoffAndLogout: wrong tokens from one address make it wait,
// doubling, before its next try (another address is not slowed); logout
// ends the session.
func TestLoginBackoffAndLogout(t *testing.T) {
	h, _ := newTestHandler(t, Options{Token: "tok-1"})
	now := time.Unix(1_000_000, 0)
	h.gate.now = func() time.Time { return now }
	login := func(remote, tok string) *httptest.ResponseRecorder {
		return do(h, "POST", "/admin/login", remote, url.Values{"token": {tok}, "_csrf": {h.gate.csrf}}, nil)
	}
	for range freeLogins + 1 {
		if w := login(loop, "nope"); w.Code != 401 {
			t.Fatalf("a wrong token: %d", w.Code)
		}
	}
	if w := login(loop, "tok-1"); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
		t.Fatalf("right after a wrong token: %d, want 429", w.Code)
	}
	if w := login("[::1]:5555", "nope"); w.Code != 401 {
		t.Fatalf("another address is slowed too: %d", w.Code)
	}
	now = now.Add(1500 * time.Millisecond)
	if w := login(loop, "nope"); w.Code != 401 {
		t.Fatalf("after the wait: %d", w.Code)
	}
	now = now.Add(1500 * time.Millisecond) // the second wait is 2s
	if w := login(loop, "tok-1"); w.Code != http.StatusTooManyRequests {
		t.Fatalf("the wait did not double: %d", w.Code)
	}
	now = now.Add(time.Second)
	w := login(loop, "tok-1")
	ck := w.Result().Cookies()
	if w.Code != http.StatusSeeOther || len(ck) != 1 {
		t.Fatalf("login after the wait: %d", w.Code)
	}
	cookie := map[string]string{"Cookie": ck[0].Name + "=" + ck[0].Value}
	if w := do(h, "GET", "/admin/servers", loop, nil, cookie); w.Code != 200 || !strings.Contains(w.Body.String(), `id="logout"`) {
		t.Fatalf("logged in: %d", w.Code)
	}
	if w := do(h, "POST", "/admin/logout", loop, url.Values{}, cookie); w.Code != 403 {
		t.Fatalf("logout without CSRF: %d", w.Code)
	}
	w = do(h, "POST", "/admin/logout", loop, url.Values{"_csrf": {h.gate.csrf}}, cookie)
	if w.Code != http.StatusSeeOther || len(w.Result().Cookies()) != 1 || w.Result().Cookies()[0].MaxAge >= 0 {
		t.Fatalf("logout: %d %v", w.Code, w.Result().Cookies())
	}
	if w := do(h, "GET", "/admin/servers", loop, nil, cookie); w.Code != http.StatusSeeOther {
		t.Fatalf("the session outlived logout: %d", w.Code)
	}
}

// TestAuditLineIsBounded: a script naming thousands of capabilities, or
// a huge request id, makes one bounded audit line that still identifies
// the whole list.
func TestAuditLineIsBounded(t *testing.T) {
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	q, err := NewApprovals(ApprovalOptions{AuditFile: audit})
	if err != nil {
		t.Fatal(err)
	}
	var caps []string
	for i := range 5000 {
		caps = append(caps, "srv__tool_"+strings.Repeat("x", 40)+itoa(i))
	}
	if err := q.Audit(Decision{Kind: "script", Capabilities: caps, RequestID: strings.Repeat("r", 100000), Via: "dashboard"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(audit)
	if len(b) > 16<<10 {
		t.Fatalf("one audit line is %d bytes", len(b))
	}
	var d Decision
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Capabilities)+d.More != 5000 || d.CapabilitiesSHA256 == "" {
		t.Fatalf("the bounded line does not account for the list: %d + %d, sha %q", len(d.Capabilities), d.More, d.CapabilitiesSHA256)
	}
}

// TestGeneratedToken: a token made for the process is long, fresh each
// time, travels in the login URL's fragment only, logs in like an
// operator's token, and the login page points at the link without ever
// showing the token.
func TestGeneratedToken(t *testing.T) {
	tok := NewToken()
	if len(tok) != 64 || strings.Trim(tok, "0123456789abcdef") != "" {
		t.Fatalf("token %q: want 64 hex digits", tok)
	}
	if NewToken() == tok {
		t.Fatal("two tokens are the same")
	}
	u := LoginURL("http://127.0.0.1:8765/", tok)
	if u != "http://127.0.0.1:8765/admin/login#token="+tok {
		t.Fatalf("login URL %q", u)
	}
	if pu, err := url.Parse(u); err != nil || pu.RawQuery != "" || pu.Path != "/admin/login" || pu.Fragment != "token="+tok {
		t.Fatalf("the token must be in the fragment only: %+v %v", pu, err)
	}

	h, _ := newTestHandler(t, Options{Token: tok, TokenGenerated: true})
	if w := do(h, "GET", "/admin/servers", loop, nil, nil); w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/admin/login" {
		t.Fatalf("before login: %d %s", w.Code, w.Header().Get("Location"))
	}
	w := do(h, "GET", "/admin/login", loop, nil, nil)
	if w.Code != 200 || !strings.Contains(w.Body.String(), "login link") || strings.Contains(w.Body.String(), tok) {
		t.Fatalf("login page: %d\n%s", w.Code, w.Body)
	}
	w = do(h, "POST", "/admin/login", loop, url.Values{"token": {tok}, "_csrf": {h.gate.csrf}}, nil)
	if ck := w.Result().Cookies(); w.Code != http.StatusSeeOther || len(ck) != 1 {
		t.Fatalf("login with the generated token: %d %v", w.Code, ck)
	}
	// The script that moves the fragment into the form is served before
	// login (it is what logs in).
	if w := do(h, "GET", "/admin/assets/app.js", loop, nil, nil); w.Code != 200 || !strings.Contains(w.Body.String(), "#token=") {
		t.Fatalf("app.js: %d", w.Code)
	}
	// An operator's token gets the operator's wording.
	h2, _ := newTestHandler(t, Options{Token: "tok-1"})
	if w := do(h2, "GET", "/admin/login", loop, nil, nil); strings.Contains(w.Body.String(), "login link") || !strings.Contains(w.Body.String(), "started with a token") {
		t.Fatalf("login page with an operator's token:\n%s", w.Body)
	}
}
