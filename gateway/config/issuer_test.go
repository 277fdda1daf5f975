package config

import (
	"strings"
	"testing"
)

// TestOAuthIssuer: oauth.issuer pins the authorization server. It is an
// issuer identifier (absolute http(s), no userinfo, query or fragment),
// https for an https server, and bound by the digest (a project file
// changing it is a change to review) without moving the digest of a
// declaration that has none.
func TestOAuthIssuer(t *testing.T) {
	ss, _, ds := parseIn(t, ScopeProject, t.TempDir(), "servers:\n  s:\n    url: https://a.example/mcp\n    oauth: {issuer: \"https://auth.example.com/tenant\"}\n")
	if errCount(ds) != 0 || len(ss) != 1 || ss[0].OAuth == nil || ss[0].OAuth.Issuer != "https://auth.example.com/tenant" {
		t.Fatalf("issuer not parsed:%s", dump(ds))
	}
	bad := []struct{ body, field, want string }{
		{"url: https://a.example/mcp\n    oauth: {issuer: auth.example.com}", "servers.s.oauth.issuer", "absolute http(s)"},
		{"url: https://a.example/mcp\n    oauth: {issuer: \"ftp://auth.example.com\"}", "servers.s.oauth.issuer", "absolute http(s)"},
		{"url: https://a.example/mcp\n    oauth: {issuer: \"https://auth.example.com/?x=1\"}", "servers.s.oauth.issuer", "query or a fragment"},
		{"url: https://a.example/mcp\n    oauth: {issuer: \"https://auth.example.com/#f\"}", "servers.s.oauth.issuer", "query or a fragment"},
		{"url: https://a.example/mcp\n    oauth: {issuer: \"https://u:p@auth.example.com\"}", "servers.s.oauth.issuer", "userinfo"},
		{"url: https://a.example/mcp\n    oauth: {issuer: \"http://auth.example.com\"}", "servers.s.oauth.issuer", "plain http for an https server"},
		{"oauth: {issuer: \"https://auth.example.com\"}\n    url: https://a.example/mcp", "servers.s.oauth.issuer", "plain http"},
		{"url: https://a.example/mcp\n    oauth: {issuer: [x]}", "servers.s.oauth.issuer", ""},
	}
	bad[6].body = strings.Replace(bad[6].body, "https://auth", "http://auth", 1) // url after oauth
	for _, tc := range bad {
		ss, _, ds := parseIn(t, ScopeUser, t.TempDir(), "servers:\n  s:\n    "+tc.body+"\n")
		found := false
		for _, d := range ds {
			if d.Severity == SeverityError && d.Field == tc.field && strings.Contains(d.Message, tc.want) && d.Line > 0 {
				found = true
			}
		}
		if len(ss) != 0 || !found {
			t.Errorf("%q: servers %v; want an error at %s mentioning %q with a line:%s", tc.body, ids(ss), tc.field, tc.want, dump(ds))
		}
	}
	// A local http server may name a local http authorization server.
	if _, _, ds := parseIn(t, ScopeUser, t.TempDir(), "servers:\n  s:\n    url: http://127.0.0.1:8931/mcp\n    oauth: {issuer: \"http://127.0.0.1:9000\"}\n"); errCount(ds) != 0 {
		t.Errorf("http issuer for an http server:%s", dump(ds))
	}

	base := "servers:\n  s:\n    url: https://a.example/mcp\n    oauth: {clientId: c}\n"
	pinned := "servers:\n  s:\n    url: https://a.example/mcp\n    oauth: {clientId: c, issuer: \"https://auth.example.com\"}\n"
	other := strings.Replace(pinned, "auth.example.com", "evil.example.com", 1)
	d0, d1, d2 := oneServer(t, ScopeProject, base), oneServer(t, ScopeProject, pinned), oneServer(t, ScopeProject, other)
	if d0.Digest == d1.Digest || d1.Digest == d2.Digest {
		t.Fatal("the digest does not bind oauth.issuer")
	}
	if d1.FieldDigests()["oauth"] == d2.FieldDigests()["oauth"] || d1.FieldDigests()["url"] != d2.FieldDigests()["url"] {
		t.Fatal("oauth.issuer is not bound by the oauth field digest alone")
	}
}
