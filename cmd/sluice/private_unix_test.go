//go:build !windows

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestPrivateDirectories: the binary tightens a loose directory of the
// user's that it keeps private files in, and refuses one that belongs to
// someone else with the way out, changing nothing.
func TestPrivateDirectories(t *testing.T) {
	w := newWorld(t)
	w.writeProject("servers:\n" + fixture(t, "proj"))
	if err := os.Chmod(w.home, 0o755); err != nil {
		t.Fatal(err)
	}
	want(t, sluiceProc(t, "", "trust", "proj", "--yes"), exitOK, "Recorded")
	if fi, err := os.Stat(w.home); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("config directory after trust: %v, %v (want 0700)", fi.Mode(), err)
	}
	if os.Geteuid() != 0 {
		return // only root can hand a directory to another user
	}
	other := filepath.Join(w.root, "other home")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(other, 0o755)
	if err := os.Chown(other, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLUICE_HOME", other)
	r := sluiceProc(t, "", "trust", "proj", "--yes")
	want(t, r, exitFailure, other+" is not private (mode 0755 lets others in) and belongs to uid 65534, not to you (uid 0)",
		fmt.Sprintf("chmod 700 '%s'", other), "SLUICE_HOME")
	if fi, _ := os.Stat(other); fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode changed to %v", fi.Mode())
	}
	if _, err := os.Stat(filepath.Join(other, "trust.json")); !os.IsNotExist(err) {
		t.Fatalf("a trust file was written into the refused directory: %v", err)
	}
}
