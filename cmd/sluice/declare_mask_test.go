package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sluice/gateway/mcp/mcptest"
)

// TestAddAndUpdateDiffHideCredentials: the diff 'sluice add' and 'sluice
// update' print hides a literal --env token and a credential arg as the
// listings do, on the removed lines too; the file keeps them as given.
func TestAddAndUpdateDiffHideCredentials(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers: {}\n")
	exe, argv, err := mcptest.Command()
	if err != nil {
		t.Fatal(err)
	}
	const gh, gh2, pw = "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_zyxwvutsrqponmlkjihgfedcba9876543210", "swordfish1"
	add := append([]string{"add", "gh2", "--env", "GITHUB_TOKEN=" + gh, "--env", "GREETING=hello", "--"}, append(append([]string{exe}, argv...), "--token", pw)...)
	r := sluiceProc(t, "", add...)
	want(t, r, exitOK, "GITHUB_TOKEN: (hidden)", "GREETING: hello", "--token, (hidden)")
	r2 := sluiceProc(t, "", "update", "gh2", "--env", "GITHUB_TOKEN="+gh2)
	want(t, r2, exitOK, "-", "+", "GITHUB_TOKEN: (hidden)")
	for _, out := range []string{r.stdout + r.stderr, r2.stdout + r2.stderr} {
		for _, s := range []string{gh, gh2, pw} {
			if strings.Contains(out, s) {
				t.Errorf("the output shows %s:\n%s", s, out)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(w.home, "mcp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), gh2) || !strings.Contains(string(b), pw) {
		t.Fatalf("the file lost the literal values:\n%s", b)
	}
}

// TestUpdateAndRemoveDiffHideValuesHoweverWritten: a hand-written file
// that writes its credentials with YAML escapes, another quoting or a
// block scalar: the removed lines of 'sluice update' and 'sluice remove'
// (user and --project) hide them like the ones sluice writes.
func TestUpdateAndRemoveDiffHideValuesHoweverWritten(t *testing.T) {
	w := newWorld(t)
	exe, argv, err := mcptest.Command()
	if err != nil {
		t.Fatal(err)
	}
	cmd := scalarFor(exe)
	body := "servers:\n  db:\n    command: " + cmd + "\n" +
		"    args: ['--password', 'it''s-secret-pw-9', '-H', 'Authorization: Bearer it''s-tok-abc123']\n" +
		"    env:\n      DB_PASSWORD: \"hunter\\x32pw-zz81\"\n      API_TOKEN: |\n        blockline-one-77q\n        blockline-two-77q\n"
	leaks := []string{"secret-pw-9", "tok-abc123", "hunter", "pw-zz81", "blockline", "newsecretpw99"}
	update := append([]string{"update", "db", "--"}, append(append([]string{exe}, argv...), "--password", "newsecretpw99")...)
	for _, scope := range []string{"user", "project"} {
		var flag []string
		if scope == "user" {
			w.writeUser(body)
		} else {
			w.writeUser("servers: {}\n")
			w.writeProject(body)
			flag = []string{"--project"}
		}
		r := sluiceProc(t, "", append(update[:2:2], append(flag, update[2:]...)...)...)
		want(t, r, exitOK, "-", "+", "args: ['--password', (hidden), '-H', Authorization: Bearer (hidden)]", "--password, (hidden)")
		if scope == "project" {
			w.writeProject(body)
		} else {
			w.writeUser(body)
		}
		r2 := sluiceProc(t, "", append([]string{"remove", "db"}, flag...)...)
		want(t, r2, exitOK, "-", "DB_PASSWORD: (hidden)", "API_TOKEN: (hidden)", "  (hidden)\n")
		for _, out := range []string{r.stdout + r.stderr, r2.stdout + r2.stderr} {
			for _, s := range leaks {
				if strings.Contains(out, s) {
					t.Errorf("%s: the output shows %s:\n%s", scope, s, out)
				}
			}
		}
	}
}

// scalarFor is p as a double-quoted YAML scalar.
func scalarFor(p string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(p) + `"`
}
