package main

import (
	"os"
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

// TestImportPlanHidesWhatServersHides: the plan 'sluice import' prints
// hides what 'sluice servers' hides in what it copies (a key in a url's
// path, a database url's password), the file gets them as the client had
// them; a server whose url in args carries a key in its query is
// skipped, as one whose url field does.
func TestImportPlanHidesWhatServersHides(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers: {}\n")
	const pathKey, dbpw, qkey = "Zq8xW2vR7tY4uP9sKk3m", "pw12345678", "hunter2pwsecret"
	file := filepath.Join(w.project, ".mcp.json")
	writeFile(t, file, `{"mcpServers":{
 "hosted":{"url":"https://mcp.example.com/v1/`+pathKey+`/mcp"},
 "db":{"command":"npx","args":["-y","@modelcontextprotocol/server-postgres","postgresql://me:`+dbpw+`@db.internal/app"],"env":{"DB_URL":"postgres://me:`+dbpw+`@db/x","MODE":"debug"}},
 "bridge":{"command":"npx","args":["-y","mcp-remote","https://mcp.example.com/sse?api_key=`+qkey+`"]}
}}`)
	r := sluiceProc(t, "", "import", file)
	want(t, r, exitOK, "https://mcp.example.com/v1/(hidden)/mcp", "postgres://me:(hidden)@db/x", "postgresql://me:(hidden)@db.internal/app",
		`skipped  bridge (`, `args[2] (the url's query parameter "api_key") looks like a secret`, `"MODE": "debug"`)
	for _, s := range []string{pathKey, dbpw, qkey} {
		if strings.Contains(r.stdout+r.stderr, s) {
			t.Errorf("sluice import shows %s:\n%s", s, r)
		}
	}
	rj := sluiceProc(t, "", "import", file, "--json")
	want(t, rj, exitOK, `"text":`, `https://mcp.example.com/v1/(hidden)/mcp`, `postgres://me:(hidden)@db/x`)
	for _, s := range []string{pathKey, dbpw, qkey} {
		if strings.Contains(rj.stdout+rj.stderr, s) {
			t.Errorf("sluice import --json shows %s:\n%s", s, rj)
		}
	}
	r = sluiceProc(t, "", "import", file, "--write", "--yes")
	want(t, r, exitOK, "Written")
	b, err := os.ReadFile(filepath.Join(w.home, "mcp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), pathKey) || !strings.Contains(string(b), dbpw) || strings.Contains(string(b), qkey) {
		t.Fatalf("the file does not hold what was imported:\n%s", b)
	}
	r = sluiceProc(t, "", "servers", "--json")
	for _, s := range []string{pathKey, dbpw} {
		if strings.Contains(r.stdout+r.stderr, s) {
			t.Errorf("sluice servers shows %s:\n%s", s, r)
		}
	}
}
