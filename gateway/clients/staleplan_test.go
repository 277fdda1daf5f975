package clients

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestApplyRefusesAFileChangedSincePlanned: between the plan (the diff the
// user is asked to confirm) and Apply, the client itself may rewrite its
// config file. Writing the planned bytes then would silently drop that
// edit; Apply refuses instead and leaves the file, the install records and
// the backups as they were.
func TestApplyRefusesAFileChangedSincePlanned(t *testing.T) {
	c, _ := Lookup("cursor")
	for _, step := range []string{"install", "uninstall", "install into a new file"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "mcp.json")
			state := filepath.Join(dir, "state")
			if step != "install into a new file" {
				if err := os.WriteFile(file, []byte("{\"mcpServers\":{\"a\":{\"command\":\"a\"}}}\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var p *Plan
			var err error
			if step == "uninstall" {
				installed(t, "cursor", file)
				p, err = PlanUninstall(c, file, state, false)
			} else {
				p, err = PlanInstall(InstallOptions{Client: c, File: file, Server: Server{Command: "/opt/sluice", Args: []string{"serve"}}, StateDir: state})
			}
			if err != nil {
				t.Fatal(err)
			}
			records, _ := os.ReadFile(filepath.Join(state, recordsName))
			edited := []byte("{\"mcpServers\":{\"b\":{\"command\":\"written meanwhile\"}}}\n")
			if err := os.WriteFile(file, edited, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := p.Apply(); !errors.Is(err, ErrChanged) {
				t.Fatalf("Apply over a file changed since the plan: err = %v, want ErrChanged", err)
			}
			if got, _ := os.ReadFile(file); !bytes.Equal(got, edited) {
				t.Fatalf("the edit made after the plan was lost: file is now %q", got)
			}
			if got, _ := os.ReadFile(filepath.Join(state, recordsName)); !bytes.Equal(got, records) {
				t.Fatalf("a refused Apply changed the install records:\n%s\nwas\n%s", got, records)
			}
		})
	}
}
