package clients

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Fixture files in each client's documented format.
var fixtures = map[string]string{
	"claude-code": `{
  "numStartups": 12,
  "mcpServers": {
    "fs": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {}},
    "linear": {"type": "sse", "url": "https://mcp.linear.app/sse"}
  },
  "projects": {
    "/srv/project": {"mcpServers": {"local-db": {"command": "db-mcp", "args": ["--url", "${DB_URL:-postgres://localhost}"]}}},
    "/elsewhere": {"mcpServers": {"other": {"command": "x"}}}
  }
}
`,
	"claude-desktop": `{
  "mcpServers": {
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_0123456789abcdefghijABCDEFGHIJ012345"}
    }
  }
}
`,
	"cursor": `{
  "mcpServers": {
    "stripe": {"command": "npx", "args": ["-y", "@stripe/mcp"], "env": {"STRIPE_SECRET_KEY": "sk_test_51HxYzABCDEFGHIJKLMNOP"}},
    "Context7": {"url": "https://mcp.context7.com/mcp", "headers": {"CONTEXT7_API_KEY": "${env:CONTEXT7_API_KEY}"}}
  }
}
`,
	"vscode": `{
  // VS Code allows comments and trailing commas.
  "inputs": [{"type": "promptString", "id": "perplexity-key", "description": "Perplexity API Key", "password": true}],
  "servers": {
    "perplexity": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "server-perplexity-ask"],
      "env": {"PERPLEXITY_API_KEY": "${input:perplexity-key}"},
      "envFile": "${workspaceFolder}/.env",
    },
    "gh": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"},
  },
}
`,
	"windsurf": `{
  "mcpServers": {
    "figma": {"serverUrl": "https://figma.example/mcp", "headers": {"Authorization": "Bearer figd_abcdefghijklmnopqrstuvwxyz123"}},
    "time": {"command": "uvx", "args": ["mcp-server-time"], "disabled": true, "disabledTools": ["convert"]}
  }
}
`,
	"codex": `model = "o3"

[profiles.fast]
model = "o4-mini"

[mcp_servers.docs]
command = "docs-mcp"
args = ["--root", "/srv/docs"]
env = { "DOCS_TOKEN" = "abc123def456ghi789jkl012mno" }
tool_timeout_sec = 90
startup_timeout_sec = 20

[mcp_servers.remote_api]
url = "https://api.example.com/mcp"
bearer_token_env_var = "API_TOKEN"

[mcp_servers.weird]
command = "w"
colour = "blue"
`,
	"gemini": `{
  "theme": "GitHub",
  "mcpServers": {
    "pythonTools": {"command": "python", "args": ["-m", "my_mcp_server"], "cwd": "./mcp-tools/python", "env": {"API_KEY": "$MY_API_TOKEN"}, "timeout": 15000, "trust": false},
    "sse": {"url": "https://sse.example/sse"},
    "stream": {"httpUrl": "https://stream.example/mcp", "headers": {"X-Team": "blue"}}
  }
}
`,
}

func read(t *testing.T, client string) (*Source, []Decl) {
	t.Helper()
	c, err := Lookup(client)
	if err != nil {
		t.Fatal(err)
	}
	src, err := Read(c, "/cfg/"+client, []byte(fixtures[client]), "/srv/project")
	if err != nil {
		t.Fatalf("%s: %v", client, err)
	}
	return src, Convert(src, ConvertOptions{Workspace: "/srv/project"})
}

func byID(ds []Decl) map[string]Decl {
	m := map[string]Decl{}
	for _, d := range ds {
		m[d.ID] = d
	}
	return m
}

func env(d Decl) string {
	var s []string
	for _, kv := range append(append([]KV(nil), d.Env...), d.Headers...) {
		s = append(s, kv.Key+"="+kv.Value)
	}
	return strings.Join(s, ",")
}

