package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestImportSaysWhyEachServerWasSkipped: 'sluice import FILE', with
// --write too, names each server it skips, why and what to do, also when
// nothing is left to import; it never prints the secret that made it skip.
func TestImportSaysWhyEachServerWasSkipped(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n  taken:\n    command: /bin/cat\n")
	const gh = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	file := filepath.Join(w.project, ".mcp.json")
	for _, c := range []struct {
		entry string
		why   []string
	}{
		{`"gh":{"command":"npx","args":["-y","pkg","--token","` + gh + `"]}`,
			[]string{"skipped  gh (", "args[3] looks like a secret", "sluice add gh --env NAME=VALUE -- COMMAND ARGS"}},
		{`"taken":{"command":"npx","args":["-y","other-pkg"]}`,
			[]string{"skipped  taken (", "server taken is already declared in", "run 'sluice remove taken' and import again"}},
		{`"empty":{"env":{"A":"b"}}`,
			[]string{"skipped  empty (", "neither a command nor a url", "give the entry one in its file"}},
	} {
		writeFile(t, file, `{"mcpServers":{`+c.entry+`}}`)
		for _, args := range [][]string{{"import", file}, {"import", file, "--write"}} {
			r := sluiceProc(t, "", args...)
			want(t, r, exitOK, append(c.why, "Nothing to import")...)
			if strings.Contains(r.stdout+r.stderr, gh) {
				t.Errorf("sluice %v shows the token:\n%s", args, r)
			}
		}
	}
}
