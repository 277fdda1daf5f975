package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const secretValue = "s3cr3t-value-that-must-not-print"

func TestTrustUntrustRoundTrip(t *testing.T) {
	w := newWorld(t)
	t.Setenv("SLUICE_TEST_TOKEN", secretValue)
	w.writeUser("servers:\n" + fixture(t, "mine"))
	w.writeProject("servers:\n" + fixture(t, "proj") +
		"    env: {TOKEN: \"${env:SLUICE_TEST_TOKEN}\", PLAIN: \"plain literal\"}\n    passEnv: [SSH_AUTH_SOCK]\n")
	projFile := filepath.Join(w.project, ".sluice", "mcp.yaml")

	// stdin is not a terminal: trust records without asking and says so.
	r := sluice(t, "", "trust", "proj", "--action-class", "read")
	want(t, r, exitOK,
		"project root:  "+w.project,
		"declared at:   "+projFile+":2:3",
		`env:           PLAIN="plain literal"`,
		`               TOKEN="${env:SLUICE_TEST_TOKEN}"`,
		"passEnv:       SSH_AUTH_SOCK",
		"!! receives your SLUICE_TEST_TOKEN, under the name TOKEN",
		"!! receives your SSH_AUTH_SOCK (passEnv",
		"action class:  read",
		"Recorded: proj is trusted")
	if strings.Contains(r.stdout+r.stderr, secretValue) {
		t.Fatalf("trust printed the value behind a reference:\n%s", r)
	}
	if strings.Contains(r.stderr, "[y/N]") {
		t.Fatalf("trust must not prompt without a terminal:\n%s", r)
	}
	r = sluice(t, "", "servers", "--json")
	want(t, r, exitOK, `"trust": "trusted"`, `"actionClass": "read"`, `"TOKEN": "${env:SLUICE_TEST_TOKEN}"`, `"PLAIN": "plain literal"`,
		`"var": "SLUICE_TEST_TOKEN"`, `"as": "TOKEN"`)
	if strings.Contains(r.stdout, secretValue) {
		t.Fatalf("servers --json printed the value behind a reference:\n%s", r)
	}
	want(t, sluice(t, "", "find"), exitOK, "proj", "trusted")

	// Untrust, twice: the second is a no-op, not an error.
	want(t, sluice(t, "", "untrust", "proj"), exitOK, "Removed the trust record of proj")
	want(t, sluice(t, "", "untrust", "proj"), exitOK, "No trust record of proj")
	want(t, sluice(t, "", "servers"), exitOK, "untrusted", "sluice trust proj")

	// On a terminal: asks; "n" records nothing, "y" records.
	fakeTerminal(t)
	r = sluice(t, "n\n", "trust", "proj")
	want(t, r, exitFailure, "Record trust in proj? [y/N]", "not recorded")
	want(t, sluice(t, "", "servers"), exitOK, "untrusted")
	r = sluice(t, "y\n", "trust", "proj")
	want(t, r, exitOK, "Recorded: proj is trusted", "action class none (tools annotated read-only run; others ask)")
	// --yes skips the question even on a terminal.
	r = sluice(t, "", "--yes", "trust")
	if r.code != exitUsage {
		t.Fatalf("flags before the command name are not the command: %s", r)
	}
	r = sluice(t, "", "trust", "--yes", "proj", "--action-class", "execute")
	want(t, r, exitOK, "already trusted", "Recorded: proj is trusted")
	if strings.Contains(r.stderr, "[y/N]") {
		t.Fatalf("--yes must not ask:\n%s", r)
	}
	if strings.Contains(r.stdout+r.stderr, secretValue) {
		t.Fatalf("trust printed the value behind a reference:\n%s", r)
	}

	// Errors: user scope, unknown id, bad class.
	want(t, sluice(t, "", "trust", "mine"), exitUsage, "user scope", "actionClass")
	want(t, sluice(t, "", "trust", "nope"), exitUsage, `no server "nope"`, "sluice servers")
	want(t, sluice(t, "", "trust", "proj", "--action-class", "write"), exitUsage, "not one of read, execute, unknown")
	want(t, sluice(t, "", "untrust", "mine"), exitUsage, "user scope")
}

