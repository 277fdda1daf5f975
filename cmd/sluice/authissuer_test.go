package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestAuthHonoursDeclaredIssuer: a declaration with oauth.issuer sends its
// client credentials to that authorization server only. A server whose
// metadata names another one gets `sluice auth` refused, naming both, and
// the other authorization server receives nothing.
func TestAuthHonoursDeclaredIssuer(t *testing.T) {
	w := newWorld(t)
	var otherHits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		http.NotFound(rw, r)
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") {
			rw.Header().Set("Content-Type", "application/json")
			json.NewEncoder(rw).Encode(map[string]any{"authorization_servers": []string{other.URL}})
			return
		}
		rw.Header().Set("WWW-Authenticate", `Bearer`)
		rw.WriteHeader(401)
	}))
	defer srv.Close()
	t.Setenv("PROT_SECRET", "machine-secret")
	w.writeUser("servers:\n" + remoteDecl("prot", srv.URL+"/mcp", "allowPrivate: true", "actionClass: read", "transport: streamable-http",
		"oauth:\n      clientId: machine\n      clientSecret: \"${env:PROT_SECRET}\"\n      grant: client_credentials\n      issuer: \"https://auth.example.com\""))
	r := sluiceProc(t, "", "auth", "prot", "--no-browser", "--timeout", "20s")
	want(t, r, exitFailure, "oauth.issuer", "https://auth.example.com", other.URL)
	if n := otherHits.Load(); n != 0 {
		t.Fatalf("the authorization server the declaration does not name was asked %d times:\n%s", n, r)
	}
}
