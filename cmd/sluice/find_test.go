package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindMissingRefreshThenCached(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx") + fixture(t, "gen", "-tools", "3"))

	// Nothing recorded: each server says so and names the refresh command.
	r := sluice(t, "", "find")
	want(t, r, exitOK, "missing", "fix: run 'sluice find --server fx --refresh'", "fix: run 'sluice find --server gen --refresh'", "No tools known yet.")
	noChildren(t, "find")

	// A scoped refresh launches exactly that server and lists its tools.
	r = sluice(t, "", "find", "--server", "gen", "--refresh")
	want(t, r, exitOK, "live", "gen__echo", "gen__tool_0003")
	if strings.Contains(r.stdout, "fx__") {
		t.Fatalf("refresh of gen listed fx:\n%s", r)
	}
	noChildren(t, "find --refresh")

	// From now on the catalog answers, ranked, without launching.
	r = sluice(t, "", "find", "echo")
	want(t, r, exitOK, "cached", `Tools matching "echo"`)
	lines := toolLines(r.stdout)
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "gen__echo") {
		t.Fatalf("gen__echo must rank first for \"echo\":\n%s", r)
	}
	noChildren(t, "cached find")

	// Flags after the query, several words make one query.
	r = sluice(t, "", "find", "generated", "tool", "--server", "gen", "--json")
	if r.code != exitOK {
		t.Fatal(r)
	}
	var res struct {
		Query   string `json:"query"`
		Servers []struct {
			ID, Trust, ActionClass, Provenance, Run string
			Tools                                   int
			RecordedAt                              *string
		} `json:"servers"`
		Tools []struct {
			Capability, Server, Tool, Description string
			ReadOnly                              bool
			Score                                 int
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("find --json: %v\n%s", err, r)
	}
	if res.Query != "generated tool" || len(res.Servers) != 1 || res.Servers[0].Provenance != "cached" || res.Servers[0].RecordedAt == nil ||
		len(res.Tools) != 3 || res.Tools[0].Score == 0 || !res.Tools[0].ReadOnly || res.Tools[0].Server != "gen" {
		t.Fatalf("find --json shape: %+v", res)
	}
	noChildren(t, "find --json")

	// --limit and "more".
	r = sluice(t, "", "find", "--limit", "2", "--server", "gen")
	want(t, r, exitOK, "more; narrow the query or raise --limit")

	// Unknown server: bad input naming the declared ones.
	want(t, sluice(t, "", "find", "--server", "nope"), exitUsage, `no server "nope"`, "declared: fx, gen")
	want(t, sluice(t, "", "find", "zzzz-no-such-thing"), exitOK, `No tools match "zzzz-no-such-thing"`)
}

func TestFindRefreshFailureExitsWithTheServerError(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "bad", "-mode", "exit-at-start"))
	r := sluice(t, "", "find", "--server", "bad", "--refresh")
	want(t, r, exitFailure, "server bad", "failed")
	noChildren(t, "failed refresh")
}

