package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sluice/gateway/mcp/mcptest"
)

const fxSecret = "ghp_0123456789abcdefghijABCDEFGHIJ012345"

// clientHome gives the test its own HOME, where the clients' files live.
func clientHome(t *testing.T, w *world) string {
	t.Helper()
	h := filepath.Join(w.root, "userhome")
	if err := os.MkdirAll(h, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", h)
	return h
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// cursorFile is a Cursor config declaring the fixture (with a literal
// token in env) and a remote server, with comments and trailing commas.
func cursorFile(t *testing.T) string {
	exe, argv, err := mcptest.Command()
	if err != nil {
		t.Fatal(err)
	}
	cmd, _ := json.Marshal(exe)
	args, _ := json.Marshal(argv)
	return `{
  // servers I use every day
  "mcpServers": {
    "FX": {
      "command": ` + string(cmd) + `,
      "args": ` + string(args) + `,
      "env": {"FX_TOKEN": "` + fxSecret + `", "FX_MODE": "plain"},
    },
    "docs": {"url": "https://docs.example.com/mcp", "headers": {"X-Team": "blue"}, "alwaysAllow": ["search"]},
  },
  "editor.fontSize": 13,
}
`
}

// TestImportInstallRoundTrip: a Cursor config is imported (secrets as
// references, nothing secret printed, unknown fields reported), the
// imported server runs through sluice, sluice is installed into Cursor
// replacing the imported entries, and uninstall restores the file byte
// for byte; both are idempotent, and a changed file is refused.
func TestImportInstallRoundTrip(t *testing.T) {
	w := newWorld(t)
	home := clientHome(t, w)
	cursor := filepath.Join(home, ".cursor", "mcp.json")
	orig := cursorFile(t)
	writeFile(t, cursor, orig)
	userFile := filepath.Join(w.home, "mcp.yaml")

	r := sluiceProc(t, "", "import")
	want(t, r, 0, "2 servers from 1 file", "fx ", "set FX_TOKEN in your environment", "alwaysAllow is not imported", "Nothing written", "${env:FX_TOKEN}")
	if strings.Contains(r.stdout+r.stderr, fxSecret) {
		t.Fatalf("import printed the secret:\n%s", r)
	}
	if _, err := os.Stat(userFile); err == nil {
		t.Fatal("import without --write wrote the user file")
	}

	want(t, sluiceProc(t, "", "import", "--from", "cursor", "--write"), 0, "Written: "+userFile)
	decl := readFile(t, userFile)
	if strings.Contains(decl, fxSecret) || !strings.Contains(decl, `"FX_TOKEN": "${env:FX_TOKEN}"`) || !strings.Contains(decl, `"FX_MODE": "plain"`) {
		t.Fatalf("declarations:\n%s", decl)
	}
	want(t, sluiceProc(t, "", "check"), 0, "2 servers declared")
	t.Setenv("FX_TOKEN", "from-the-environment")
	want(t, sluiceProc(t, "", "call", "fx__echo", "text=imported"), 0, "imported")
	// Importing again adds nothing: the ids are declared.
	want(t, sluiceProc(t, "", "import"), 0, "skipped", "already declared", "Nothing to import")

	// Install into Cursor, replacing the entries sluice now serves.
	r = sluiceProc(t, "", "install", "cursor", "--replace")
	want(t, r, 0, "removes FX", "removes docs", "Installed")
	if strings.Contains(r.stdout+r.stderr, fxSecret) {
		t.Fatalf("install printed the secret:\n%s", r)
	}
	installed := readFile(t, cursor)
	if strings.Contains(installed, `"FX"`) || !strings.Contains(installed, `"sluice"`) || !strings.Contains(installed, `"serve"`) ||
		!strings.HasPrefix(installed, "{\n  // servers I use every day\n  \"mcpServers\": {\n") || !strings.Contains(installed, `"editor.fontSize": 13,`) {
		t.Fatalf("installed file:\n%s", installed)
	}
	want(t, sluiceProc(t, "", "install", "cursor", "--replace"), 0, "Nothing to do", "already installed")
	if readFile(t, cursor) != installed {
		t.Fatal("a second install changed the file")
	}
	want(t, sluiceProc(t, "", "uninstall", "cursor"), 0, "Restored")
	if got := readFile(t, cursor); got != orig {
		t.Fatalf("uninstall did not restore the file byte for byte:\n%s", got)
	}
	want(t, sluiceProc(t, "", "uninstall", "cursor"), 0, "Nothing to do")

	// A file changed since install is not touched.
	want(t, sluiceProc(t, "", "install", "cursor"), 0, "Installed")
	edited := strings.Replace(readFile(t, cursor), `"editor.fontSize": 13`, `"editor.fontSize": 14`, 1)
	writeFile(t, cursor, edited)
	want(t, sluiceProc(t, "", "uninstall", "cursor"), exitRefused, "changed since 'sluice install cursor' wrote it", "backups", "--forget")
	want(t, sluiceProc(t, "", "install", "cursor"), exitRefused, "changed since")
	if readFile(t, cursor) != edited {
		t.Fatal("a refused uninstall changed the file")
	}
	want(t, sluiceProc(t, "", "uninstall", "cursor", "--forget"), 0, "Forgotten")
	if readFile(t, cursor) != edited {
		t.Fatal("--forget changed the file")
	}

	want(t, sluiceProc(t, "", "install", "cursr"), exitUsage, "did you mean cursor?")
}

// TestImportEveryClientFormat: each client's file in its documented place
// and format is found and read.
func TestImportEveryClientFormat(t *testing.T) {
	w := newWorld(t)
	home := clientHome(t, w)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	writeFile(t, filepath.Join(home, ".claude.json"), `{"mcpServers": {"cc": {"type": "stdio", "command": "cc-mcp"}},
 "projects": {`+jsonText(w.project)+`: {"mcpServers": {"cclocal": {"command": "local-mcp"}}}}}`)
	writeFile(t, filepath.Join(home, ".config", "Claude", "claude_desktop_config.json"), `{"mcpServers": {"desk": {"command": "desk-mcp"}}}`)
	writeFile(t, filepath.Join(home, ".config", "Code", "User", "mcp.json"), `{"servers": {"vs": {"type": "http", "url": "https://vs.example/mcp"}}}`)
	writeFile(t, filepath.Join(home, ".codeium", "windsurf", "mcp_config.json"), `{"mcpServers": {"wind": {"serverUrl": "https://wind.example/mcp"}}}`)
	writeFile(t, filepath.Join(home, ".codex", "config.toml"), "model = \"o3\"\n[mcp_servers.codexsrv]\ncommand = \"codex-mcp\"\nargs = [\"-v\"]\n")
	writeFile(t, filepath.Join(home, ".gemini", "settings.json"), `{"mcpServers": {"gem": {"httpUrl": "https://gem.example/mcp"}}}`)
	r := sluiceProc(t, "", "import")
	want(t, r, 0, "7 servers from 6 files")
	for _, id := range []string{"cc", "cclocal", "desk", "vs", "wind", "codexsrv", "gem"} {
		if !strings.Contains(r.stdout, "  "+id+":") {
			t.Errorf("%s not imported:\n%s", id, r.stdout)
		}
	}
	for _, f := range []string{`url: "https://gem.example/mcp"`, "transport: streamable-http", `args: ["-v"]`} {
		if !strings.Contains(r.stdout, f) {
			t.Errorf("want %q in:\n%s", f, r.stdout)
		}
	}
}

func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestImportProject: a repository's .mcp.json becomes .sluice/mcp.yaml,
// whose servers are untrusted until 'sluice trust'.
func TestImportProject(t *testing.T) {
	w := newWorld(t)
	clientHome(t, w)
	if err := os.Remove(filepath.Join(w.project, ".sluice")); err != nil {
		t.Fatal(err)
	}
	exe, argv, err := mcptest.Command()
	if err != nil {
		t.Fatal(err)
	}
	cmd, _ := json.Marshal(exe)
	args, _ := json.Marshal(argv)
	writeFile(t, filepath.Join(w.project, ".mcp.json"), `{"mcpServers": {"repo": {"command": `+string(cmd)+`, "args": `+string(args)+`}}}`)
	want(t, sluiceProc(t, "", "import", "--project", "--write"), 0, "Written: ", "sluice trust ID")
	if !strings.Contains(readFile(t, filepath.Join(w.project, ".sluice", "mcp.yaml")), "repo:") {
		t.Fatal("project file not written")
	}
	want(t, sluiceProc(t, "", "call", "repo__echo", "text=x"), exitRefused, "untrusted")
	want(t, sluiceProc(t, "", "trust", "repo", "--yes"), 0, "Recorded")
	want(t, sluiceProc(t, "", "call", "repo__echo", "text=trusted"), 0, "trusted")
}

// TestImportIntoExistingFile: the declarations are added to the servers
// mapping in its own indentation; every other byte stays, and a backup of
// the file as it was is kept.
func TestImportIntoExistingFile(t *testing.T) {
	w := newWorld(t)
	home := clientHome(t, w)
	writeFile(t, filepath.Join(home, ".cursor", "mcp.json"), `{"mcpServers": {"new": {"command": "new-mcp"}}}`)
	before := "# my sluice config\nservers:\n    old:\n        command: old-mcp   # keep this\n\n# approvals\napprove: [\"old__*\"]\n"
	w.writeUser(before)
	r := sluiceProc(t, "", "import", "--write")
	want(t, r, 0, "Written: ", "the file as it was: ")
	got := readFile(t, filepath.Join(w.home, "mcp.yaml"))
	wantText := "# my sluice config\nservers:\n    old:\n        command: old-mcp   # keep this\n" +
		"    # imported from Cursor, " + filepath.Join(home, ".cursor", "mcp.json") + ": \"new\"\n    new:\n        command: \"new-mcp\"\n" +
		"\n# approvals\napprove: [\"old__*\"]\n"
	if got != wantText {
		t.Fatalf("user file:\n%s\nwant:\n%s", got, wantText)
	}
	i := strings.Index(r.stdout, "the file as it was: ")
	backup := strings.TrimSuffix(strings.TrimSpace(r.stdout[i+len("the file as it was: "):]), ")")
	if readFile(t, backup) != before {
		t.Fatalf("backup %s does not hold the file as it was", backup)
	}
	want(t, sluiceProc(t, "", "check"), 0, "2 servers declared")
}

// TestDidYouMean: a mistyped command, server id or capability is met
// with the likely intended one.
func TestDidYouMean(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	want(t, sluice(t, "", "sevre"), exitUsage, "did you mean serve?")
	want(t, sluice(t, "", "find", "--server", "fy"), exitUsage, "did you mean fx?")
	want(t, sluice(t, "", "call", "fx__ecoh", "text=x"), exitUsage, "did you mean fx__echo?")
}

// TestImportFileThatIsNotThere: a FILE that does not exist, or is a
// directory, is said to be so (with how to go on), with or without --from
// and --json, before its client is guessed from its name.
func TestImportFileThatIsNotThere(t *testing.T) {
	w := newWorld(t)
	missing := filepath.Join(w.root, "nope", "mcp.json")
	for _, args := range [][]string{{"import", missing}, {"import", "--json", missing}, {"import", "--from", "cursor", missing}} {
		r := sluiceProc(t, "", args...)
		want(t, r, exitUsage, "sluice import: "+missing+": no such file; give the path of a client's MCP config", "leave FILE out")
		if r.stdout != "" || strings.Contains(r.stderr, "cannot tell which client") {
			t.Errorf("sluice %v:\n%s", args, r)
		}
	}
	r := sluiceProc(t, "", "import", w.root)
	want(t, r, exitUsage, "sluice import: "+w.root+" is a directory; give the path of a client's MCP config file in it")
}

// TestUnknownClientIsSaidOnce: install, uninstall and import --from name an
// unknown client once, with the closest name and the list.
func TestUnknownClientIsSaidOnce(t *testing.T) {
	newWorld(t)
	for _, args := range [][]string{{"install", "cursr"}, {"uninstall", "cursr"}, {"import", "--from", "cursr"}} {
		r := sluice(t, "", args...)
		want(t, r, exitUsage, "sluice "+args[0]+`: unknown client "cursr" (did you mean cursor?); the clients are claude-code,`)
		if strings.Count(r.stderr, "unknown client") != 1 {
			t.Errorf("sluice %v:\n%s", args, r)
		}
	}
}
