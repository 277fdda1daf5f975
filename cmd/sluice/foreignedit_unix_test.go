//go:build !windows

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestForeignProjectIsNotEdited: a project root found by walking up from
// the working directory whose .sluice belongs to another user is skipped
// by the loader; the commands that edit the project file refuse it the
// same way (naming the owner and the way to take it on purpose) and write
// nothing, while --project-dir names it on purpose.
func TestForeignProjectIsNotEdited(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root can hand a directory to another user") // gateway/config's tests cover the open-file check as any user
	}
	w := newWorld(t)
	clientHome(t, w)
	dir := filepath.Join(w.project, ".sluice")
	file := filepath.Join(dir, "mcp.yaml")
	body := "servers:\n  theirs:\n    command: cat\n"
	w.writeProject(body)
	writeFile(t, filepath.Join(w.project, ".mcp.json"), `{"mcpServers": {"repo": {"command": "repo-mcp"}}}`)
	for _, p := range []string{file, dir} {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	sub := filepath.Join(w.project, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	for _, args := range [][]string{
		{"add", "mine", "--project", "--", "cat"},
		{"update", "theirs", "--project", "--", "cat", "-u"},
		{"remove", "theirs", "--project"},
		{"disable", "theirs", "--project"},
		{"enable", "theirs", "--project"},
		{"tools", "theirs", "--project", "--deny", "x"},
		{"import", "--project", "--write"},
		{"import", "--project"},
	} {
		r := sluiceProc(t, "", args...)
		want(t, r, exitUsage, dir+" belongs to another user", "uid 65534", "nothing was written")
		if args[0] == "import" {
			want(t, r, exitUsage, "sluice add ID --project --project-dir DIR")
		} else {
			want(t, r, exitUsage, "--project-dir DIR")
		}
		if got := readFile(t, file); got != body {
			t.Fatalf("sluice %s wrote into another user's project file:\n%s", strings.Join(args, " "), got)
		}
	}
	want(t, sluiceProc(t, "", "add", "mine", "--project", "--project-dir", w.project, "--", "cat"), exitOK)
	if got := readFile(t, file); !strings.Contains(got, "mine:") {
		t.Fatalf("--project-dir did not edit the chosen project's file:\n%s", got)
	}
}