func TestReadEveryClient(t *testing.T) {
	cases := []struct {
		client string
		check  func(t *testing.T, m map[string]Decl)
	}{
		{"claude-code", func(t *testing.T, m map[string]Decl) {
			if d := m["fs"]; d.Command != "npx" || len(d.Args) != 3 || d.URL != "" {
				t.Errorf("fs: %+v", d)
			}
			if d := m["linear"]; d.URL != "https://mcp.linear.app/sse" || d.Transport != TransportSSE {
				t.Errorf("linear: %+v", d)
			}
			d := m["local-db"]
			if d.Command != "db-mcp" || !strings.Contains(strings.Join(d.Notes, "\n"), "passes as written") {
				t.Errorf("project server: %+v", d)
			}
			if _, ok := m["other"]; ok {
				t.Errorf("another project's server was read")
			}
		}},
		{"claude-desktop", func(t *testing.T, m map[string]Decl) {
			d := m["github"]
			if env(d) != "GITHUB_PERSONAL_ACCESS_TOKEN=${env:GITHUB_PERSONAL_ACCESS_TOKEN}" || strings.Join(d.SetVars, ",") != "GITHUB_PERSONAL_ACCESS_TOKEN" {
				t.Errorf("github: %+v", d)
			}
		}},
		{"cursor", func(t *testing.T, m map[string]Decl) {
			if d := m["stripe"]; env(d) != "STRIPE_SECRET_KEY=${env:STRIPE_SECRET_KEY}" {
				t.Errorf("stripe: %+v", d)
			}
			if d := m["context7"]; d.URL == "" || d.Transport != TransportAuto || env(d) != "CONTEXT7_API_KEY=${env:CONTEXT7_API_KEY}" || len(d.SetVars) != 0 {
				t.Errorf("context7: %+v", d)
			}
		}},
		{"vscode", func(t *testing.T, m map[string]Decl) {
			d := m["perplexity"]
			if env(d) != "PERPLEXITY_API_KEY=${env:PERPLEXITY_PERPLEXITY_KEY}" || !strings.Contains(strings.Join(d.Notes, "\n"), "envFile is not imported") {
				t.Errorf("perplexity: %+v", d)
			}
			if d := m["gh"]; d.Transport != TransportStreamable {
				t.Errorf("gh: %+v", d)
			}
		}},
		{"windsurf", func(t *testing.T, m map[string]Decl) {
			d := m["figma"]
			if d.URL != "https://figma.example/mcp" || env(d) != "Authorization=Bearer ${env:FIGMA_TOKEN}" {
				t.Errorf("figma: %+v", d)
			}
			n := strings.Join(m["time"].Notes, "\n")
			if !strings.Contains(n, "disabled in Windsurf") || !strings.Contains(n, "disabledTools is not imported") {
				t.Errorf("time notes: %s", n)
			}
		}},
		{"codex", func(t *testing.T, m map[string]Decl) {
			d := m["docs"]
			if d.Command != "docs-mcp" || env(d) != "DOCS_TOKEN=${env:DOCS_TOKEN}" || d.TimeoutMs != 90000 {
				t.Errorf("docs: %+v", d)
			}
			if d := m["remote_api"]; env(d) != "Authorization=Bearer ${env:API_TOKEN}" {
				t.Errorf("remote_api: %+v", d)
			}
			if n := strings.Join(m["weird"].Notes, "\n"); !strings.Contains(n, "unknown field colour") {
				t.Errorf("unknown field not reported: %s", n)
			}
		}},
		{"gemini", func(t *testing.T, m map[string]Decl) {
			d := m["pythontools"]
			if d.Cwd != "./mcp-tools/python" || env(d) != "API_KEY=${env:MY_API_TOKEN}" || d.TimeoutMs != 15000 {
				t.Errorf("pythontools: %+v", d)
			}
			if m["sse"].Transport != TransportSSE || m["stream"].Transport != TransportStreamable {
				t.Errorf("gemini transports: %+v %+v", m["sse"], m["stream"])
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.client, func(t *testing.T) {
			src, decls := read(t, c.client)
			c.check(t, byID(decls))
			text := Render(decls, src, "  ", "  ")
			for _, secret := range []string{"ghp_0123", "sk_test_51", "figd_abc", "abc123def456"} {
				if strings.Contains(text, secret) {
					t.Fatalf("a secret reached the declarations:\n%s", text)
				}
			}
		})
	}
}

func TestLookupSuggests(t *testing.T) {
	if _, err := Lookup("cursr"); err == nil || !strings.Contains(err.Error(), "did you mean cursor?") {
		t.Fatalf("cursr: %v", err)
	}
	if c, err := Lookup("Claude"); err != nil || c.Name != "claude-code" {
		t.Fatalf("alias: %v %v", c, err)
	}
	if _, err := Lookup("zzzzzz"); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Fatalf("a far word got a suggestion: %v", err)
	}
}

func TestIDs(t *testing.T) {
	for in, want := range map[string]string{"GitHub": "github", "my server": "my-server", "a__b": "a_b", "!!!": "", "x.y/z": "x-y-z",
		strings.Repeat("a", 40): strings.Repeat("a", 32)} {
		if got := ID(in); got != want {
			t.Errorf("ID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBadFiles(t *testing.T) {
	c, _ := Lookup("cursor")
	for _, bad := range []string{`{"mcpServers": [1]}`, `{"mcpServers": {"a": `, `[1,2]`} {
		if _, err := Read(c, "/f.json", []byte(bad), ""); err == nil {
			t.Errorf("%q: no error", bad)
		} else if !strings.Contains(err.Error(), "/f.json") {
			t.Errorf("%q: error does not name the file: %v", bad, err)
		}
	}
	codex, _ := Lookup("codex")
	if _, err := Read(codex, "/c.toml", []byte("[mcp_servers.a\ncommand = 1"), ""); err == nil || !strings.Contains(err.Error(), "/c.toml:2: not valid TOML") {
		t.Errorf("bad toml: %v", err)
	}
}

func installed(t *testing.T, client, file string, remove ...string) *Plan {
	t.Helper()
	c, _ := Lookup(client)
	p, err := PlanInstall(InstallOptions{Client: c, File: file, Server: Server{Command: "/opt/sluice", Args: []string{"serve"}},
		Remove: remove, StateDir: filepath.Join(filepath.Dir(file), "state"), Now: time.Unix(1700000000, 0)})
	if err != nil {
		t.Fatalf("plan install %s: %v", client, err)
	}
	if err := p.Apply(); err != nil {
		t.Fatal(err)
	}
	return p
}

func uninstall(t *testing.T, client, file string) (*Plan, error) {
	t.Helper()
	c, _ := Lookup(client)
	p, err := PlanUninstall(c, file, filepath.Join(filepath.Dir(file), "state"), false)
	if err != nil {
		return nil, err
	}
	return p, p.Apply()
}

// TestInstallUninstallByteExact: every client's file gets a sluice
// entry that decodes, keeps everything else, and uninstall restores the
// original bytes; both are idempotent.
func TestInstallUninstallByteExact(t *testing.T) {
	for client, body := range fixtures {
		t.Run(client, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "config")
			if err := os.WriteFile(file, []byte(body), 0o640); err != nil {
				t.Fatal(err)
			}
			p := installed(t, client, file)
			after, _ := os.ReadFile(file)
			c, _ := Lookup(client)
			names, err := serverNames(c, file, after)
			if err != nil || names[EntryName] == nil {
				t.Fatalf("after install: %v %v\n%s", err, names, after)
			}
			if !strings.Contains(p.Diff, "/opt/sluice") {
				t.Errorf("diff: %s", p.Diff)
			}
			if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o640 {
				t.Errorf("mode changed to %v", fi.Mode())
			}
			if again := installed(t, client, file); again.Already == "" {
				t.Errorf("second install did something")
			}
			if b, _ := os.ReadFile(file); !bytes.Equal(b, after) {
				t.Errorf("second install changed the file")
			}
			if _, err := uninstall(t, client, file); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(file); string(b) != body {
				t.Fatalf("uninstall did not restore the bytes:\n%s", b)
			}
			p2, err := uninstall(t, client, file)
			if err != nil || p2.Already == "" {
				t.Fatalf("second uninstall: %v %+v", err, p2)
			}
		})
	}
}

func TestInstallCreatesAndUninstallRemoves(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "sub", "mcp.json")
	installed(t, "cursor", file)
	b, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(b), `"sluice"`) {
		t.Fatalf("created: %v %s", err, b)
	}
	if _, err := uninstall(t, "cursor", file); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("uninstall left the file it created: %v", err)
	}
}

