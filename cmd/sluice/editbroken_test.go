package main

import (
	"os"
	"path/filepath"
	"testing"
)

// update and tools on a server whose declaration has an error keep the
// file as it is and name the error, instead of an internal error.
func TestEditOfAServerThatDoesNotLoadNamesItsError(t *testing.T) {
	w := newWorld(t)
	body := "servers:\n  gh:\n    command: ./x\n"
	w.writeUser(body)
	file := filepath.Join(w.home, "mcp.yaml")
	for _, args := range [][]string{{"update", "gh", "--cwd", w.root}, {"tools", "gh", "--allow", "x*"}} {
		r := sluice(t, "", args...)
		want(t, r, exitUsage, "server gh would still not load", file+":3:14", `relative command path "./x"`, "sluice update gh -- COMMAND")
		if got, _ := os.ReadFile(file); string(got) != body {
			t.Fatalf("%v changed the file:\n%s", args, got)
		}
	}
	// Fixing the command is the way out.
	want(t, sluice(t, "", "update", "gh", "--", "/bin/cat"), exitOK, "command: /bin/cat")
	want(t, sluice(t, "", "check"), exitOK, "ok: 0 errors")
}
