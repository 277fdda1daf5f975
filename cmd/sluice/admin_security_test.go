package main

import (
	"bytes"
	"context"
	"errors"
	"html"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestAdminRemoteNeedsToken: a dashboard open to other machines without a
// login would run tools and trust servers for anyone; every command that
// serves one refuses --admin-remote without a token, naming the fix.
func TestAdminRemoteNeedsToken(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	for _, args := range [][]string{
		{"serve", "--http", "127.0.0.1:0", "--admin-remote"},
		{"serve", "--admin", "127.0.0.1:0", "--admin-remote"},
		{"serve", "--http", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--admin-remote"},
		{"dashboard", "127.0.0.1:0", "--admin-remote"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, sluiceBin, args...)
		cmd.Env = append(os.Environ(), "SLUICE_TOKEN=")
		cmd.Env = filterEnv(cmd.Env, "SLUICE_TOKEN")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage {
			t.Fatalf("%v: %v, want exit %d\n%s", args, err, exitUsage, errb.String())
		}
		if s := errb.String(); !strings.Contains(s, "--admin-remote needs a token") || !strings.Contains(s, "--token-file") {
			t.Errorf("%v: the error does not name the fix:\n%s", args, s)
		}
	}
	// With a token, stdio with --admin is accepted (the token guards the
	// dashboard); stdio alone still refuses one.
	tok := filepath.Join(w.root, "token")
	if err := os.WriteFile(tok, []byte("tok-9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := sluiceProc(t, "", "serve", "--token-file", tok)
	want(t, r, exitUsage, "a token applies to --http or --admin only")
	r = sluiceProc(t, "", "serve", "--admin", "127.0.0.1:0", "--admin-remote", "--token-file", tok)
	if r.code == exitUsage {
		t.Fatalf("stdio --admin with a token: %s", r)
	}
}

func filterEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

var (
	digestField  = regexp.MustCompile(`<input type="hidden" name="digest" value="([0-9a-f]+)">`)
	programField = regexp.MustCompile(`<input type="hidden" name="program" value="([^"]*)">`)
)

// TestDashboardTrustBindsWhatWasShown: the trust page's confirmation
// carries the digest it showed; a declaration changed between the view
// and the click is refused with 409, and nothing is trusted.
func TestDashboardTrustBindsWhatWasShown(t *testing.T) {
	w := newWorld(t)
	w.writeProject("servers:\n" + fixture(t, "proj"))
	addr, _, stop := startHTTPServeProc(t, nil)
	defer stop()
	d := newDash(t, addr)
	trustFile := filepath.Join(w.home, "trust.json")
	var program string
	view := func() string {
		resp, body := d.get("/admin/servers/proj/trust")
		m, p := digestField.FindStringSubmatch(body), programField.FindStringSubmatch(body)
		if resp.StatusCode != http.StatusOK || m == nil || p == nil || p[1] == "" {
			t.Fatalf("trust page: %d, no digest or program field:\n%s", resp.StatusCode, body)
		}
		program = html.UnescapeString(p[1])
		return m[1]
	}
	shown := view()
	// Swapped after the view: the click must not trust the new one.
	w.writeProject("servers:\n" + fixture(t, "proj") + "    env: {INJECTED: \"yes\"}\n")
	resp, body := d.post("/admin/servers/proj/trust", url.Values{"_csrf": {d.csrf}, "digest": {shown}, "program": {program}}, false)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "the declaration changed since you viewed it; review again") {
		t.Fatalf("a swapped declaration: %d\n%s", resp.StatusCode, body)
	}
	if _, err := os.Stat(trustFile); !os.IsNotExist(err) {
		b, _ := os.ReadFile(trustFile)
		t.Fatalf("the swapped declaration was trusted: %v %s", err, b)
	}
	// A form without the digest trusts nothing either.
	if resp, _ := d.post("/admin/servers/proj/trust", url.Values{"_csrf": {d.csrf}}, false); resp.StatusCode == http.StatusOK {
		if _, err := os.Stat(trustFile); !os.IsNotExist(err) {
			t.Fatal("a trust form without a digest trusted the server")
		}
	}
	// Reviewed again: trusted.
	again := view()
	if again == shown {
		t.Fatal("the digest did not change with the declaration")
	}
	resp, _ = d.post("/admin/servers/proj/trust", url.Values{"_csrf": {d.csrf}, "digest": {again}, "program": {program}}, false)
	b, err := os.ReadFile(trustFile)
	if resp.StatusCode != http.StatusOK || err != nil || !strings.Contains(string(b), again) {
		t.Fatalf("trust after review: %d %v %s", resp.StatusCode, err, b)
	}
}

var promptPre = regexp.MustCompile(`(?s)<pre id="trust-prompt" class="card">(.*?)</pre>`)

// TestDashboardTrustPageIsTheCLIPrompt: the trust page shows what 'sluice
// trust' shows, a project declaration's literal values included (they are
// in a repository file and are what is trusted), references unexpanded.
func TestDashboardTrustPageIsTheCLIPrompt(t *testing.T) {
	w := newWorld(t)
	w.writeProject("servers:\n" + fixture(t, "proj") + "    env: {LIT_VALUE: \"literal-v4lue\", FROM_ENV: \"${env:SLUICE_TEST_REF}\"}\n")
	fakeTerminal(t)
	cli := sluice(t, "n\n", "trust", "proj")
	if !strings.Contains(cli.stdout+cli.stderr, "literal-v4lue") {
		t.Fatalf("the CLI prompt lacks the literal:\n%s", cli)
	}
	addr, _, stop := startHTTPServeProc(t, nil)
	defer stop()
	d := newDash(t, addr)
	_, body := d.get("/admin/servers/proj/trust")
	m := promptPre.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no prompt on the trust page:\n%s", body)
	}
	page := html.UnescapeString(m[1])
	for _, s := range []string{"literal-v4lue", "${env:SLUICE_TEST_REF}"} {
		if !strings.Contains(page, s) {
			t.Errorf("the trust page lacks %q:\n%s", s, page)
		}
	}
	lines := 0
	for _, l := range strings.Split(page, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		lines++
		if !strings.Contains(cli.stdout+cli.stderr, l) {
			t.Errorf("the trust page shows a line the CLI does not: %q\nCLI:\n%s", l, cli)
		}
	}
	if lines < 3 {
		t.Fatalf("the trust page's prompt is short:\n%s", page)
	}
	// The servers page shows the project's values as declared too.
	if _, servers := d.get("/admin/servers"); !strings.Contains(servers, "LIT_VALUE=literal-v4lue") {
		t.Errorf("the servers page masks a project literal")
	}
}

// TestDashboardRefusalsCarryCSP: on the MCP listener, a refused /admin
// request (foreign Host or Origin) is answered by the dashboard's own gate,
// with its security headers.
func TestDashboardRefusalsCarryCSP(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	addr, _, stop := startHTTPServeProc(t, nil)
	defer stop()
	d := newDash(t, addr)
	for _, hdr := range [][]string{{"Host", "evil.example"}, {"Origin", "http://evil.example"}} {
		resp, _ := d.get("/admin/servers", hdr...)
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%v: %d, want 403", hdr, resp.StatusCode)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%v: the refusal has no dashboard headers: %v", hdr, resp.Header)
		}
	}
	// /mcp keeps the MCP listener's own checks.
	if resp, _ := d.get("/mcp", "Host", "evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("/mcp with a foreign Host: %d", resp.StatusCode)
	}
}
