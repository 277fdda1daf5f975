package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// credentialArgs are credentials given on a command line the ways servers
// are declared with them: a header as one argument, a program's own
// password flag, a session id; each with the one secret word it holds.
var credentialArgs = []struct {
	command string
	args    []string
	secret  string
	shown   string // how the argument that held it reads in the listing
}{
	{"/bin/cat", []string{"-H", "Authorization: Bearer abc123secretvalue"}, "abc123secretvalue", "Authorization: Bearer (hidden)"},
	{"/bin/cat", []string{"--header", "X-Api-Key: k3yvalue99x"}, "k3yvalue99x", "X-Api-Key: (hidden)"},
	{"/bin/cat", []string{"--session-id", "correcthorsebattery"}, "correcthorsebattery", "(hidden)"},
	{"mysql", []string{"-u", "root", "-phunter2pw", "-h", "db"}, "hunter2pw", "-p(hidden)"},
	{"sshpass", []string{"-p", "opensesame7", "ssh", "-p", "2222", "host"}, "opensesame7", "(hidden)"},
	{"redis-cli", []string{"-p", "6379", "-a", "letmein99x"}, "letmein99x", "(hidden)"},
	{"docker", []string{"run", "-i", "-e", "PGPASSWORD=swordfish", "img"}, "swordfish", "PGPASSWORD=(hidden)"},
	{"docker", []string{"exec", "-i", "db", "sh", "-c", "mysql -p1234hunter app"}, "1234hunter", "mysql -p(hidden)"},
	{"curl", []string{"-Hx-api-key:k3yvalue55x", "https://api.example.com/"}, "k3yvalue55x", "-Hx-api-key:(hidden)"},
	{"/bin/cat", []string{"--url=https://api.example.com/mcp?api_key=k3yvalue77x"}, "k3yvalue77x", "--url=https://api.example.com/mcp?api_key=(hidden)"},
}

// TestCredentialArgsStayOutOfListings: servers --json, check --json and
// the dashboard's servers page and API hide these credentials, and keep
// what says what the argument is; the ports next to them stay.
func TestCredentialArgsStayOutOfListings(t *testing.T) {
	w := newWorld(t)
	var b strings.Builder
	b.WriteString("servers:\n")
	for i, c := range credentialArgs {
		b.WriteString("  s" + string(rune('a'+i)) + ":\n    command: " + c.command + "\n    args: [")
		for j, a := range c.args {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(`"` + a + `"`)
		}
		b.WriteString("]\n")
	}
	w.writeUser(b.String())
	outs := map[string]string{}
	r := sluiceProc(t, "", "servers", "--json")
	want(t, r, exitOK, `"2222"`, `"6379"`, `"root"`)
	outs["servers --json"] = r.stdout + r.stderr
	r = sluiceProc(t, "", "check", "--json")
	outs["check --json"] = r.stdout + r.stderr
	addr, _, _, _, stop := startDashboardCmd(t)
	defer stop()
	d := newDash(t, addr)
	for _, p := range []string{"/admin/servers", "/admin/api/servers"} {
		resp, body := d.get(p)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d\n%s", p, resp.StatusCode, body)
		}
		outs["GET "+p] = body
	}
	for _, c := range credentialArgs {
		if !strings.Contains(outs["servers --json"], `"`+c.shown+`"`) {
			t.Errorf("servers --json does not show %q for %s %q:\n%s", c.shown, c.command, c.args, outs["servers --json"])
		}
		for where, out := range outs {
			if strings.Contains(out, c.secret) {
				t.Errorf("%s shows %s (from %s %q):\n%s", where, c.secret, c.command, c.args, out)
			}
		}
	}
}

