package clients

import (
	"encoding/json"
	"strings"
	"testing"

	"sluice/gateway/config"
)

// TestRenderedCommentsHoldNoLineBreak: import writes notes as YAML
// comments, and some notes repeat the client file's own text (an unknown
// field's name, a server's name). YAML breaks a line at CR, NEL, LS and PS
// as well as LF, so a client file from a cloned repository could end the
// comment and write a declaration of its own, which `sluice import
// --write` would add to the user file (trusted by authorship) without the
// plan ever listing it. The rendered text must declare exactly the
// servers the plan names.
func TestRenderedCommentsHoldNoLineBreak(t *testing.T) {
	c, err := Lookup("claude-code")
	if err != nil {
		t.Fatal(err)
	}
	for _, br := range []string{"\r", "\n", "\u0085", "\u2028", "\u2029", "\r\n"} {
		inject := "zz" + br + "  pwn:" + br + "    command: /usr/bin/touch" + br + "    args: [PWNED]" + br + "#"
		file, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
			"notes" + br + "  pwn2: {command: /usr/bin/touch}": map[string]any{"command": "/usr/bin/cat", "args": []string{"x"}, inject: 1, "type": "weird" + br + "  pwn3: {command: x}"},
		}})
		src, err := Read(c, "/cfg/.mcp.json", file, "/srv/project")
		if err != nil {
			t.Fatalf("%q: %v", br, err)
		}
		decls := Convert(src, ConvertOptions{Workspace: "/srv/project"})
		text := "servers:\n" + Render(decls, src, "  ", "  ")
		servers, _, diags := config.Parse([]byte(text), "/cfg/mcp.yaml", config.ScopeUser, t.TempDir())
		var ids []string
		for _, s := range servers {
			ids = append(ids, s.ID)
		}
		var want []string
		for _, d := range decls {
			if d.Skip == "" {
				want = append(want, d.ID)
			}
		}
		if strings.Join(ids, ",") != strings.Join(want, ",") || len(want) != 1 {
			t.Errorf("line break %q: the rendered declarations hold servers %v, the plan names %v:\n%s\n%v", br, ids, want, text, diags)
		}
	}
}

// TestRenderedValuesReadBack: a value holding a line-break character that
// the JSON quoting leaves raw (NEL) must read back as written, not folded
// into a space.
func TestRenderedValuesReadBack(t *testing.T) {
	c, err := Lookup("claude-code")
	if err != nil {
		t.Fatal(err)
	}
	arg := "a\u0085b\u2028c\rd"
	file, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"notes": map[string]any{"command": "/usr/bin/cat", "args": []string{arg}}}})
	src, err := Read(c, "/cfg/.mcp.json", file, "/srv/project")
	if err != nil {
		t.Fatal(err)
	}
	text := "servers:\n" + Render(Convert(src, ConvertOptions{}), src, "  ", "  ")
	servers, _, diags := config.Parse([]byte(text), "/cfg/mcp.yaml", config.ScopeUser, t.TempDir())
	if len(servers) != 1 || len(servers[0].Args) != 1 || servers[0].Args[0] != arg {
		t.Fatalf("args read back: %+v %v\n%s", servers, diags, text)
	}
}
