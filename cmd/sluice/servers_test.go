package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestServersAndCheckReportDiagnosticsWithPositions(t *testing.T) {
	w := newWorld(t)
	// Line 4 declares a shell command line: an error at servers.bad.command.
	w.writeUser("servers:\n" + fixture(t, "fx") + "  bad:\n    command: \"./run me\"\n")
	w.writeProject("servers:\n  proj:\n    command: touch\n    args: [x]\n")
	userFile := filepath.Join(w.home, "mcp.yaml")

	r := sluice(t, "", "servers")
	want(t, r, exitFailure, "fx", "proj", "untrusted", "sluice trust proj", "servers.bad.command", "1 error")
	diag := regexp.MustCompile(regexp.QuoteMeta(userFile) + `:\d+:\d+: error: servers\.bad\.command: .+\(fix: .+\)`)
	if !diag.MatchString(r.stdout) {
		t.Fatalf("no file:line:col: error: field: message (fix) line:\n%s", r)
	}
	// Each server row: id, scope, file:line:col, trust, class, 12 hex digits, run status.
	row := regexp.MustCompile(`(?m)^fx\s+user\s+` + regexp.QuoteMeta(userFile) + `:2:3\s+trusted\s+unknown\s+[0-9a-f]{12}\s+idle\s*$`)
	if !row.MatchString(r.stdout) {
		t.Fatalf("server row not as documented:\n%s", r)
	}
	noChildren(t, "servers")

	r = sluice(t, "", "servers", "--json")
	if r.code != exitFailure {
		t.Fatalf("servers --json with errors: %s", r)
	}
	var rep struct {
		UserFile string `json:"userFile"`
		Servers  []struct {
			ID, Scope, File, Trust, ActionClass, Digest, Run string
			Line, Column                                     int
			EnvNames                                         []string
		} `json:"servers"`
		Diagnostics []struct {
			Severity, File, Field, Message, Fix string
			Line, Column                        int
		} `json:"diagnostics"`
		Errors bool `json:"errors"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("servers --json is not JSON: %v\n%s", err, r)
	}
	if !rep.Errors || len(rep.Servers) != 2 || len(rep.Diagnostics) != 1 || rep.Diagnostics[0].Line == 0 || rep.Diagnostics[0].Field != "servers.bad.command" {
		t.Fatalf("servers --json shape: %+v", rep)
	}

	r = sluice(t, "", "check")
	want(t, r, exitFailure, "servers.bad.command", "FAIL: 1 error, 0 warnings")
	if !diag.MatchString(r.stdout) {
		t.Fatalf("check must print the diagnostic with its position:\n%s", r)
	}

	// Fix the file: both exit 0 and check prints one summary line.
	w.writeUser("servers:\n" + fixture(t, "fx"))
	r = sluice(t, "", "check")
	want(t, r, exitOK, "ok: 0 errors, 0 warnings in 2 declaration files; 2 servers declared (1 user, 1 project)")
	if n := strings.Count(strings.TrimSpace(r.stdout), "\n"); n != 0 {
		t.Fatalf("check without diagnostics must print one line:\n%s", r)
	}
	want(t, sluice(t, "", "servers"), exitOK, "fx", "proj")
}

func TestCheckReportsTrustFileErrors(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	if err := os.WriteFile(filepath.Join(w.home, "trust.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := sluice(t, "", "check")
	want(t, r, exitFailure, "trust.json", "error")
}

func TestUsageErrors(t *testing.T) {
	newWorld(t)
	for _, tc := range []struct {
		args []string
		frag string
	}{
		{[]string{"servers", "extra"}, "unexpected argument"},
		{[]string{"check", "--nope"}, "flag provided but not defined"},
		{[]string{"trust"}, "exactly one server id"},
		{[]string{"untrust", "a", "b"}, "exactly one server id"},
		{[]string{"describe"}, "exactly one capability"},
		{[]string{"find", "--refresh"}, "--server ID"},
		{[]string{"find", "--limit", "-1"}, "--limit"},
		{[]string{"call"}, "missing CAPABILITY"},
		{[]string{"call", "fx__echo", "text"}, "not KEY=VALUE"},
		{[]string{"call", "fx__echo", "--args", "{}", "a=1"}, "not both"},
		{[]string{"call", "fx__echo", "--args", "[1]"}, "one JSON object"},
		{[]string{"call", "fx__echo", "--args", "{"}, "not valid JSON"},
		{[]string{"call", "fx__echo", "--args", "@/nonexistent/args.json"}, "cannot read the arguments file"},
	} {
		r := sluice(t, "", tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.frag) || !strings.Contains(r.stderr, "sluice help") {
			t.Errorf("%v: want exit 2 naming %q and the help command, got %s", tc.args, tc.frag, r)
		}
	}
	// Help is on stdout with exit 0, for every command.
	for name := range commands {
		if name == "version" {
			continue // defined in run.go; takes no flags
		}
		r := sluice(t, "", name, "--help")
		if r.code != exitOK || !strings.HasPrefix(r.stdout, "Usage: sluice "+name) {
			t.Errorf("%s --help: %s", name, r)
		}
	}
	want(t, sluice(t, "", "help", "call"), exitOK, "3    the tool ran and reported an error", "4    refused", "130  interrupted")
}

func TestParseFlagsInterleaved(t *testing.T) {
	for _, tc := range []struct {
		args []string
		pos  []string
		json bool
		srv  string
	}{
		{[]string{"a", "--json", "b"}, []string{"a", "b"}, true, ""},
		{[]string{"--server", "x", "q"}, []string{"q"}, false, "x"},
		{[]string{"q", "--server=x", "--json"}, []string{"q"}, true, "x"},
		{[]string{"q", "--", "--json", "-x"}, []string{"q", "--json", "-x"}, false, ""},
		{[]string{"-", "k=v"}, []string{"-", "k=v"}, false, ""},
		{nil, nil, false, ""},
	} {
		fs := newTestFlags()
		pos, err := parseFlags(fs.set, tc.args)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if strings.Join(pos, "|") != strings.Join(tc.pos, "|") || *fs.json != tc.json || *fs.server != tc.srv {
			t.Errorf("%v: pos %q json %v server %q", tc.args, pos, *fs.json, *fs.server)
		}
	}
}

type testFlags struct {
	set    *flag.FlagSet
	json   *bool
	server *string
}

func newTestFlags() testFlags {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	return testFlags{set: fs, json: fs.Bool("json", false, ""), server: fs.String("server", "", "")}
}

// testdata/cli holds declaration files with one mistake per entry; check
// must report each one at its position and field (the messages belong to
// the config package and are not pinned here).
func TestCheckReportsEveryMistakeAtItsPosition(t *testing.T) {
	root := repoRoot(t)
	w := newWorld(t)
	for src, dst := range map[string]string{
		"user-invalid.yaml":    filepath.Join(w.home, "mcp.yaml"),
		"project-invalid.yaml": filepath.Join(w.project, ".sluice", "mcp.yaml"),
	} {
		b, err := os.ReadFile(filepath.Join(root, "testdata", "cli", src))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	user, proj := filepath.Join(w.home, "mcp.yaml"), filepath.Join(w.project, ".sluice", "mcp.yaml")
	wantDiags := []string{
		user + ":7:14: error: servers.shell.command: ",
		user + `:8:3: error: servers["Bad_ID"]: `,
		user + ":12:5: error: servers.typo.argz: ",
		user + ":15:16: error: servers.slow.timeoutMs: ",
		user + ":18:18: error: servers.class.actionClass: ",
		user + ":20:16: error: idleTimeoutMs: ",
		proj + ":6:5: error: servers.lint.actionClass: ",
		proj + ":9:10: error: servers.escape.cwd: ",
	}
	r := sluice(t, "", "check")
	want(t, r, exitFailure, wantDiags...)
	want(t, r, exitFailure, "FAIL: 8 errors, 0 warnings in 2 declaration files; 1 server declared (1 user, 0 project)")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != len(wantDiags)+1 {
		t.Fatalf("want %d diagnostics and a summary, got:\n%s", len(wantDiags), r)
	}
	for _, l := range lines[:len(lines)-1] {
		if !strings.Contains(l, "(fix: ") {
			t.Errorf("diagnostic without a fix: %s", l)
		}
	}
	r = sluice(t, "", "servers")
	want(t, r, exitFailure, "Diagnostics (8 errors, 0 warnings)", wantDiags[0])
}

// TestServersShowExposedTools: servers (text and --json) lists every
// expose glob of the declarations with the tools it exposes now, and each
// server's exposed tools; a glob naming no listed tool says so, and an
// untrusted project server's own globs expose nothing.
func TestServersShowExposedTools(t *testing.T) {
	w := newWorld(t)
	w.writeUser("expose: [\"fx__ec*\", \"fy__none*\"]\nservers:\n" + fixture(t, "fx") + "    expose: [add, echo]\n" + fixture(t, "fy"))
	w.writeProject("servers:\n" + fixture(t, "pj") + "    expose: [\"*\"]\n")
	want(t, sluiceProc(t, "", "find", "--server", "fx", "--refresh"), exitOK, "fx__echo")
	want(t, sluiceProc(t, "", "find", "--server", "fy", "--refresh"), exitOK, "fy__echo")
	user := filepath.Join(w.home, "mcp.yaml")

	r := sluiceProc(t, "", "servers")
	want(t, r, exitOK,
		"\nExposed tools (listed beside the gateway tools by 'sluice serve' in gateway and auto mode; serve --expose adds more for that process):\n",
		"  fx__ec*  from expose[0] ("+user+":1)\n    fx__echo\n",
		"  fy__none*  from expose[1] ("+user+":1)\n    exposes nothing now: no listed tool matches",
		"  add  from servers.fx.expose[0] ("+user+":3)\n    fx__add\n",
		"  echo  from servers.fx.expose[1] ("+user+":3)\n    fx__echo\n")
	if strings.Contains(r.stdout, "pj__") || strings.Contains(r.stdout, "servers.pj.expose") {
		t.Fatalf("an untrusted server's globs are shown as in force:\n%s", r)
	}

	r = sluiceProc(t, "", "servers", "--json")
	var rep struct {
		Servers []struct {
			ID      string `json:"id"`
			Exposed []struct {
				Capability string   `json:"capability"`
				Globs      []string `json:"globs"`
			} `json:"exposed"`
		} `json:"servers"`
		Expose []struct {
			Glob   string   `json:"glob"`
			Source string   `json:"source"`
			Tools  []string `json:"tools"`
		} `json:"expose"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("servers --json: %v\n%s", err, r)
	}
	got := map[string]string{}
	for _, s := range rep.Servers {
		var caps []string
		for _, e := range s.Exposed {
			caps = append(caps, e.Capability+"<-"+strings.Join(e.Globs, ";"))
		}
		got[s.ID] = strings.Join(caps, ",")
	}
	wantFx := "fx__add<-add (servers.fx.expose[0] (" + user + ":3)),fx__echo<-fx__ec* (expose[0] (" + user + ":1));echo (servers.fx.expose[1] (" + user + ":3))"
	if got["fx"] != wantFx || got["fy"] != "" || got["pj"] != "" {
		t.Fatalf("exposed per server:\n%q\nwant fx %q", got, wantFx)
	}
	var globs []string
	for _, e := range rep.Expose {
		globs = append(globs, e.Glob+"="+strings.Join(e.Tools, "+"))
	}
	if strings.Join(globs, " ") != "fx__ec*=fx__echo fy__none*= add=fx__add echo=fx__echo" {
		t.Fatalf("expose globs: %v", globs)
	}
}