// TestCredentialArgsStayOutOfAddAndImport: the diff 'sluice add' prints
// and the usage hint hide them (the file keeps them as given), and
// 'sluice import' skips a client's server that passes one, saying where
// it is and never what.
func TestCredentialArgsStayOutOfAddAndImport(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers: {}\n")
	var literal []string
	for i, c := range credentialArgs {
		id := "s" + string(rune('a'+i))
		add := append([]string{"add", id, "--", c.command}, c.args...)
		r := sluiceProc(t, "", add...)
		want(t, r, exitOK, c.shown)
		if strings.Contains(r.stdout+r.stderr, c.secret) {
			t.Errorf("sluice add %s shows %s:\n%s", id, c.secret, r)
		}
		hint := append([]string{"add", id + "x", c.command}, c.args...)
		r = sluiceProc(t, "", hint...)
		want(t, r, exitUsage, "goes after --")
		if strings.Contains(r.stdout+r.stderr, c.secret) {
			t.Errorf("sluice add's hint shows %s:\n%s", c.secret, r)
		}
		literal = append(literal, c.secret)
	}
	b, err := os.ReadFile(filepath.Join(w.home, "mcp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range literal {
		if !strings.Contains(string(b), s) {
			t.Fatalf("the file lost %s:\n%s", s, b)
		}
	}

	for i, c := range credentialArgs {
		var q []string
		for _, a := range c.args {
			q = append(q, `"`+a+`"`)
		}
		file := filepath.Join(w.project, ".mcp.json")
		writeFile(t, file, `{"mcpServers":{"imp`+string(rune('a'+i))+`":{"command":"`+c.command+`","args":[`+strings.Join(q, ",")+`]}}}`)
		r := sluiceProc(t, "", "import", file)
		want(t, r, exitOK, "skipped", "looks like a secret")
		if strings.Contains(r.stdout+r.stderr, c.secret) {
			t.Errorf("sluice import shows %s:\n%s", c.secret, r)
		}
	}
}

// TestAddURLDiffHidesItsKey: the diff 'sluice add --url' and 'sluice
// update --url' print hides a key in the url's path and its query values
// as 'sluice servers' does; the file keeps the url as given.
func TestAddURLDiffHidesItsKey(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers: {}\n")
	const key, key2, pw = "sk_live_abcdefgh12345678", "Zq8xW2vR7tY4uP9s", "hunter2pwsecret"
	r := sluiceProc(t, "", "add", "hosted", "--url", "https://mcp.example.com/v1/"+key+"/mcp?apikey="+pw+"&region=eu")
	want(t, r, exitOK, "https://mcp.example.com/v1/(hidden)/mcp?apikey=(hidden)&region=(hidden)")
	r2 := sluiceProc(t, "", "update", "hosted", "--url", "https://mcp.example.com/v2/"+key2+"/mcp?"+pw)
	want(t, r2, exitOK, "-", "+", "https://mcp.example.com/v2/(hidden)/mcp?(hidden)")
	for _, out := range []string{r.stdout + r.stderr, r2.stdout + r2.stderr} {
		for _, s := range []string{key, key2, pw} {
			if strings.Contains(out, s) {
				t.Errorf("the output shows %s:\n%s", s, out)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(w.home, "mcp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), key2) || !strings.Contains(string(b), pw) {
		t.Fatalf("the file lost the url as given:\n%s", b)
	}
}

// TestURLKeyInThePortPlaceStaysOutOfCheck: a key typed after the host
// with : for / is refused by 'sluice check' (and --json) without being
// printed, in the url or in the reason.
func TestURLKeyInThePortPlaceStaysOutOfCheck(t *testing.T) {
	w := newWorld(t)
	const key = "sk_live_abcdefgh12345678"
	w.writeUser("servers:\n  hosted:\n    url: \"https://mcp.example.com:" + key + "/mcp\"\n")
	r := sluiceProc(t, "", "check")
	want(t, r, exitFailure, `URL "https://mcp.example.com:…/mcp" refused: not a URL: invalid port "…" after host`)
	rj := sluiceProc(t, "", "check", "--json")
	for _, out := range []string{r.stdout + r.stderr, rj.stdout + rj.stderr} {
		if strings.Contains(out, key) {
			t.Errorf("check shows the key:\n%s", out)
		}
	}
}

// TestMalformedEnvFlagDoesNotEchoAValue: an --env without = may be a
// credential pasted without its name: the error says which --env and how
// to write it, and repeats it only when it reads as a name.
func TestMalformedEnvFlagDoesNotEchoAValue(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers: {}\n")
	const pasted = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	for _, c := range []struct{ arg, want string }{
		{pasted, "--env #2 is not NAME=VALUE"},
		{"hunter2pwsecret", "--env #2 is not NAME=VALUE"},
		{"AKIAIOSFODNN7EXAMPLE", "--env #2 is not NAME=VALUE"},
		{"ABCDEFGH2JKLMNOP", "--env #2 is not NAME=VALUE"},
		{"=" + pasted, "--env #2 has no name before its ="},
		{"GITHUB_TOKEN", "--env GITHUB_TOKEN has no value; write --env GITHUB_TOKEN=VALUE, or --env 'GITHUB_TOKEN=${env:GITHUB_TOKEN}'"},
	} {
		r := sluiceProc(t, "", "add", "x", "--env", "MODE=debug", "--env", c.arg, "--", "/bin/cat")
		want(t, r, exitUsage, c.want)
		if c.arg != "GITHUB_TOKEN" && strings.Contains(r.stdout+r.stderr, strings.TrimPrefix(c.arg, "=")) {
			t.Errorf("the error repeats the --env text:\n%s", r)
		}
	}
}

// TestRemoteTransportErrorsInTheDebugLogHideTheURL: the debug log's
// "retrying after a transport error" repeats the HTTP client's error,
// which names the url: its key in the path and query stay hidden.
func TestRemoteTransportErrorsInTheDebugLogHideTheURL(t *testing.T) {
	w := newWorld(t)
	const key, q = "sk_live_abcdefgh12345678", "hunter2pwsecret"
	// port 1 on loopback: nothing listens, so every attempt fails to dial
	w.writeUser("servers:\n  r:\n    url: \"http://127.0.0.1:1/v1/" + key + "/mcp?api_key=" + q + "\"\n    allowPrivate: true\n")
	t.Setenv("SLUICE_LOG_LEVEL", "debug")
	r := sluiceProc(t, "", "find", "--server", "r", "--refresh")
	if !strings.Contains(r.stderr, "retrying after a transport error") || !strings.Contains(r.stderr, `/v1/…/mcp?api_key=…`) {
		t.Fatalf("no retry logged with the url hidden:\n%s", r)
	}
	for _, s := range []string{key, q} {
		if strings.Contains(r.stdout+r.stderr, s) {
			t.Errorf("the output shows %s:\n%s", s, r)
		}
	}
}
