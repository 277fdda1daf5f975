package main

import (
	"os"
	"path/filepath"
	"testing"
)

// A project server whose command is a relative path is declared but not
// loaded: trust (and call) must say so, where, and how to fix it, not
// that no such server is declared.
func TestTrustOfAServerWithARelativeCommandSaysWhatWhereAndHow(t *testing.T) {
	w := newWorld(t)
	w.writeProject("servers:\n  pj:\n    command: ./run.sh\n    args: [x]\n")
	file := filepath.Join(w.project, ".sluice", "mcp.yaml")
	for _, args := range [][]string{{"trust", "pj", "--yes"}, {"call", "pj__tool"}} {
		r := sluice(t, "", args...)
		want(t, r, exitUsage, `server "pj" is declared but not loaded`, file+":3:14", "servers.pj.command", `relative command path "./run.sh"`,
			"fix: use an absolute path or a bare program name", "sluice check")
		if r.stdout != "" {
			t.Fatalf("%v printed on stdout:\n%s", args, r)
		}
	}
	if _, err := os.Stat(filepath.Join(w.home, "trust.json")); err == nil {
		t.Fatal("a refused trust wrote the trust file")
	}
}

func TestTrustOfAPathOrAMissingProjectIsABadArgument(t *testing.T) {
	w := newWorld(t)
	w.writeProject("servers:\n" + fixture(t, "pj"))
	for _, p := range []string{".", "./.sluice/mcp.yaml", "../project"} {
		want(t, sluice(t, "", "trust", p, "--yes"), exitUsage, "is a path, not a server id", "--project DIR")
		want(t, sluice(t, "", "untrust", p), exitUsage, "is a path, not a server id")
	}
	r := sluice(t, "", "trust", "pj", "--yes", "--project", "nosuch")
	want(t, r, exitUsage, "--project nosuch: no such file or directory", "the directory that holds .sluice/mcp.yaml")
	r = sluice(t, "", "servers", "--project", ".sluice/mcp.yaml")
	want(t, r, exitUsage, "--project .sluice/mcp.yaml is a file, not a directory")
	// A relative --project that exists is the project.
	want(t, sluice(t, "", "trust", "pj", "--yes", "--project", "."), exitOK, "Recorded: pj is trusted")
	if _, err := os.Stat(filepath.Join(w.home, "trust.json")); err != nil {
		t.Fatal(err)
	}
}

func TestRefreshOfAServerThatDoesNotLoadNamesItsError(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n  gh:\n    command: ./x\n")
	r := sluice(t, "", "refresh", "gh")
	want(t, r, exitUsage, `server "gh" is declared but not loaded`, filepath.Join(w.home, "mcp.yaml")+":3:14", `relative command path "./x"`, "fix: use an absolute path", "sluice check")
}
