package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestToolSubsetParse(t *testing.T) {
	ss, st, ds := parseIn(t, ScopeUser, t.TempDir(), `
servers:
  fs:
    command: node
    tools: {allow: ["read_*", list], deny: [read_secret]}
  off:
    url: https://example.com/mcp
    enabled: false
    tools: {deny: ["*"]}
profiles:
  review:
    servers: [fs]
    capabilities: ["fs__read_*"]
`)
	if errCount(ds) != 0 || len(ss) != 2 {
		t.Fatalf("%v%s", ids(ss), dump(ds))
	}
	fs := ss[0]
	for tool, hidden := range map[string]bool{"read_file": false, "list": false, "read_secret": true, "write": true} {
		if got := fs.Tools.Hidden(tool) != ""; got != hidden {
			t.Errorf("Hidden(%s) = %v, want %v", tool, got, hidden)
		}
	}
	if !ss[1].Disabled || ss[1].Tools.Hidden("x") == "" || ss[0].Disabled {
		t.Fatalf("enabled/tools of a url server: %+v", ss[1])
	}
	p, ok := st.Profiles["review"]
	if !ok || !p.HasServer("fs") || p.HasServer("off") || !p.HasCapability("fs__read_x") || p.HasCapability("fs__write") {
		t.Fatalf("profile: %+v", st.Profiles)
	}
}

func TestToolSubsetErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"empty allow", "servers:\n  a:\n    command: node\n    tools: {allow: []}\n", "allow is empty"},
		{"unknown key", "servers:\n  a:\n    command: node\n    tools: {hide: [x]}\n", "unknown"},
		{"bad glob", "servers:\n  a:\n    command: node\n    tools: {deny: [\"[\"]}\n", "malformed"},
		{"enabled not bool", "servers:\n  a:\n    command: node\n    enabled: \"no\"\n", "must be a boolean"},
		{"bad profile name", "profiles:\n  Big: {}\n", "does not match"},
		{"profile bad server", "profiles:\n  p: {servers: [\"a__b\"]}\n", "is not a server id"},
		{"profile unknown key", "profiles:\n  p: {tools: [x]}\n", "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, ds := parseIn(t, ScopeUser, t.TempDir(), tc.text)
			if errCount(ds) == 0 || !strings.Contains(dump(ds), tc.want) {
				t.Fatalf("want an error with %q:%s", tc.want, dump(ds))
			}
		})
	}
	_, _, ds := parseIn(t, ScopeProject, t.TempDir(), "profiles:\n  p: {}\n")
	if errCount(ds) == 0 || !strings.Contains(dump(ds), "only allowed in user config") {
		t.Fatalf("project profiles:%s", dump(ds))
	}
}

func TestLoadDisabledAndProfileWarnings(t *testing.T) {
	home := t.TempDir()
	proj := t.TempDir()
	os.MkdirAll(filepath.Join(proj, ProjectDirName), 0o700)
	os.WriteFile(filepath.Join(home, UserFileName), []byte("servers:\n  a:\n    command: node\n    enabled: false\n  b:\n    command: node\nprofiles:\n  p: {servers: [a, ghost]}\n"), 0o600)
	os.WriteFile(filepath.Join(proj, ProjectDirName, ProjectFileName), []byte("servers:\n  a:\n    command: node\n"), 0o600)
	l := Load(LoadOptions{Cwd: proj, ConfigDir: home, Getenv: func(k string) string {
		if k == "PATH" {
			return os.Getenv("PATH")
		}
		return ""
	}})
	if len(l.Servers) != 1 || l.Servers[0].ID != "b" || len(l.Disabled) != 1 || l.Disabled[0].ID != "a" {
		t.Fatalf("servers %v disabled %v%s", ids(l.Servers), ids(l.Disabled), dump(l.Diagnostics))
	}
	d := dump(l.Diagnostics)
	if !strings.Contains(d, `names server "ghost", which is not declared`) || !strings.Contains(d, "the user declaration wins") {
		t.Fatalf("diagnostics:%s", d)
	}
}
