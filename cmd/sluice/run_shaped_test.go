package main

import (
	"strings"
	"testing"
)

// TestRunShortenedResultForPeople: a value over the context budget is
// shown to a person as the shortened answer, the note and the handle
// (not as the MCP result JSON); --json keeps the JSON, and the handle
// reads the full value.
func TestRunShortenedResultForPeople(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	script := `result = {"rows": ["row %d: %s" % (i, "x" * 40) for i in range(1000)]}` + "\n"
	r := sluice(t, script, "run", "-")
	want(t, r, exitOK, `{"rows":["row 0: xxxx`, "stored under handle r-", "[resource link] sluice://results/r-", "sluice result HANDLE")
	if strings.Contains(r.stdout, `"type": "text"`) || strings.Contains(r.stdout, `"content": [`) {
		t.Fatalf("a person got the MCP result JSON:\n%.2000s", r.stdout)
	}
	i := strings.Index(r.stdout, "stored under handle ")
	handle := strings.TrimRight(strings.Fields(r.stdout[i+len("stored under handle "):])[0], ";.")
	want(t, sluice(t, "", "result", handle, "--offset", "0", "--length", "100"), exitOK, `row 0: xxxx`)

	r = sluice(t, script, "run", "-", "--json")
	want(t, r, exitOK, `"resultFiltered": true`, `"type": "resource_link"`)
}
