package main

import (
	"fmt"
	"os"
	"path/filepath"
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
