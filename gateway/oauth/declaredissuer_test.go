package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"sluice/gateway/remote"
)

// prmResource is a protected resource that refuses every MCP request with
// a bare Bearer challenge, names the authorization servers list() gives in
// its well-known metadata, and names other alone at /evil-prm (for a 401
// whose resource_metadata points there).
func prmResource(t *testing.T, list func() string, other string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource"):
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"authorization_servers":` + list() + `}`))
		case strings.HasPrefix(r.URL.Path, "/evil-prm"):
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"authorization_servers":["` + other + `"]}`))
		default:
			w.Header().Set("WWW-Authenticate", `Bearer`)
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestDeclaredIssuerPinsFirstUse: without a pin the first client-credentials
// grant goes wherever the remote server's metadata points. With
// oauth.issuer the declaration decides: a server naming another
// authorization server gets nothing, on first use, on a 401's
// resource_metadata, and even through an explicit `sluice auth`; a list
// that holds the declared one among others uses the declared one.
func TestDeclaredIssuerPinsFirstUse(t *testing.T) {
	legit, evil := newPinAS(t), newPinAS(t)
	var mu sync.Mutex
	servers := `["` + evil.srv.URL + `"]`
	resource := prmResource(t, func() string {
		mu.Lock()
		defer mu.Unlock()
		return servers
	}, evil.srv.URL)

	az, err := New(Config{Server: "s", URL: resource.URL + "/mcp", StateDir: t.TempDir(), AllowPrivate: true,
		Grant: GrantClientCredentials, ClientID: "machine", ClientSecret: "machine-secret", Issuer: legit.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// First use, explicit: the operator's `sluice auth` cannot override
	// the declaration either.
	if err := az.Login(ctx, LoginOptions{}); !errors.Is(err, ErrIssuerMismatch) || !strings.Contains(err.Error(), evil.srv.URL) || !strings.Contains(err.Error(), "oauth.issuer") {
		t.Fatalf("first login with the server naming another authorization server: %v; want ErrIssuerMismatch naming it and oauth.issuer", err)
	}
	// First use, from a request: Authorization has nothing, the 401 runs the grant.
	if err := az.Challenge(ctx, http.StatusUnauthorized, []string{`Bearer`}); !errors.Is(err, ErrIssuerMismatch) || !errors.Is(err, remote.ErrAuthRequired) {
		t.Fatalf("first challenge: %v; want ErrIssuerMismatch within ErrAuthRequired", err)
	}
	if n := evil.secrets.Load(); n != 0 {
		t.Fatalf("the declared client secret reached an authorization server other than the declared issuer %d times", n)
	}

	// The declared server among others: it is the one used.
	mu.Lock()
	servers = `["` + evil.srv.URL + `","` + legit.srv.URL + `"]`
	mu.Unlock()
	if err := az.Login(ctx, LoginOptions{}); err != nil {
		t.Fatalf("login with the declared issuer listed second: %v", err)
	}
	if legit.secrets.Load() != 1 || evil.secrets.Load() != 0 {
		t.Fatalf("token requests: declared %d, other %d; want 1 and 0", legit.secrets.Load(), evil.secrets.Load())
	}
	// Rediscovery through a 401's resource_metadata naming only the other one.
	if err := az.Challenge(ctx, http.StatusUnauthorized, []string{`Bearer resource_metadata="` + resource.URL + `/evil-prm"`}); !errors.Is(err, ErrIssuerMismatch) {
		t.Fatalf("challenge naming another authorization server: %v; want ErrIssuerMismatch", err)
	}
	if n := evil.secrets.Load(); n != 0 {
		t.Fatalf("the declared client secret reached the other authorization server %d times", n)
	}
}

// TestDeclaredIssuerIgnoresOtherTokens: a token file written before the
// pin (or by another declaration of the same url) holds tokens and a
// refresh endpoint of another authorization server. With the pin they are
// not used: neither presented nor refreshed there with the declared
// client credentials.
func TestDeclaredIssuerIgnoresOtherTokens(t *testing.T) {
	a := newAuthServer(t)
	dir := t.TempDir()
	az := newAuthorizer(t, a, func(c *Config) { c.StateDir = dir })
	if err := az.Login(context.Background(), LoginOptions{Open: browser(t)}); err != nil {
		t.Fatal(err)
	}
	if st, _ := az.Status(); !st.Authorized || st.Issuer == "" {
		t.Fatalf("status after login: %+v", st)
	}
	pinned := newAuthorizer(t, a, func(c *Config) { c.StateDir = dir; c.Issuer = "https://as.example.com" })
	if st, _ := pinned.Status(); st.Authorized {
		t.Fatalf("a token of another authorization server counts as authorized under the pin: %+v", st)
	}
	h, err := pinned.Authorization(context.Background())
	if err != nil || h != "" {
		t.Fatalf("Authorization under a pin to another issuer: %q, %v; want no token", h, err)
	}
}
