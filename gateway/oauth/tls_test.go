package oauth

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// tlsBrowser approves like browser, trusting the test server's certificate.
func (a *authServer) tlsBrowser() func(string) error {
	hc := a.srv.Client()
	return func(u string) error {
		resp, err := hc.Get(u)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return fmt.Errorf("authorize: %d %s", resp.StatusCode, b)
		}
		return nil
	}
}

// TestOverHTTPS: the whole flow over https with a certificate the client
// is told to trust — discovery, registration, the authorization code
// grant, the call, a refresh after revocation, the client-credentials
// grant — and a refusal of the same server when its certificate is not
// trusted, before any token is stored.
func TestOverHTTPS(t *testing.T) {
	a := startAuthServer(t, true)
	if !strings.HasPrefix(a.url("/mcp"), "https://127.0.0.1:") {
		t.Fatalf("not an https loopback server: %s", a.url("/mcp"))
	}
	az := newAuthorizer(t, a, nil)
	if err := az.Login(context.Background(), LoginOptions{Open: a.tlsBrowser(), Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if m := call(t, a, az); !strings.Contains(m, `"ok":"tools/call"`) {
		t.Fatalf("call over https: %s", m)
	}
	a.mu.Lock()
	a.access = map[string][]string{}
	a.mu.Unlock()
	if m := call(t, a, az); !strings.Contains(m, `"ok":"tools/call"`) {
		t.Fatalf("after revocation: %s", m)
	}
	a.mu.Lock()
	refreshes, registered := a.refreshes, a.registered
	a.mu.Unlock()
	if refreshes != 1 || registered != 1 {
		t.Fatalf("refreshes %d, registrations %d; want 1 and 1", refreshes, registered)
	}
	if st, _ := az.Status(); !strings.HasPrefix(st.Issuer, "https://") {
		t.Fatalf("issuer %q", st.Issuer)
	}

	cc := newAuthorizer(t, a, func(c *Config) { c.Grant, c.ClientID, c.ClientSecret = GrantClientCredentials, "pre", "pre-secret" })
	if m := call(t, a, cc); !strings.Contains(m, `"ok":"tools/call"`) {
		t.Fatalf("client credentials over https: %s", m)
	}

	untrusted := newAuthorizer(t, a, func(c *Config) { c.TLSConfig = nil })
	err := untrusted.Login(context.Background(), LoginOptions{Open: a.tlsBrowser(), Timeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("untrusted certificate: err = %v", err)
	}
	if st, _ := untrusted.Status(); st.Authorized {
		t.Fatal("a token was stored although the server's certificate is not trusted")
	}
}
