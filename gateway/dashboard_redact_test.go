package gateway

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestDashboardStderrTailIsRedacted: the stderr tail the dashboard shows
// for a failed server goes through the redaction filters, as the same
// lines relayed to the log do: a server that prints a secret while it
// fails does not put it on the Servers page or under /admin/api/servers.
func TestDashboardStderrTailIsRedacted(t *testing.T) {
	w := newWorld(t)
	// The fixture's fatal line stands for a secret: an extra pattern of
	// builtin:redact matches it.
	w.writeUser("servers:\n" + fixture(t, "dies", "-mode", "exit-at-start") +
		"filters:\n  - module: builtin:redact\n    stage: result\n    timeoutMs: 30000\n    config: {patterns: [\"refusing to start\"]}\n")
	// Compiled before the gateway opens: with the race detector on a
	// loaded machine a cold compile of the checked variant (a config with
	// patterns keeps the checks) outlasted the gateway's two-minute load
	// bound, and the tail was withheld as unredactable.
	seedCompileDir(filepath.Join(w.cache, "wazero"), []string{checkedRedact})
	g := w.open()
	_, err := g.Find(ctx(t), FindRequest{Server: "dies", Refresh: true})
	var ge *Error
	if !errors.As(err, &ge) || !strings.Contains(ge.Stderr, "refusing to start") {
		t.Fatalf("the server did not fail with its stderr kept: %v", err)
	}
	servers, _, err := (&dashBackend{g: g}).Servers(compileCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range servers {
		if s.ID != "dies" {
			continue
		}
		found = true
		if s.StderrTail == "" {
			t.Fatal("the dashboard lost the stderr tail altogether")
		}
		raw, _ := json.Marshal(s)
		if strings.Contains(string(raw), "refusing to start") {
			t.Fatalf("the dashboard shows the unredacted stderr tail: %s", raw)
		}
		if !strings.Contains(s.StderrTail, "mcpfixture") {
			t.Errorf("the redacted tail lost its unmatched text: %q", s.StderrTail)
		}
	}
	if !found {
		t.Fatal("server dies is not listed")
	}
	waitNoChildren(t)
}
