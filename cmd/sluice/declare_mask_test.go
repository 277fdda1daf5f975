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
