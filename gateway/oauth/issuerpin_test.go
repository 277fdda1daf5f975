package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"sluice/gateway/remote"
)

// pinAS is an authorization server that issues client-credentials tokens
// with a short life (under expirySkew, so every Authorization asks again)
// and counts the token requests that carried the declared secret.
type pinAS struct {
	srv     *httptest.Server
	secrets atomic.Int32
}

func newPinAS(t *testing.T) *pinAS {
	p := &pinAS{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			w.Write([]byte(`{"issuer":"` + p.srv.URL + `","token_endpoint":"` + p.srv.URL + `/token","grant_types_supported":["client_credentials"]}`))
		case "/token":
			r.ParseForm()
			if _, pw, ok := r.BasicAuth(); (ok && strings.Contains(pw, "machine-secret")) || strings.Contains(r.Form.Get("client_secret"), "machine-secret") {
				p.secrets.Add(1)
			}
			w.Write([]byte(`{"access_token":"tok-` + rnd() + `","token_type":"Bearer","expires_in":1}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// TestClientCredentialsStayWithTheirAuthorizationServer: a declared client
// secret is a credential at one authorization server, often for more than
// this resource. When the remote server's metadata later names another
// authorization server (in its well-known document or in a 401's
// resource_metadata, which may live on any origin), sluice must not post
// the secret there on its own: only an explicit `sluice auth` accepts the
// new server.
func TestClientCredentialsStayWithTheirAuthorizationServer(t *testing.T) {
	legit, evil := newPinAS(t), newPinAS(t)
	var mu sync.Mutex
	current := legit.srv.URL
	resource := prmResource(t, func() string {
		mu.Lock()
		defer mu.Unlock()
		return `["` + current + `"]`
	}, evil.srv.URL)

	az, err := New(Config{Server: "s", URL: resource.URL + "/mcp", StateDir: t.TempDir(), AllowPrivate: true,
		Grant: GrantClientCredentials, ClientID: "machine", ClientSecret: "machine-secret"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := az.Login(ctx, LoginOptions{}); err != nil {
		t.Fatal(err)
	}
	if legit.secrets.Load() != 1 {
		t.Fatalf("the first authorization reached the declared server %d times, want 1", legit.secrets.Load())
	}
	// The same server keeps working without the user.
	if h, err := az.Authorization(ctx); err != nil || !strings.HasPrefix(h, "Bearer tok-") {
		t.Fatalf("Authorization at the same server: %q, %v", h, err)
	}

	mu.Lock()
	current = evil.srv.URL
	mu.Unlock()
	// An expired token asks again through the server's well-known metadata.
	if _, err := az.Authorization(ctx); err != nil {
		t.Fatalf("Authorization: %v", err)
	}
	// A 401 names the other server through its resource_metadata.
	err = az.Challenge(ctx, http.StatusUnauthorized, []string{`Bearer resource_metadata="` + resource.URL + `/evil-prm"`})
	if err == nil || !errors.Is(err, remote.ErrAuthRequired) || !strings.Contains(err.Error(), evil.srv.URL) || !strings.Contains(err.Error(), "sluice auth s") {
		t.Fatalf("challenge naming another authorization server: err = %v; want an auth-required error naming it and `sluice auth s`", err)
	}
	// Even a user at the terminal is not asked in place: nothing would be
	// shown to them before the secret went out.
	az.cfg.Interactive = &LoginOptions{}
	if err := az.Challenge(ctx, http.StatusUnauthorized, []string{`Bearer resource_metadata="` + resource.URL + `/evil-prm"`}); err == nil {
		t.Fatal("an in-place login accepted another authorization server")
	}
	az.cfg.Interactive = nil
	if n := evil.secrets.Load(); n != 0 {
		t.Fatalf("the declared client secret reached an authorization server the operator never used %d times", n)
	}

	// `sluice auth` is the operator accepting the new server.
	if err := az.Login(ctx, LoginOptions{}); err != nil {
		t.Fatalf("explicit login at the new server: %v", err)
	}
	if evil.secrets.Load() != 1 {
		t.Fatalf("explicit login reached the new server %d times, want 1", evil.secrets.Load())
	}
	if h, err := az.Authorization(ctx); err != nil || !strings.HasPrefix(h, "Bearer tok-") {
		t.Fatalf("Authorization after accepting the new server: %q, %v", h, err)
	}
}

// TestAcceptedAuthorizationServerReachesRunningGateway: the refusal's
// remedy is `sluice auth`, run in another process while the gateway keeps
// running. Once that login has accepted the new authorization server (the
// token file names it), the running gateway must use it too, even when
// the token that login got has expired since: it must not stay pinned to
// the old server until restarted.
func TestAcceptedAuthorizationServerReachesRunningGateway(t *testing.T) {
	legit, moved := newPinAS(t), newPinAS(t)
	var mu sync.Mutex
	current := legit.srv.URL
	resource := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		as := current
		mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"authorization_servers":["` + as + `"]}`))
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer resource.Close()

	cfg := Config{Server: "s", URL: resource.URL + "/mcp", StateDir: t.TempDir(), AllowPrivate: true,
		Grant: GrantClientCredentials, ClientID: "machine", ClientSecret: "machine-secret"}
	gw, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := gw.Login(ctx, LoginOptions{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	current = moved.srv.URL
	mu.Unlock()
	if err := gw.Challenge(ctx, http.StatusUnauthorized, []string{`Bearer`}); !errors.Is(err, ErrIssuerChanged) {
		t.Fatalf("challenge after the move: %v; want ErrIssuerChanged", err)
	}

	// `sluice auth s`: another process, same state directory.
	cli, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Login(ctx, LoginOptions{}); err != nil {
		t.Fatalf("explicit login at the new server: %v", err)
	}
	before := moved.secrets.Load()
	// The token pinAS issues is already within expirySkew: the gateway
	// cannot just adopt it and must ask the accepted server again.
	if err := gw.Challenge(ctx, http.StatusUnauthorized, []string{`Bearer`}); err != nil {
		t.Fatalf("challenge after `sluice auth` accepted the new server: %v", err)
	}
	if moved.secrets.Load() != before+1 {
		t.Fatalf("the running gateway asked the accepted server %d times, want 1", moved.secrets.Load()-before)
	}
	if h, err := gw.Authorization(ctx); err != nil || !strings.HasPrefix(h, "Bearer tok-") {
		t.Fatalf("Authorization after accepting the new server: %q, %v", h, err)
	}
}
