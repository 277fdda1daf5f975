package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportWritesOnlyTheServersItNames: a client file from a cloned
// repository can carry field names holding YAML line breaks (CR, NEL,
// LS, PS). Import repeats such a name in a comment of the declarations it
// writes; left raw, the break ends the comment and the rest reads as a
// declaration of its own, added to the user file (trusted by authorship)
// although the plan listed one server. After `import --write` the user
// file declares exactly the servers the plan named.
func TestImportWritesOnlyTheServersItNames(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers: {}\n")
	inject := "zz\u2028  pwn:\u2028    command: /usr/bin/touch\u2028    args: [PWNED]\u2028#"
	file, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"notes": map[string]any{"command": "cat", "args": []string{"x"}, inject: 1}}})
	writeFile(t, filepath.Join(w.project, ".mcp.json"), string(file))
	r := sluiceProc(t, "", "import", ".mcp.json", "--from", "claude-code", "--write", "--yes")
	want(t, r, exitOK, "notes")
	r = sluiceProc(t, "", "servers", "--json")
	var rep struct {
		Servers []struct {
			ID string `json:"id"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("servers --json: %v\n%s", err, r)
	}
	var ids []string
	for _, s := range rep.Servers {
		ids = append(ids, s.ID)
	}
	if strings.Join(ids, ",") != "notes" {
		t.Fatalf("after importing one server the user file declares %v:\n%s", ids, readFile(t, filepath.Join(w.home, "mcp.yaml")))
	}
}
