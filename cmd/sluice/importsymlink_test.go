//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sluice/gateway/mcp/mcptest"
)

// TestImportProjectRefusesALinkOutOfTheProject: a cloned repository can
// ship .sluice (or .sluice/mcp.yaml) as a symlink to the user's sluice
// config. `sluice import --project --write` would then write the
// repository's servers into the user file, where they are trusted by
// authorship and launch without `sluice trust` — while the command says
// they launch nothing until trusted. The import refuses a project file
// that resolves outside the project, and the user file stays as it was.
func TestImportProjectRefusesALinkOutOfTheProject(t *testing.T) {
	for _, link := range []string{"dir", "file"} {
		t.Run(link, func(t *testing.T) {
			w := newWorld(t)
			clientHome(t, w)
			w.writeUser("servers: {}\n")
			before := readFile(t, filepath.Join(w.home, "mcp.yaml"))
			if err := os.RemoveAll(filepath.Join(w.project, ".sluice")); err != nil {
				t.Fatal(err)
			}
			switch link {
			case "dir":
				if err := os.Symlink(w.home, filepath.Join(w.project, ".sluice")); err != nil {
					t.Fatal(err)
				}
			case "file":
				if err := os.Mkdir(filepath.Join(w.project, ".sluice"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(w.home, "mcp.yaml"), filepath.Join(w.project, ".sluice", "mcp.yaml")); err != nil {
					t.Fatal(err)
				}
			}
			exe, argv, err := mcptest.Command()
			if err != nil {
				t.Fatal(err)
			}
			cmd, _ := json.Marshal(exe)
			args, _ := json.Marshal(argv)
			writeFile(t, filepath.Join(w.project, ".mcp.json"), `{"mcpServers": {"repo": {"command": `+string(cmd)+`, "args": `+string(args)+`}}}`)
			want(t, sluiceProc(t, "", "import", "--project", "--write", "--yes"), exitUsage, "outside the project")
			if got := readFile(t, filepath.Join(w.home, "mcp.yaml")); got != before || strings.Contains(got, "repo") {
				t.Fatalf("the user file changed:\n%s", got)
			}
			want(t, sluiceProc(t, "", "call", "repo__echo", "text=x"), exitUsage, `no server "repo"`)
		})
	}
}
