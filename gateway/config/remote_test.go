package config

import (
	"strings"
	"testing"
)

func TestRemoteParse(t *testing.T) {
	text := `
servers:
  github:
    url: https://api.example.com/mcp
    headers: {X-Team: platform, Authorization: "Bearer ${env:GITHUB_TOKEN}"}
    transport: streamable-http
    timeoutMs: 60000
    actionClass: read
    oauth: {clientId: abc, scopes: [repo, "read:org"], redirectPort: 8765}
  local-dev:
    url: http://127.0.0.1:8931/mcp
    allowPrivate: true
`
	ss, _, ds := parseIn(t, ScopeUser, t.TempDir(), text)
	if errCount(ds) != 0 || len(ss) != 2 {
		t.Fatalf("servers %v diagnostics:%s", ids(ss), dump(ds))
	}
	g := ss[0]
	if !g.IsRemote() || g.URL != "https://api.example.com/mcp" || g.Transport != TransportStreamable || g.TimeoutMs != 60000 ||
		g.Headers["Authorization"] != "Bearer ${env:GITHUB_TOKEN}" || g.Headers["X-Team"] != "platform" || g.ActionClass != ActionRead {
		t.Fatalf("github = %+v", g)
	}
	if g.OAuth == nil || g.OAuth.ClientID != "abc" || strings.Join(g.OAuth.Scopes, ",") != "repo,read:org" || g.OAuth.Grant != GrantAuthorizationCode || g.OAuth.RedirectPort != 8765 {
		t.Fatalf("oauth = %+v", g.OAuth)
	}
	l := ss[1]
	if !l.AllowPrivate || l.Transport != TransportAuto || l.Command != "" {
		t.Fatalf("local-dev = %+v", l)
	}
	h, err := g.ExpandHeaders(func(n string) (string, bool) { return "tok-" + n, true })
	if err != nil || h["Authorization"] != "Bearer tok-GITHUB_TOKEN" {
		t.Fatalf("ExpandHeaders = %v, %v", h, err)
	}
	if _, err := g.ExpandHeaders(func(string) (string, bool) { return "a\r\nX: y", true }); err == nil {
		t.Fatal("a header value with CR/LF from the environment was accepted")
	}
}

