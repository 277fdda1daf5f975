package main

import (
	"os"
	"path/filepath"
	"testing"

	"sluice/gateway/mcp/mcptest"
)

// TestFirstAddOnAFreshMachine: the first 'sluice add' where the config
// directory does not exist yet (nor its parent) creates it, private, with
// the file, and the server is then declared and callable. Before, the
// new file's cwd check resolved against the missing directory and the
// add was refused ("cwd "" cannot be resolved: lstat ...: no such file").
func TestFirstAddOnAFreshMachine(t *testing.T) {
	w := newWorld(t)
	home := filepath.Join(w.root, "fresh", ".config", "sluice")
	t.Setenv("SLUICE_HOME", home)
	exe, argv, err := mcptest.Command()
	if err != nil {
		t.Fatal(err)
	}
	r := sluiceProc(t, "", append([]string{"add", "fx", "--"}, append([]string{exe}, argv...)...)...)
	want(t, r, exitOK, "created "+filepath.Join(home, "mcp.yaml"))
	for p, perm := range map[string]os.FileMode{home: 0o700, filepath.Join(home, "mcp.yaml"): 0o600} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != perm {
			t.Fatalf("%s: %v, mode %v; want %v", p, err, st.Mode().Perm(), perm)
		}
	}
	want(t, sluiceProc(t, "", "check"), exitOK, "ok: 0 errors, 0 warnings in 1 declaration file; 1 server declared (1 user, 0 project)")
	want(t, sluiceProc(t, "", "call", "fx__echo", "text=hi"), exitOK, "hi")
}