func TestTrustBecomesStaleWhenTheDeclarationChanges(t *testing.T) {
	w := newWorld(t)
	base := "servers:\n" + fixture(t, "proj")
	w.writeProject(base)
	want(t, sluice(t, "", "trust", "proj", "--yes"), exitOK, "Recorded")
	w.writeProject(base + "    timeoutMs: 1000\n")
	r := sluice(t, "", "servers")
	want(t, r, exitOK, "stale", "timeoutMs", "sluice trust proj")
	r = sluice(t, "", "trust", "proj", "--yes")
	want(t, r, exitOK, "changed since: timeoutMs", "Recorded")
}

func TestTrustWithProjectFlagFromElsewhere(t *testing.T) {
	w := newWorld(t)
	w.writeProject("servers:\n" + fixture(t, "proj"))
	t.Chdir(w.root) // not inside the project
	want(t, sluice(t, "", "servers"), exitOK, "No servers declared")
	want(t, sluice(t, "", "trust", "proj"), exitUsage, `no server "proj"`)
	want(t, sluice(t, "", "trust", "proj", "--project", w.project), exitOK, "Recorded: proj is trusted in "+w.project)
	want(t, sluice(t, "", "servers", "--project", w.project), exitOK, "trusted")
	if _, err := os.Stat(filepath.Join(w.home, "trust.json")); err != nil {
		t.Fatalf("trust file not written: %v", err)
	}
	want(t, sluice(t, "", "untrust", "proj", "--project", w.project), exitOK, fmt.Sprintf("Removed the trust record of proj in %s", w.project))
}

// TestTrustFileWithUnderscoreID: a trust file written by an earlier version
// with a record for an id ending in _ (which no declaration may use any
// more) keeps the other records in force; servers and check warn about it
// with the command that removes it, that command removes exactly it, and
// trust refuses such an id.
func TestTrustFileWithUnderscoreID(t *testing.T) {
	w := newWorld(t)
	w.writeProject("servers:\n" + fixture(t, "proj"))
	want(t, sluiceProc(t, "", "trust", "proj", "--yes"), exitOK, "Recorded")
	file := filepath.Join(w.home, "trust.json")
	var body struct {
		Version int              `json:"version"`
		Records []map[string]any `json:"records"`
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &body); err != nil || len(body.Records) != 1 {
		t.Fatalf("trust file %s: %v", b, err)
	}
	old := map[string]any{}
	for k, v := range body.Records[0] {
		old[k] = v
	}
	old["id"] = "proj_"
	body.Records = append(body.Records, old)
	b, _ = json.Marshal(body)
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	root := body.Records[0]["projectRoot"].(string)

	r := sluiceProc(t, "", "servers")
	want(t, r, exitOK, "warning", `record 1: server id "proj_" ends in _`, "the other records are in force", "sluice untrust proj_ --project "+root)
	if !regexp.MustCompile(`(?m)^proj\s+project\s+\S+\s+trusted\b`).MatchString(r.stdout) {
		t.Fatalf("proj is not trusted beside the ignored record:\n%s", r)
	}
	want(t, sluiceProc(t, "", "check"), exitOK, `"proj_" ends in _`)
	want(t, sluiceProc(t, "", "trust", "proj_", "--yes"), exitUsage, `"proj_"`)

	// A new trust keeps the ignored record (nothing is dropped behind the
	// operator's back).
	w.writeProject("servers:\n" + fixture(t, "proj") + fixture(t, "other"))
	want(t, sluiceProc(t, "", "trust", "other", "--yes"), exitOK, "Recorded")
	if b, _ := os.ReadFile(file); !strings.Contains(string(b), `"proj_"`) {
		t.Fatalf("trust dropped the ignored record:\n%s", b)
	}

	want(t, sluiceProc(t, "", "untrust", "proj_", "--project", root), exitOK, "Removed the trust record of proj_")
	r = sluiceProc(t, "", "servers")
	want(t, r, exitOK)
	if strings.Contains(r.stdout+r.stderr, "proj_") || strings.Contains(r.stdout, "untrusted") {
		t.Fatalf("after untrust proj_:\n%s", r)
	}
	b, _ = os.ReadFile(file)
	if err := json.Unmarshal(b, &body); err != nil || len(body.Records) != 2 {
		t.Fatalf("trust file after untrust: %s (%v)", b, err)
	}
}
