package main

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

// subsetConfig declares fx with two tools hidden, gen disabled, and a
// review profile exposing fx's echo and add only.
func subsetConfig(t *testing.T) string {
	return "servers:\n" + fixture(t, "fx") +
		"    tools:\n      deny: [crash, \"s*\"]\n" +
		fixture(t, "gen", "-tools", "2") +
		"    enabled: false\n" +
		fixture(t, "other") +
		"profiles:\n  review:\n    servers: [fx]\n    capabilities: [\"fx__echo\", \"fx__ad?\"]\n"
}

func TestToolSubsetsThroughTheBinary(t *testing.T) {
	w := newWorld(t)
	w.writeUser(subsetConfig(t))

	r := sluiceProc(t, "", "find", "--server", "fx", "--refresh", "--json")
	if r.code != exitOK {
		t.Fatal(r)
	}
	var found struct {
		Tools []struct{ Capability string } `json:"tools"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &found); err != nil {
		t.Fatal(err, r)
	}
	caps := map[string]bool{}
	for _, c := range found.Tools {
		caps[c.Capability] = true
	}
	if !caps["fx__echo"] || !caps["fx__add"] || caps["fx__crash"] || caps["fx__slow"] || caps["fx__structured"] {
		t.Fatalf("find lists hidden tools or lacks visible ones: %v", caps)
	}

	// Hidden: refused as hidden by configuration, never "unknown", and
	// nothing launches for it.
	for _, args := range [][]string{{"call", "fx__crash"}, {"describe", "fx__slow"}} {
		r = sluiceProc(t, "", args...)
		want(t, r, 4, "fx__", "hidden by configuration", "tools.deny matches")
		if strings.Contains(r.stderr, "has no tool") {
			t.Fatalf("a hidden tool reads as unknown: %s", r)
		}
	}
	// The unknown-tool list does not name hidden tools.
	r = sluiceProc(t, "", "call", "fx__nope")
	want(t, r, 2, "has no tool")
	if strings.Contains(r.stderr, "crash") || strings.Contains(r.stderr, "slow") {
		t.Fatalf("unknown-tool error names hidden tools: %s", r)
	}
	r = sluiceProc(t, "", "call", "fx__echo", "text=hi")
	want(t, r, exitOK, "hi")

	// Disabled: kept in the file, not loaded, and said so.
	r = sluiceProc(t, "", "call", "gen__echo", "text=x")
	want(t, r, 4, "server gen is disabled by configuration", "sluice enable gen")
	r = sluiceProc(t, "", "find", "--json")
	if strings.Contains(r.stdout, `"gen"`) {
		t.Fatalf("a disabled server is listed: %s", r)
	}

	// Code mode: a hidden tool is no function, and says why.
	r = sluiceProc(t, "fx.crash()\n", "run", "-")
	want(t, r, 2, "fx.crash (fx__crash) is hidden by configuration")
	r = sluiceProc(t, "result = call(\"fx__slow\", ms=1).error\n", "run", "-")
	want(t, r, 2, "fx.slow (fx__slow) is hidden by configuration")
	r = sluiceProc(t, "c = \"fx__\" + \"slow\"\nresult = call(c, ms=1).error\n", "run", "-")
	want(t, r, 0, "fx.slow (fx__slow) is hidden by configuration")

	// Profiles: only the profile's servers and capabilities.
	r = sluiceProc(t, "", "find", "--profile", "review", "--json")
	if r.code != exitOK {
		t.Fatal(r)
	}
	if strings.Contains(r.stdout, `"other"`) || !strings.Contains(r.stdout, "fx__echo") || strings.Contains(r.stdout, "fx__huge") {
		t.Fatalf("find --profile review: %s", r)
	}
	r = sluiceProc(t, "", "call", "--profile", "review", "fx__huge")
	want(t, r, 4, "fx__huge is hidden by configuration (profile review does not include it)")
	r = sluiceProc(t, "", "describe", "--profile", "review", "other__echo")
	want(t, r, 4, "server other is hidden by configuration: profile review does not include it")
	r = sluiceProc(t, "result = fx.echo(text=\"p\")\n", "run", "--profile", "review", "-")
	want(t, r, 0, "p")
	r = sluiceProc(t, "other.echo(text=\"p\")\n", "run", "--profile", "review", "-")
	want(t, r, 2, "undefined: other")
	r = sluiceProc(t, "", "find", "--profile", "nope")
	want(t, r, 2, `no profile "nope" is declared (profiles: review)`)

	// Served, flat, under the profile: the tool list is the profile's.
	in := rpcLines(initLines,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fx__crash","arguments":{}}}`,
	)
	r = serveSession(t, in, []string{"1", "2", "3"}, "serve", "--mode", "flat", "--profile", "review")
	if r.code != 0 {
		t.Fatal(r)
	}
	f := frames(t, r.stdout)
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	json.Unmarshal(f["2"]["result"], &list)
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	sort.Strings(names)
	if got := strings.Join(names, ","); got != "fx__add,fx__echo,sluice__read_result" {
		t.Fatalf("flat tools under the profile: %s", got)
	}
	if res := string(f["3"]["result"]) + string(f["3"]["error"]); !strings.Contains(res, "hidden by configuration") {
		t.Fatalf("flat call of a hidden tool: %s", res)
	}
}

// TestToolSubsetKeepsTheDigest: hiding tools and disabling narrow what a
// declaration exposes, so its digest (what trust binds) is unchanged.
func TestToolSubsetKeepsTheDigest(t *testing.T) {
	w := newWorld(t)
	plain := "servers:\n" + fixture(t, "fx")
	digest := func() string {
		r := sluiceProc(t, "", "servers", "--json")
		var rep struct {
			Servers []struct{ ID, Digest string } `json:"servers"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Servers) != 1 {
			t.Fatalf("servers --json: %v %s", err, r)
		}
		return rep.Servers[0].Digest
	}
	w.writeUser(plain)
	before := digest()
	w.writeUser(plain + "    tools: {allow: [\"e*\"], deny: [x]}\n")
	if after := digest(); after != before {
		t.Fatalf("the tool subset changed the digest: %s -> %s", before, after)
	}
	w.writeUser(plain + "    tools: {allow: []}\n")
	r := sluiceProc(t, "", "servers")
	want(t, r, 1, "allow is empty")
}