func TestRemoteDiagnostics(t *testing.T) {
	cases := []struct {
		name  string
		scope Scope
		body  string // the server's fields, indented by 4
		field string
		want  string
	}{
		{"command and url", ScopeUser, "url: https://a.example/mcp\n    command: npx", "servers.s.command", "cannot be used with url"},
		{"cli and url", ScopeUser, "url: https://a.example/mcp\n    cli: {}", "servers.s.cli", "cannot be used with url"},
		{"args with url", ScopeUser, "url: https://a.example/mcp\n    args: [x]", "servers.s.args", "cannot be used with url"},
		{"userinfo", ScopeUser, "url: https://u:pw@a.example/mcp", "servers.s.url", "userinfo"},
		{"scheme", ScopeUser, "url: ftp://a.example/mcp", "servers.s.url", "scheme ftp"},
		{"relative", ScopeUser, "url: /mcp", "servers.s.url", "not absolute"},
		{"empty url", ScopeUser, `url: ""`, "servers.s.url", ""},
		{"headers without url", ScopeUser, "command: npx\n    headers: {X: y}", "servers.s.headers", "only to remote"},
		{"transport enum", ScopeUser, "url: https://a.example/mcp\n    transport: websocket", "servers.s.transport", ""},
		{"crlf header", ScopeUser, "url: https://a.example/mcp\n    headers: {X-A: \"a\\r\\nInjected: 1\"}", "servers.s.headers.X-A", "CR or LF"},
		{"bad header name", ScopeUser, "url: https://a.example/mcp\n    headers: {\"X A\": b}", "servers.s.headers", "not a valid HTTP header name"},
		{"reserved header", ScopeUser, "url: https://a.example/mcp\n    headers: {mcp-session-id: b}", "servers.s.headers.mcp-session-id", "set by the transport"},
		{"duplicate header", ScopeUser, "url: https://a.example/mcp\n    headers: {X-A: a, x-a: b}", "servers.s.headers.x-a", "declared twice"},
		{"bad ref", ScopeUser, "url: https://a.example/mcp\n    headers: {X-A: \"${env:}\"}", "servers.s.headers.X-A", ""},
		{"allowPrivate in project", ScopeProject, "url: https://a.example/mcp\n    allowPrivate: true", "servers.s.allowPrivate", "only allowed in user config"},
		{"allowPrivate type", ScopeUser, "url: https://a.example/mcp\n    allowPrivate: yes please", "servers.s.allowPrivate", "boolean"},
		{"oauth unknown", ScopeUser, "url: https://a.example/mcp\n    oauth: {clientID: x}", "servers.s.oauth.clientID", ""},
		{"literal secret in project", ScopeProject, "url: https://a.example/mcp\n    oauth: {clientId: a, clientSecret: hunter2}", "servers.s.oauth.clientSecret", "shared"},
		{"client credentials needs secret", ScopeUser, "url: https://a.example/mcp\n    oauth: {clientId: a, grant: client_credentials}", "servers.s.oauth", "needs a clientSecret"},
		{"jwt needs key", ScopeUser, "url: https://a.example/mcp\n    oauth: {clientId: a, clientSecret: \"${env:S}\", tokenAuthMethod: private_key_jwt}", "servers.s.oauth.privateKey", "needs a privateKey"},
		{"cimd not https", ScopeUser, "url: https://a.example/mcp\n    oauth: {clientMetadataUrl: \"http://a.example/c.json\"}", "servers.s.oauth.clientMetadataUrl", "https"},
		{"scope with space", ScopeUser, "url: https://a.example/mcp\n    oauth: {scopes: [\"a b\"]}", "servers.s.oauth.scopes[0]", "scope token"},
		{"unknown field", ScopeUser, "url: https://a.example/mcp\n    header: {X: y}", "servers.s.header", ""},
	}
	for _, tc := range cases {
		text := "servers:\n  s:\n    " + tc.body + "\n"
		ss, _, ds := parseIn(t, tc.scope, t.TempDir(), text)
		if len(ss) != 0 {
			t.Errorf("%s: the server was accepted:%s", tc.name, dump(ds))
			continue
		}
		found := false
		for _, d := range ds {
			if d.Severity == SeverityError && d.Field == tc.field && strings.Contains(d.Message, tc.want) && d.Line > 0 {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no error at %s mentioning %q with a line:%s", tc.name, tc.field, tc.want, dump(ds))
		}
		for _, d := range ds {
			if strings.Contains(d.String(), "pw@") || strings.Contains(d.String(), "hunter2") {
				t.Errorf("%s: a diagnostic repeats a secret: %s", tc.name, d)
			}
		}
	}
}

func TestRemoteWarnings(t *testing.T) {
	text := "servers:\n  s:\n    url: https://a.example/mcp\n    headers: {Authorization: \"Bearer abc\"}\n"
	ss, _, ds := parseIn(t, ScopeProject, t.TempDir(), text)
	if len(ss) != 1 || errCount(ds) != 0 || len(ds) != 1 || ds[0].Severity != SeverityWarning {
		t.Fatalf("want the server with one warning:%s", dump(ds))
	}
}

func TestRemoteDigest(t *testing.T) {
	base := "servers:\n  s:\n    url: https://a.example/mcp\n    headers: {X-A: \"${env:A}\"}\n    transport: auto\n    timeoutMs: 1000\n    oauth: {clientId: c, scopes: [x]}\n"
	d0 := oneServer(t, ScopeProject, base).Digest
	same := []string{
		"servers:\n  s:\n    oauth: {scopes: [x], clientId: c}\n    timeoutMs: 1000\n    transport: auto\n    headers: {x-a: \"${env:A}\"}\n    url: https://a.example/mcp\n",
		"servers:\n  s:\n    url: https://a.example/mcp\n    headers: {X-A: \"${env:A}\"}\n    timeoutMs: 1000\n    oauth: {clientId: c, scopes: [x]}\n    actionClass: read\n",
	}
	for i, text := range same {
		scope := ScopeProject
		if strings.Contains(text, "actionClass") {
			scope = ScopeUser
		}
		if d := oneServer(t, scope, text).Digest; d != d0 {
			t.Errorf("same[%d]: digest changed", i)
		}
	}
	changed := map[string]string{
		"url":       strings.Replace(base, "a.example/mcp", "a.example/mcp2", 1),
		"headers":   strings.Replace(base, "${env:A}", "${env:B}", 1),
		"transport": strings.Replace(base, "transport: auto", "transport: sse", 1),
		"timeoutMs": strings.Replace(base, "1000", "2000", 1),
		"oauth":     strings.Replace(base, "scopes: [x]", "scopes: [x, y]", 1),
	}
	for field, text := range changed {
		s := oneServer(t, ScopeProject, text)
		if s.Digest == d0 {
			t.Errorf("changing %s kept the digest", field)
		}
		s0 := oneServer(t, ScopeProject, base)
		fd0 := s0.FieldDigests()
		fd := s.FieldDigests()
		var diff []string
		for k := range fd {
			if fd[k] != fd0[k] {
				diff = append(diff, k)
			}
		}
		if len(diff) != 1 || diff[0] != field {
			t.Errorf("changing %s: field digests differ in %v", field, diff)
		}
	}
}
