package oauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRefusesPlainHTTPResourceMetadataBehindHTTPS: the protected resource
// metadata names the authorization server the client's codes, tokens and
// secrets go to. An https server's 401 whose resource_metadata is plain
// http would let anyone on the path substitute that document (and name
// an authorization server of their own), so discovery refuses it before
// any request reaches the plain-http side.
func TestRefusesPlainHTTPResourceMetadataBehindHTTPS(t *testing.T) {
	var plainHits atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainHits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"authorization_servers":["https://127.0.0.1:1"]}`))
	}))
	defer plain.Close()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+plain.URL+`/.well-known/oauth-protected-resource"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	for _, grant := range []string{GrantAuthorizationCode, GrantClientCredentials} {
		az, err := New(Config{Server: "s", ClientID: "pre", ClientSecret: "pre-secret", Grant: grant, URL: srv.URL + "/mcp",
			StateDir: t.TempDir(), AllowPrivate: true, TLSConfig: &tls.Config{RootCAs: pool}})
		if err != nil {
			t.Fatal(err)
		}
		opened := false
		err = az.Login(context.Background(), LoginOptions{Open: func(string) error { opened = true; return nil }, Timeout: 10 * time.Second})
		if err == nil || !errors.Is(err, ErrDiscovery) || !strings.Contains(err.Error(), "https") {
			t.Fatalf("%s: login through plain-http resource metadata behind https: err = %v", grant, err)
		}
		if opened || plainHits.Load() != 0 {
			t.Fatalf("%s: browser opened %v, plain-http requests %d; want neither", grant, opened, plainHits.Load())
		}
	}
}