// toolLines returns the tool rows of find's human output.
func toolLines(out string) []string {
	_, after, ok := strings.Cut(out, "Tools")
	if !ok {
		return nil
	}
	var lines []string
	for _, l := range strings.Split(after, "\n")[1:] {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

func TestDescribe(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx") + "approve: [\"fx__echo\"]\n")

	want(t, sluice(t, "", "describe", "fx__add"), exitUsage, "no recorded catalog for server fx", "fix: run 'sluice find --server fx --refresh'")
	noChildren(t, "describe without a catalog")
	want(t, sluice(t, "", "find", "--server", "fx", "--refresh"), exitOK)

	r := sluice(t, "", "describe", "fx__add")
	want(t, r, exitOK, "fx__add", "server:       fx (trust: trusted)", "action class: read", "admission:    run", "provenance:   cached",
		"Input schema:", `"a": {`, "Annotations:", `"readOnlyHint": true`)
	noChildren(t, "describe")

	r = sluice(t, "", "describe", "fx__fail", "--json")
	if r.code != exitOK {
		t.Fatal(r)
	}
	var d struct {
		Capability, Server, Tool, Trust, ActionClass, Admission, Provenance string
		InputSchema                                                         json.RawMessage
	}
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("describe --json: %v\n%s", err, r)
	}
	if d.Capability != "fx__fail" || d.Admission != "approval-required" || d.ActionClass != "unknown" || d.Provenance != "cached" || len(d.InputSchema) == 0 {
		t.Fatalf("describe --json: %+v", d)
	}
	want(t, sluice(t, "", "describe", "fx__fail"), exitOK, "approval-required (pass --yes")

	want(t, sluice(t, "", "describe", "fx__nope"), exitUsage, `server fx has no tool "nope"`)
	want(t, sluice(t, "", "describe", "nope__x"), exitUsage, `no server "nope"`)
	want(t, sluice(t, "", "describe", "fx_echo"), exitUsage, "not a capability name", "SERVER__TOOL")
}

// The canary: a project declaration whose command would create a marker
// file is never launched while untrusted or stale, through every command.
func TestCanaryNeverLaunchesWhileUntrustedOrStale(t *testing.T) {
	w := newWorld(t)
	marker := filepath.Join(w.root, "launched")
	canary := fmt.Sprintf("servers:\n  canary:\n    command: touch\n    args: [%q]\n", marker)
	w.writeProject(canary)
	launched := func(stage, after string) {
		t.Helper()
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s: the canary was launched by %s", stage, after)
		}
		noChildren(t, after)
	}
	check := func(stage string) {
		t.Helper()
		want(t, sluice(t, "", "servers"), exitOK, stage, "sluice trust canary")
		launched(stage, "servers")
		want(t, sluice(t, "", "check"), exitOK)
		launched(stage, "check")
		want(t, sluice(t, "", "find", "x"), exitOK, stage, "fix: ", "run 'sluice trust canary")
		launched(stage, "find")
		want(t, sluice(t, "", "find", "--server", "canary", "--refresh"), exitRefused, stage, "sluice trust canary")
		launched(stage, "find --refresh")
		want(t, sluice(t, "", "find", "--server", "canary", "--refresh", "--json"), exitRefused, `"trust": "`+stage+`"`)
		launched(stage, "find --refresh --json")
		want(t, sluice(t, "", "describe", "canary__x"), exitRefused, "server canary is "+stage, "fix: ")
		launched(stage, "describe")
		want(t, sluice(t, "", "call", "canary__x", "--yes"), exitRefused, "server canary is "+stage, "sluice trust canary")
		launched(stage, "call --yes")
		fakeTerminal(t)
		want(t, sluice(t, "y\n", "call", "canary__x", "a=1"), exitRefused, "server canary is "+stage)
		launched(stage, "call with an approving terminal")
	}
	check("untrusted")
	want(t, sluice(t, "", "trust", "canary", "--action-class", "read", "--yes"), exitOK, "Recorded")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("trust launched the canary")
	}
	// Prove the detector: trusted, a call does launch it (touch is no MCP
	// server, so the call fails as an upstream error, but the marker exists).
	want(t, sluice(t, "", "call", "canary__x", "--yes"), exitFailure, "server canary")
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("a trusted canary must launch and leave its marker: %v", err)
	}
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	// Any change to the declaration makes the record stale.
	w.writeProject(canary + "    timeoutMs: 1000\n")
	check("stale")
}

// On a terminal a refresh draws a progress line on stderr and erases it.
func TestFindRefreshShowsProgressOnATerminal(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx", "-delay", "150ms"))
	fakeTerminal(t)
	t.Setenv("TERM", "xterm") // a terminal that can redraw a line
	r := sluice(t, "", "find", "--server", "fx", "--refresh")
	want(t, r, exitOK, "fx__echo", "| refreshing fx ", "\r\033[K")
	if strings.Contains(r.stdout, "refreshing") {
		t.Fatalf("progress belongs on stderr:\n%s", r)
	}
	// Not a terminal: no progress drawing at all.
	isTerminal = func(any) bool { return false }
	r = sluice(t, "", "find", "--server", "fx", "--refresh")
	want(t, r, exitOK, "fx__echo")
	if strings.Contains(r.stderr, "refreshing") {
		t.Fatalf("no progress without a terminal:\n%s", r)
	}
}
