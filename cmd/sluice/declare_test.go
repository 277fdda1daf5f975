package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sluice/gateway/mcp/mcptest"
)

// handWritten is a user file as a person keeps it: comments, blank
// lines, odd quoting, four-space indentation.
const handWritten = `# my sluice servers
# (header kept by every edit)

approve: ["keep__*"]   # reads are fine

servers:
    # a server that stays as written
    keep:
        url: "https://example.com/mcp"   # remote, never launched here
        timeoutMs: 5000

# trailing comment
`

// TestDeclareCommandsThroughTheBinary manages a server only from the
// CLI: every edit keeps the untouched bytes, prints the change, and takes
// effect for the next command; bad input is refused with the file
// untouched.
func TestDeclareCommandsThroughTheBinary(t *testing.T) {
	w := newWorld(t)
	w.writeUser(handWritten)
	file := filepath.Join(w.home, "mcp.yaml")
	read := func() string {
		t.Helper()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	exe, argv, err := mcptest.Command()
	if err != nil {
		t.Fatal(err)
	}

	// add: appended after the last server, in the file's own indentation;
	// everything before it is byte-for-byte what was there.
	add := append([]string{"add", "fx", "--env", "GREETING=hello world", "--action-class", "read", "--"}, append([]string{exe}, argv...)...)
	r := sluiceProc(t, "", add...)
	want(t, r, exitOK, "changed "+file, "+  11      fx:", "command: ", `GREETING: "hello world"`)
	got := read()
	head := strings.TrimSuffix(handWritten, "\n# trailing comment\n")
	if !strings.HasPrefix(got, head) || !strings.HasSuffix(got, "\n# trailing comment\n") {
		t.Fatalf("add changed untouched lines:\n%s", got)
	}
	if !strings.Contains(got, "\n    fx:\n        command: ") || !strings.Contains(got, "\n        actionClass: read\n") {
		t.Fatalf("add did not follow the file's indentation:\n%s", got)
	}
	r = sluiceProc(t, "", "call", "fx__echo", "text=hi")
	want(t, r, exitOK, "hi")

	// tools: a deny glob hides a tool, said so on a call.
	r = sluiceProc(t, "", "tools", "fx", "--deny", "crash", "--deny", "s*")
	want(t, r, exitOK, `tools: {deny: [crash, "s*"]}`)
	r = sluiceProc(t, "", "call", "fx__crash")
	want(t, r, exitRefused, "fx__crash is hidden by configuration", `tools.deny matches "crash"`)
	r = sluiceProc(t, "", "tools", "fx", "--reset")
	want(t, r, exitOK, "-  ")

	// disable / enable.
	r = sluiceProc(t, "", "disable", "fx")
	want(t, r, exitOK, "+", "enabled: false")
	r = sluiceProc(t, "", "call", "fx__echo", "text=hi")
	want(t, r, exitRefused, "server fx is disabled by configuration", "sluice enable fx")
	r = sluiceProc(t, "", "disable", "fx")
	want(t, r, exitOK, "unchanged")
	r = sluiceProc(t, "", "enable", "fx")
	want(t, r, exitOK, "-", "enabled: false")
	r = sluiceProc(t, "", "call", "fx__echo", "text=again")
	want(t, r, exitOK, "again")

	// update merges env and keeps the rest.
	r = sluiceProc(t, "", "update", "fx", "--env", "MODE=fast")
	want(t, r, exitOK, "MODE: fast")
	if got := read(); !strings.Contains(got, `GREETING: "hello world"`) || !strings.Contains(got, "MODE: fast") {
		t.Fatalf("update lost an env entry:\n%s", got)
	}

	// Refusals: clear, specific, exit 2, and the file is untouched.
	before := read()
	for _, tc := range []struct {
		args []string
		frag string
	}{
		{[]string{"add", "fx", "--", exe}, "server fx is already declared"},
		{[]string{"add", "Bad", "--", exe}, `"Bad" is not a server id`},
		{[]string{"add", "sh", "--", "bash", "-c", "echo hi"}, "not allowed"},
		{[]string{"add", "rel", "--", "./server.js"}, "would not load"},
		{[]string{"add", "both", "--url", "https://example.com", "--", exe}, "not both"},
		{[]string{"add", "none"}, "give the server's command after --"},
		{[]string{"update", "fx", "--action-class", "write"}, "actionClass"},
		{[]string{"update", "fx"}, "nothing to change"},
		{[]string{"update", "ghost", "--cwd", "."}, "no server ghost is declared in " + file},
		{[]string{"remove", "ghost"}, "no server ghost is declared"},
		{[]string{"remove", "fy"}, "no server fy is declared in " + file + "; did you mean fx?"},
		{[]string{"disable", "fx", "--project"}, "; " + file + " declares it\n  fix: run the command again without --project"},
		{[]string{"update", "ghost", "--project", "--cwd", "."}, "fix: declare it with 'sluice add ghost --project -- COMMAND [ARGS...]'"},
		{[]string{"tools", "fx", "--allow", "["}, "malformed"},
		{[]string{"tools", "fx"}, "give --allow GLOB, --deny GLOB or --reset"},
		{[]string{"enable", "fx", "--", "x"}, "applies to add and update only"},
	} {
		r := sluiceProc(t, "", tc.args...)
		want(t, r, exitUsage, tc.frag)
		if got := read(); got != before {
			t.Fatalf("refused %v changed the file:\n%s", tc.args, got)
		}
	}

	// remove: the file is back to exactly what the person wrote.
	r = sluiceProc(t, "", "remove", "fx")
	want(t, r, exitOK, "-  11      fx:")
	if got := read(); got != handWritten {
		t.Fatalf("add then remove is not the original file:\n%q\nwant\n%q", got, handWritten)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode after the edits: %v %v", fi.Mode(), err)
	}
	left, _ := filepath.Glob(filepath.Join(w.home, ".mcp.yaml.*"))
	if len(left) > 0 {
		t.Fatalf("temp files left: %v", left)
	}
}

// TestDeclareProjectAndBrokenFiles: --project edits the project's file
// (whose servers then need trust), and a file that does not parse is
// refused untouched.
func TestDeclareProjectAndBrokenFiles(t *testing.T) {
	w := newWorld(t)
	exe, argv, err := mcptest.Command()
	if err != nil {
		t.Fatal(err)
	}
	pfile := filepath.Join(w.project, ".sluice", "mcp.yaml")
	r := sluiceProc(t, "", append([]string{"add", "pfx", "--project", "--"}, append([]string{exe}, argv...)...)...)
	want(t, r, exitOK, "created "+pfile, "sluice trust pfx")
	r = sluiceProc(t, "", "call", "pfx__echo", "text=x")
	want(t, r, exitRefused, "pfx")
	r = sluiceProc(t, "", "add", "bad", "--project", "--action-class", "read", "--", exe)
	want(t, r, exitUsage, "actionClass")
	if _, err := os.Stat(filepath.Join(w.home, "mcp.yaml")); err == nil {
		t.Fatal("--project wrote the user file")
	}

	broken := "servers:\n  a: [\n"
	w.writeUser(broken)
	r = sluiceProc(t, "", "add", "b", "--", exe)
	want(t, r, exitUsage, "cannot be edited safely", "fix it first")
	if b, _ := os.ReadFile(filepath.Join(w.home, "mcp.yaml")); string(b) != broken {
		t.Fatalf("a broken file was changed: %q", b)
	}
}

// TestAddWithoutDashesNamesTheCommandToRun: a server's command line
// written without the -- before it is refused with the command that
// would have worked (quoted as a shell reads it back), and the file is
// left as it was.
func TestAddWithoutDashesNamesTheCommandToRun(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	file := filepath.Join(w.home, "mcp.yaml")
	before, _ := os.ReadFile(file)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"add", "gh", "npx", "-y", "pkg"}, "sluice add: the server's command line goes after --: sluice add gh -- npx -y pkg"},
		{[]string{"add", "--env", "A=b", "gh", "sh", "-c", "echo it's"}, `sluice add --env A=b gh -- sh -c 'echo it'\''s'`},
		{[]string{"add", "gh", "--project", "npx"}, "sluice add gh --project -- npx"},
		{[]string{"update", "fx", "--cwd", "/", "/bin/cat", "x"}, "sluice update fx --cwd / -- /bin/cat x"},
	} {
		want(t, sluiceProc(t, "", c.args...), exitUsage, c.want)
	}
	if after, _ := os.ReadFile(file); string(after) != string(before) {
		t.Fatalf("a refused add changed the file:\n%s", after)
	}
	// Flags of sluice's own after the id are not a command line.
	want(t, sluiceProc(t, "", "add", "gh", "--env", "A=b"), exitUsage, "give the server's command after --")
}

// TestEnableTwiceSaysWhatIsAlreadySo: a second enable or disable changes
// nothing and says which state the server is already in.
func TestEnableTwiceSaysWhatIsAlreadySo(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	want(t, sluice(t, "", "enable", "fx"), exitOK, "unchanged (server fx is already enabled)")
	want(t, sluice(t, "", "disable", "fx"), exitOK, "enabled: false")
	want(t, sluice(t, "", "disable", "fx"), exitOK, "unchanged (server fx is already disabled)")
}