func TestInstallReplace(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ client, remove, keep string }{
		{"cursor", "stripe", "Context7"},
		{"codex", "docs", "remote_api"},
		{"vscode", "perplexity", "gh"},
	} {
		file := filepath.Join(dir, c.client)
		if err := os.WriteFile(file, []byte(fixtures[c.client]), 0o600); err != nil {
			t.Fatal(err)
		}
		p := installed(t, c.client, filepath.Join(dir, c.client), c.remove)
		if strings.Join(p.Removed, ",") != c.remove {
			t.Errorf("%s removed %v", c.client, p.Removed)
		}
		cl, _ := Lookup(c.client)
		after, _ := os.ReadFile(file)
		names, err := serverNames(cl, file, after)
		if err != nil || names[c.remove] != nil || names[c.keep] == nil || names[EntryName] == nil {
			t.Errorf("%s after replace: %v %v\n%s", c.client, err, names, after)
		}
		if _, err := uninstall(t, c.client, file); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(file); string(b) != fixtures[c.client] {
			t.Errorf("%s: not restored:\n%s", c.client, b)
		}
	}
}

// TestChangedFileRefused: after the file changed, neither install nor
// uninstall touches it, and the error says what to do.
func TestChangedFileRefused(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(file, []byte(fixtures["cursor"]), 0o600); err != nil {
		t.Fatal(err)
	}
	installed(t, "cursor", file)
	b, _ := os.ReadFile(file)
	edited := bytes.Replace(b, []byte(`"stripe"`), []byte(`"stripe2"`), 1)
	if err := os.WriteFile(file, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := uninstall(t, "cursor", file)
	if !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), "--forget") || !strings.Contains(err.Error(), "backups") {
		t.Fatalf("uninstall of a changed file: %v", err)
	}
	c, _ := Lookup("cursor")
	if _, err := PlanInstall(InstallOptions{Client: c, File: file, Server: Server{Command: "/x"}, StateDir: filepath.Join(dir, "state")}); !errors.Is(err, ErrChanged) {
		t.Fatalf("install into a changed file: %v", err)
	}
	if got, _ := os.ReadFile(file); !bytes.Equal(got, edited) {
		t.Fatal("a refused step changed the file")
	}
	p, err := PlanUninstall(c, file, filepath.Join(dir, "state"), true)
	if err != nil || p.Apply() != nil {
		t.Fatalf("forget: %v", err)
	}
	if got, _ := os.ReadFile(file); !bytes.Equal(got, edited) {
		t.Fatal("forget changed the file")
	}
}

