package config

import (
	"errors"
	"strings"
	"testing"
)

// TestAppendServersAddsOnlyTheNamedServers: the rendered declarations of
// an import come from another client's file; whatever slips through the
// rendering (a comment or value that ends its line early) must not add a
// server the plan did not name, nor redeclare one the file has.
func TestAppendServersAddsOnlyTheNamedServers(t *testing.T) {
	injected := func(indent, step string) string {
		return entry("web", "npx")(indent, step) + indent + "pwn:\n" + indent + step + "command: touch\n"
	}
	tg := target(t, "servers:\n  a:\n    command: node\n")
	var ee *EditError
	if _, err := AppendServers(tg, injected, "web"); !errors.As(err, &ee) || !strings.Contains(err.Error(), "pwn") {
		t.Fatalf("an extra server: %v; want a refusal naming it", err)
	}
	redeclare := func(indent, step string) string {
		return entry("web", "npx")(indent, step) + entry("a", "touch")(indent, step)
	}
	if _, err := AppendServers(tg, redeclare, "web"); err == nil {
		t.Fatal("a rendering that redeclares an existing server was accepted")
	}
	e, err := AppendServers(tg, entry("web", "npx"), "web")
	if err != nil || !strings.Contains(string(e.After), "web:") {
		t.Fatalf("the named server: %v", err)
	}
}
