package main

import (
	"encoding/json"
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

// TestImportPreviewOnAFreshMachineCreatesNothing: a preview of import (no
// --write) where the config directory does not exist yet checks the new
// file against the directory it will be in and leaves no directory
// behind; --write then makes it, private.
func TestImportPreviewOnAFreshMachineCreatesNothing(t *testing.T) {
	w := newWorld(t)
	parent := filepath.Join(w.root, "fresh", ".config")
	home := filepath.Join(parent, "sluice")
	t.Setenv("SLUICE_HOME", home)
	exe, argv, err := mcptest.Command()
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"fx": map[string]any{"command": exe, "args": argv}}})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(w.project, ".mcp.json"), string(body))
	r := sluiceProc(t, "", "import", ".mcp.json")
	want(t, r, exitOK, "Nothing written")
	if _, err := os.Lstat(filepath.Join(w.root, "fresh")); !os.IsNotExist(err) {
		t.Fatalf("a preview created the config directory's parents: %v", err)
	}
	want(t, sluiceProc(t, "", "import", "--write", ".mcp.json"), exitOK, "fx")
	if st, err := os.Stat(home); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("%s after --write: %v %v", home, err, st)
	}
}
