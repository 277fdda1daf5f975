package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// secretDecl declares a server whose env, args and header-free command
// line hold literal secrets beside plain values and references.
const secretDecl = `  leaky:
    command: /bin/cat
    args: [--token, ghp_abcdefghijklmnopqrstuvwxyz0123456789, "--api-key=sk-live1234567890abcdef", "postgres://me:pw1secret@db.local/x", plain-arg]
    env:
      GITHUB_TOKEN: ghp_abcdefghijklmnopqrstuvwxyz0123456789
      DB_PASSWORD: hunter2pw
      MODE: debug
      REF: "${env:GITHUB_TOKEN}"
`

var leakedSecrets = []string{"ghp_abcdefghijklmnopqrstuvwxyz0123456789", "sk-live1234567890abcdef", "hunter2pw", "pw1secret"}

func noSecrets(t *testing.T, what string, r result) {
	t.Helper()
	for _, s := range leakedSecrets {
		if strings.Contains(r.stdout+r.stderr, s) {
			t.Fatalf("%s prints the literal secret %q:\n%s", what, s, r)
		}
	}
}

func TestCheckAndServersMaskSecretLookingValues(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + secretDecl)
	for _, args := range [][]string{{"check"}, {"servers"}} {
		r := sluice(t, "", args...)
		want(t, r, exitOK, "GITHUB_TOKEN=(hidden)", "DB_PASSWORD=(hidden)", `MODE="debug"`, `REF="${env:GITHUB_TOKEN}"`)
		noSecrets(t, args[0], r)
	}
	r := sluice(t, "", "servers", "--json")
	want(t, r, exitOK)
	noSecrets(t, "servers --json", r)
	var rep struct {
		Servers []struct {
			Args []string          `json:"args"`
			Env  map[string]string `json:"env"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Servers) != 1 {
		t.Fatalf("servers --json: %v\n%s", err, r)
	}
	s := rep.Servers[0]
	wantArgs := []string{"--token", "(hidden)", "--api-key=(hidden)", "postgres://me:(hidden)@db.local/x", "plain-arg"}
	if strings.Join(s.Args, " ") != strings.Join(wantArgs, " ") {
		t.Fatalf("servers --json args = %q, want %q", s.Args, wantArgs)
	}
	if s.Env["MODE"] != "debug" || s.Env["REF"] != "${env:GITHUB_TOKEN}" || s.Env["GITHUB_TOKEN"] != "(hidden)" {
		t.Fatalf("servers --json env = %v", s.Env)
	}
}

// TestTrustPlanShowsEveryValue: the trust plan and the listing of a
// project server hide nothing: its values come from the repository, and a
// value hidden there would be one the repository chose to keep from the
// person trusting it.
func TestTrustPlanShowsEveryValue(t *testing.T) {
	w := newWorld(t)
	w.writeProject("servers:\n" + secretDecl)
	r := sluice(t, "", "trust", "leaky", "--yes")
	want(t, r, exitOK, `GITHUB_TOKEN="ghp_abcdefghijklmnopqrstuvwxyz0123456789"`, "sk-live1234567890abcdef", "Recorded")
	if strings.Contains(r.stdout+r.stderr, "(hidden)") {
		t.Fatalf("the trust plan hides a value the project server would receive:\n%s", r)
	}
	r = sluice(t, "", "servers")
	want(t, r, exitOK, `DB_PASSWORD="hunter2pw"`)
}

// TestRemoteURLQueryStaysOutOfCheckAndServers: a remote server's url often
// carries its key in the query; check's errors and the listings show the
// parameter names only, whether the key looks like one or not.
func TestRemoteURLQueryStaysOutOfCheckAndServers(t *testing.T) {
	w := newWorld(t)
	w.writeUser(`servers:
  good:
    url: "https://mcp.example/mcp?api_key=k1short&team=t7"
  badscheme:
    url: "ftp://mcp.example/mcp?api_key=k2short"
  badhost:
    url: "https://mcp exa/mcp?key=k3short"
  userinfo:
    url: "https://me:pw4short@mcp.example/mcp?key=k5short"
`)
	keys := []string{"k1short", "t7", "k2short", "k3short", "pw4short", "k5short"}
	for _, args := range [][]string{{"check"}, {"servers"}, {"servers", "--json"}} {
		r := sluice(t, "", args...)
		for _, k := range keys {
			if strings.Contains(r.stdout+r.stderr, k) {
				t.Errorf("sluice %v shows the query value %q:\n%s", args, k, r)
			}
		}
		if !strings.Contains(r.stdout+r.stderr, "api_key=") {
			t.Errorf("sluice %v does not name the query parameter:\n%s", args, r)
		}
	}
	r := sluice(t, "", "check")
	want(t, r, exitFailure, `URL "ftp://mcp.example/mcp?api_key=…" refused: scheme ftp is not http or https`)
}

// TestServersMaskArgsByTheirFlag: servers hides a plain password after a
// flag named for it, and shows a plain word after a flag that only
// mentions a credential.
func TestServersMaskArgsByTheirFlag(t *testing.T) {
	w := newWorld(t)
	w.writeUser(`servers:
  a:
    command: /bin/cat
    args: [--password, swordfish, --auth-mode, interactive, --secret-store, keychain]
`)
	r := sluiceProc(t, "", "servers", "--json")
	want(t, r, exitOK, `"--password"`, `"(hidden)"`, `"interactive"`, `"keychain"`)
	if strings.Contains(r.stdout+r.stderr, "swordfish") {
		t.Errorf("the password is shown:\n%s", r)
	}
}
