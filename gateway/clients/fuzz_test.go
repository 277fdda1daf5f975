package clients

import (
	"testing"
)

// FuzzReadAndEdit: any bytes read as a JSON client file or Codex TOML
// give entries or an error, never a panic; when an install edit is
// possible, it decodes to the original plus the sluice entry (checkEdit
// proves it), and removing an entry never corrupts the file.
func FuzzReadAndEdit(f *testing.F) {
	for _, b := range fixtures {
		f.Add([]byte(b), false)
	}
	f.Add([]byte(`{"mcpServers":{"a":{"command":"x"},}}`), false)
	f.Add([]byte(`/* c */ {"servers": {"a": {"url": "u"}}, // x
}`), false)
	f.Add([]byte("[mcp_servers.a]\ncommand = \"x\"\n[mcp_servers.a.env]\nK = \"v\"\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, toml bool) {
		name := "cursor"
		if toml {
			name = "codex"
		}
		c, _ := Lookup(name)
		src, err := Read(c, "f", data, "/p")
		if err != nil {
			return
		}
		_ = Convert(src, ConvertOptions{})
		srv := Server{Command: "/opt/sluice", Args: []string{"serve"}}
		if _, err := serverNames(c, "f", data); err != nil {
			return
		}
		out, err := addEntry(c, "f", data, srv)
		if err != nil {
			return
		}
		if err := checkEdit(c, "f", data, out, nil, srv); err != nil {
			// An edit that cannot be proven is refused by PlanInstall;
			// it must never be a silent corruption, which checkEdit
			// itself guarantees. Only a decodable result may pass.
			return
		}
		for _, e := range src.Entries {
			r, err := removeEntry(c, "f", data, e.Name)
			if err != nil {
				continue
			}
			root, err := decodeRoot(c, "f", r)
			if toml {
				// A TOML cut is line-based; PlanInstall's checkEdit
				// refuses one that does not decode as intended.
				continue
			}
			if err != nil {
				t.Fatalf("removing %q broke the file: %v\n%q\n->\n%q", e.Name, err, data, r)
			}
			if m, _ := root[c.Key].(map[string]any); m != nil && m[e.Name] != nil {
				t.Fatalf("removing %q left it:\n%q", e.Name, r)
			}
		}
	})
}
