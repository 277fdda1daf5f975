package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestUnknownServerNamesTheFileThatDeclaresNothing: with a YAML syntax
// error in the user file, a command naming a server it meant to declare
// says which file declares nothing and why, not only that no such server
// is declared (exit 2 as before).
func TestUnknownServerNamesTheFileThatDeclaresNothing(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n  ex:\n    command: /bin/false\n   args: [x]\n")
	note := `no server "ex" is declared; ` + filepath.Join(w.home, "mcp.yaml") + ":2 declares nothing: YAML syntax error"
	for _, args := range [][]string{{"call", "ex__x"}, {"refresh", "ex"}, {"find", "--server", "ex"}, {"describe", "ex__x"}} {
		want(t, sluice(t, "", args...), exitUsage, note)
	}
	// A file that loads adds nothing to the message.
	w.writeUser("servers: {}\n")
	if r := sluice(t, "", "call", "ex__x"); r.code != exitUsage || strings.Contains(r.stderr, "declares nothing") {
		t.Errorf("call with every file loaded: %s", r)
	}
}
