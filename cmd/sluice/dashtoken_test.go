package main

import (
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

// startDashboardCmd runs 'sluice dashboard 127.0.0.1:0' and returns its
// address, its login link, its stdout and its stderr as they grow.
func startDashboardCmd(t *testing.T) (addr, link string, stdout, stderr *syncBuffer, stop func()) {
	t.Helper()
	cmd := exec.Command(sluiceBin, "dashboard", "127.0.0.1:0")
	stdout, stderr, done := startWaited(t, cmd)
	stop = func() {
		_ = interrupt(cmd)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("dashboard after its interrupt: %v\n%s", err, stderr)
			}
		case <-time.After(60 * time.Second):
			t.Errorf("dashboard did not end on its interrupt")
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(stderr.String(), "\n") {
			if m := dashLoginLine.FindStringSubmatch(line); m != nil {
				noteDashboardLine(line)
				return strings.TrimPrefix(m[1], "http://"), lineLogin(m), stdout, stderr, stop
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("sluice dashboard did not say where it is:\n%s", stderr)
	return
}

// tokenOf is the token in a login link's fragment.
func tokenOf(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil || !strings.HasPrefix(u.Fragment, "token=") || u.RawQuery != "" {
		t.Fatalf("login link %q: the token must be in the fragment", link)
	}
	return strings.TrimPrefix(u.Fragment, "token=")
}

// TestDashboardPerProcessToken: a dashboard without an operator's token
// does not rely on loopback alone. sluice makes a token for the process,
// prints the login link on stderr only (once, nowhere else), and asks for
// it before anything but the login page; each process has its own.
func TestDashboardPerProcessToken(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	addr, link, stdout, stderr, stop := startDashboardCmd(t)
	if link == "" {
		t.Fatalf("no login link was printed:\n%s", stderr)
	}
	tok := tokenOf(t, link)
	if len(tok) != 64 || !strings.HasPrefix(link, "http://"+addr+"/admin/login#token=") {
		t.Fatalf("login link %q", link)
	}

	// Loopback alone gets the login page and nothing else.
	raw := &http.Client{Timeout: 90 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, p := range []string{"/admin/servers", "/admin/activity", "/admin/tools?capability=fx__echo"} {
		resp, err := raw.Get("http://" + addr + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/admin/login" {
			t.Errorf("GET %s without logging in: %d %s", p, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	anon := newAnonDash(t, addr)
	if resp, _ := anon.get("/admin/api/status"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the API without logging in: %d", resp.StatusCode)
	}
	resp, page := anon.get("/admin/login")
	if resp.StatusCode != 200 || !strings.Contains(page, "login link") || strings.Contains(page, tok) {
		t.Errorf("login page: %d\n%s", resp.StatusCode, page)
	}
	if resp, _ := anon.post("/admin/api/tools/call", url.Values{"capability": {"fx__echo"}, "arguments": {`{"text":"x"}`}}, true); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a call without logging in: %d", resp.StatusCode)
	}
	if resp, _ := anon.post("/admin/login", url.Values{"token": {"not-it"}, "_csrf": {anon.csrf}}, false); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d", resp.StatusCode)
	}

	// The printed link logs in; the dashboard then works as before.
	d := newDash(t, addr)
	resp, body := d.get("/admin/api/status")
	if resp.StatusCode != 200 || !strings.Contains(body, `"ID": "fx"`) || strings.Contains(body, tok) {
		t.Fatalf("status after login: %d %s", resp.StatusCode, body)
	}
	d.get("/admin/tools")
	if resp, body := d.post("/admin/api/tools/call", url.Values{"capability": {"fx__echo"}, "arguments": {`{"text":"logged in"}`}}, true); resp.StatusCode != 200 || !strings.Contains(body, "logged in") {
		t.Fatalf("a call after login: %d %s", resp.StatusCode, body)
	}

	// Another process has another token; this one's does not open it.
	addr2, link2, _, _, stop2 := startDashboardCmd(t)
	if tok2 := tokenOf(t, link2); tok2 == tok {
		t.Fatal("two processes made the same token")
	}
	other := newAnonDash(t, addr2)
	other.get("/admin/login")
	if resp, _ := other.post("/admin/login", url.Values{"token": {tok}, "_csrf": {other.csrf}}, false); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the first process's token opened the second: %d", resp.StatusCode)
	}
	// stderr is a pipe (as an MCP client's log is): the link is in a
	// file only the user can read, named on stderr, gone at the end.
	file := loginFileOf(t, w, stderr)
	if !strings.Contains(stderr.String(), "log in with the link in "+file+",") {
		t.Errorf("stderr does not name the login file %s:\n%s", file, stderr)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("login file %s: %v %v, want mode 0600", file, fi, err)
	}
	stop2()
	stop()
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the login file outlived its process: %v", err)
	}
	if strings.Contains(stdout.String(), tok) || strings.Contains(stderr.String(), tok) {
		t.Errorf("the token reached stdout or stderr:\n%s\n%s", stdout, stderr)
	}
}

// loginFileOf is the login file a dashboard line names, which must be in
// the state directory, named for the process and a random part.
func loginFileOf(t *testing.T, w *world, stderr *syncBuffer) string {
	t.Helper()
	m := regexp.MustCompile(`dashboard-\d+-[0-9a-f]{12}\.login`).FindString(stderr.String())
	if m == "" {
		t.Fatalf("no login file named on stderr:\n%s", stderr)
	}
	return filepath.Join(w.state, "sluice", m)
}

// TestDashboardHidesSecretArgsOfUserServers: the Servers page and its API
// hide a user declaration's literal credentials in args, as 'sluice
// servers' does; a project declaration's args are shown as declared (what
// trusting it means).
func TestDashboardHidesSecretArgsOfUserServers(t *testing.T) {
	w := newWorld(t)
	const gh = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	w.writeUser("servers:\n  leaky:\n    command: /bin/cat\n    args: [--password, swordfish, --token=" + gh + ", plain-arg]\n")
	w.writeProject("servers:\n  proj:\n    command: /bin/cat\n    args: [--password, projectpw1]\n")
	addr, _, _, _, stop := startDashboardCmd(t)
	defer stop()
	d := newDash(t, addr)
	for _, p := range []string{"/admin/servers", "/admin/api/servers"} {
		resp, body := d.get(p)
		if resp.StatusCode != 200 || !strings.Contains(body, "plain-arg") || !strings.Contains(body, "projectpw1") {
			t.Fatalf("GET %s: %d\n%s", p, resp.StatusCode, body)
		}
		if strings.Contains(body, "swordfish") || strings.Contains(body, gh) {
			t.Errorf("GET %s shows a user declaration's secret arg:\n%s", p, body)
		}
	}
}