func TestInstallRefusesForeignSluiceEntry(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(file, []byte(`{"mcpServers":{"sluice":{"command":"other"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, _ := Lookup("cursor")
	_, err := PlanInstall(InstallOptions{Client: c, File: file, Server: Server{Command: "/x"}, StateDir: filepath.Join(dir, "state")})
	if err == nil || !strings.Contains(err.Error(), "already has a server named") {
		t.Fatalf("foreign entry: %v", err)
	}
}

func TestInstallCompactAndEmpty(t *testing.T) {
	for _, body := range []string{`{}`, `{"mcpServers":{}}`, `{"a":1,"mcpServers":{"x":{"command":"y"}}}`, "\n", `{"mcpServers": {} , }`} {
		dir := t.TempDir()
		file := filepath.Join(dir, "mcp.json")
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		installed(t, "cursor", file)
		if _, err := uninstall(t, "cursor", file); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(file); string(b) != body {
			t.Errorf("%q: restored %q", body, b)
		}
	}
}

func TestMask(t *testing.T) {
	line := `"env": {"GITHUB_TOKEN": "ghp_0123456789abcdefghijABCDEFGHIJ012345", "LEVEL": "debug"}, TOKEN = "abcdefghijklmnopqrstuvwxyz123"`
	got := Mask(line)
	if strings.Contains(got, "ghp_") || strings.Contains(got, "abcdefghijklmnop") || !strings.Contains(got, `"debug"`) {
		t.Fatalf("Mask: %s", got)
	}
}
