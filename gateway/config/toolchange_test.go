package config

import (
	"strings"
	"testing"
)

func TestOnToolChange(t *testing.T) {
	cases := []struct {
		name  string
		scope Scope
		body  string
		want  string // policy, or a diagnostic fragment
		err   bool
	}{
		{"default", ScopeUser, "", ToolChangeHold, false},
		{"warn user", ScopeUser, "    onToolChange: warn\n", ToolChangeWarn, false},
		{"accept user", ScopeUser, "    onToolChange: accept\n", ToolChangeAccept, false},
		{"hold project", ScopeProject, "    onToolChange: hold\n", ToolChangeHold, false},
		{"accept project", ScopeProject, "    onToolChange: accept\n", "onToolChange: accept is only allowed in user config", true},
		{"warn project", ScopeProject, "    onToolChange: warn\n", "only allowed in user config", true},
		{"bad value", ScopeUser, "    onToolChange: ignore\n", `"ignore" is not one of hold, warn, accept`, true},
		{"remote", ScopeUser, "    onToolChange: warn\n", ToolChangeWarn, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			decl := "    command: x\n"
			if c.name == "remote" {
				decl = "    url: https://example.com/mcp\n"
			}
			servers, _, diags := Parse([]byte("servers:\n  s:\n"+decl+c.body), "f.yaml", c.scope, t.TempDir())
			var errs []string
			for _, d := range diags {
				if d.Severity == SeverityError {
					errs = append(errs, d.Field+": "+d.Message)
				}
			}
			if c.err {
				if len(errs) != 1 || !strings.Contains(errs[0], c.want) || !strings.HasPrefix(errs[0], "servers.s.onToolChange") {
					t.Fatalf("diagnostics %q, want one naming %q", errs, c.want)
				}
				return
			}
			if len(errs) > 0 || len(servers) != 1 {
				t.Fatalf("diagnostics %q", errs)
			}
			if got := servers[0].ToolChangePolicy(); got != c.want {
				t.Fatalf("policy %q, want %q", got, c.want)
			}
		})
	}
	// Digest-neutral: the policy changes how listings are treated, not what runs.
	a, _, _ := Parse([]byte("servers:\n  s:\n    command: x\n"), "f.yaml", ScopeUser, "/")
	b, _, _ := Parse([]byte("servers:\n  s:\n    command: x\n    onToolChange: warn\n"), "f.yaml", ScopeUser, "/")
	if a[0].Digest == "" || a[0].Digest != b[0].Digest {
		t.Fatal("onToolChange changed the declaration digest")
	}
	c, _, diags := Parse([]byte("servers:\n  s:\n    cli:\n      tools: {}\n    onToolChange: warn\n"), "f.yaml", ScopeUser, "/")
	found := false
	for _, d := range diags {
		found = found || strings.Contains(d.Message, "onToolChange applies to MCP servers")
	}
	if !found {
		t.Fatalf("cli block with onToolChange: %v %v", c, diags)
	}
}
