package main

import (
	"encoding/json"
	"testing"
)

// TestDescribeDocs: --docs prints one server's code-mode docs (module and
// signatures) from its recorded catalog, launching nothing.
func TestDescribeDocs(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))

	want(t, sluice(t, "", "describe", "--docs", "fx"), exitUsage, "no recorded catalog for server fx", "sluice find --server fx --refresh")
	noChildren(t, "describe --docs without a catalog")
	want(t, sluice(t, "", "find", "--server", "fx", "--refresh"), exitOK)

	r := sluice(t, "", "describe", "--docs", "fx")
	want(t, r, exitOK, "def echo(", "def add(")
	noChildren(t, "describe --docs")

	r = sluice(t, "", "describe", "--docs", "fx", "--json")
	var d struct{ Server, Docs string }
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &d) != nil || d.Server != "fx" || d.Docs == "" {
		t.Fatalf("describe --docs --json: %s", r)
	}
	want(t, sluice(t, "", "describe", "--docs", "nope"), exitUsage, `no server "nope"`)
	want(t, sluice(t, "", "describe", "--docs"), exitUsage, "want exactly one server id after --docs")
}
