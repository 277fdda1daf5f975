package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sluice/gateway"
)

// filtersDir is resolved at start-up: worlds change the working directory.
var filtersDir, _ = filepath.Abs(filepath.Join("..", "..", "testdata", "filters"))

func testFilter(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(filtersDir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFilterTest(t *testing.T) {
	w := newWorld(t)
	upper, trap := testFilter(t, "upper.wasm"), testFilter(t, "trap.wasm")

	// Text from stdin is wrapped as a result; upper upper-cases text items.
	r := sluice(t, "hello filter", "filter", "test", upper)
	want(t, r, exitOK, "(mode text, stage result)", "HELLO FILTER", "time:", "load ")

	// A result JSON from a file passes as is (structuredContent untouched).
	in := filepath.Join(w.root, "in.json")
	if err := os.WriteFile(in, []byte(`{"content":[{"type":"text","text":"abc"}],"structuredContent":{"k":"v"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r = sluice(t, "", "filter", "test", upper, "--input", in, "--json")
	want(t, r, exitOK)
	var res gateway.FilterTestResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != "replaced" || res.Wrapped || !strings.Contains(string(res.Output), `"ABC"`) || !strings.Contains(string(res.Output), `"k": "v"`) {
		t.Fatalf("json result %+v", res)
	}

	// A trapping filter: status failed, exit 1.
	want(t, sluice(t, "x", "filter", "test", trap), exitFailure, "failed", "trapped")
	// A module that does not load.
	want(t, sluice(t, "x", "filter", "test", testFilter(t, "forbidden.wasm")), exitFailure, "failed to load")

	// Mistakes.
	want(t, sluice(t, "", "filter", "test"), exitUsage, "exactly one MODULE")
	want(t, sluice(t, "", "filter", "test", "builtin:nosuch"), exitUsage, "unknown built-in filter")
	want(t, sluice(t, "", "filter", "test", upper, "--stage", "later"), exitUsage, "--stage must be result or context")
	want(t, sluice(t, "", "filter", "test", upper, "--mode", "xml"), exitUsage, "--mode must be text or result-json")
	want(t, sluice(t, "", "filter", "test", upper, "--config", "{nope"), exitUsage, "--config: not valid JSON")
	want(t, sluice(t, "", "filter", "test", upper, "--input", filepath.Join(w.root, "missing")), exitUsage, "--input:")
	want(t, sluice(t, "", "filter", "test", filepath.Join(w.root, "missing.wasm")), exitUsage, "cannot read filter module")
	want(t, sluice(t, "", "filter"), exitUsage, "want a subcommand")
	fakeTerminal(t)
	want(t, sluice(t, "", "filter", "test", upper), exitUsage, "no input: pass --input FILE")
	want(t, sluice(t, "", "filter", "frobnicate"), exitUsage, "unknown subcommand")
	want(t, sluice(t, "", "filter", "--help"), exitOK, "Usage: sluice filter test MODULE")
}

func TestFilterBench(t *testing.T) {
	newWorld(t)
	upper := testFilter(t, "upper.wasm")
	// --timeout: the deadline is not what this tests (a loaded machine
	// must not fail the benchmark's own plumbing).
	r := sluice(t, "", "filter", "bench", upper, "--n", "20", "--timeout", "30s")
	want(t, r, exitOK, "(mode text), 20 calls on a 65.2 KiB", "pass-through baseline", "ratio (median / baseline median): ")

	r = sluice(t, "some text", "filter", "bench", upper, "--n", "10", "--input", "-", "--json", "--timeout", "30s")
	want(t, r, exitOK)
	var b gateway.FilterBenchResult
	if err := json.Unmarshal([]byte(r.stdout), &b); err != nil {
		t.Fatal(err)
	}
	if b.N != 10 || b.Median <= 0 || b.BaselineMedian <= 0 || b.Ratio <= 0 || b.Status != "replaced" {
		t.Fatalf("bench %+v", b)
	}
	want(t, sluice(t, "", "filter", "bench", testFilter(t, "trap.wasm"), "--n", "3"), exitFailure, "failed during the benchmark")
	want(t, sluice(t, "", "filter", "bench", upper, "--n", "0"), exitUsage, "for --n: out of range; want a whole number from 1 to 1000000")
}

func TestFilterListShowsStatesAndRefusesBadConfig(t *testing.T) {
	w := newWorld(t)
	trap := testFilter(t, "trap.wasm")
	w.writeUser("filters:\n  - module: " + trap + "\n    capabilities: [\"fx__*\"]\n  - module: builtin:shape\n    stage: context\n    capabilities: []\n  - module: " + testFilter(t, "forbidden.wasm") + "\n    onError: fail-open\n")
	r := sluice(t, "", "filter", "list")
	want(t, r, exitFailure, "0  "+trap, `["fx__*"]`, "active", "inactive", "failed-to-load", "fail-open")
	if strings.Contains(r.stdout, "default") {
		t.Fatalf("a configured shape must replace the default:\n%s", r)
	}
	r = sluice(t, "", "filter", "list", "--json")
	var st []gateway.FilterStatus
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || len(st) != 3 || st[1].State != gateway.FilterInactive {
		t.Fatalf("json list %v: %s", err, r)
	}

	w.writeUser("filters:\n  - module: builtin:redact\n    onErr: fail-open\n")
	want(t, sluice(t, "", "filter", "list"), exitFailure, "filters setting", "is invalid", "filters[0].onErr")
}
