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

// TestRefusesPlainHTTPBehindHTTPS: an https server whose metadata sends
// the client to an authorization server, or endpoints, over plain http
// would have codes, refresh tokens and client secrets cross the network
// in clear text. Discovery refuses it before any request reaches the
// plain-http side, and no browser opens.
func TestRefusesPlainHTTPBehindHTTPS(t *testing.T) {
	var plainHits atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainHits.Add(1)
		http.NotFound(w, r)
	}))
	defer plain.Close()
	cases := map[string]func(base string) (prm, as string){
		"authorization server": func(string) (string, string) {
			return `{"authorization_servers":["` + plain.URL + `"]}`, ""
		},
		"token endpoint": func(base string) (string, string) {
			return `{"authorization_servers":["` + base + `"]}`,
				`{"issuer":"` + base + `","authorization_endpoint":"` + base + `/authorize","token_endpoint":"` + plain.URL + `/token","code_challenge_methods_supported":["S256"]}`
		},
		"authorization endpoint": func(base string) (string, string) {
			return `{"authorization_servers":["` + base + `"]}`,
				`{"issuer":"` + base + `","authorization_endpoint":"` + plain.URL + `/authorize","token_endpoint":"` + base + `/token","code_challenge_methods_supported":["S256"]}`
		},
	}
	for name, docs := range cases {
		t.Run(name, func(t *testing.T) {
			var prm, as string
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource"):
					w.Header().Set("Content-Type", "application/json")
					w.Write([]byte(prm))
				case strings.HasPrefix(r.URL.Path, "/.well-known/") && as != "":
					w.Header().Set("Content-Type", "application/json")
					w.Write([]byte(as))
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			prm, as = docs(srv.URL)
			pool := x509.NewCertPool()
			pool.AddCert(srv.Certificate())
			az, err := New(Config{Server: "s", ClientID: "pre", URL: srv.URL + "/mcp", StateDir: t.TempDir(), AllowPrivate: true, TLSConfig: &tls.Config{RootCAs: pool}})
			if err != nil {
				t.Fatal(err)
			}
			opened := false
			err = az.Login(context.Background(), LoginOptions{Open: func(string) error { opened = true; return nil }, Timeout: 10 * time.Second})
			if err == nil || !errors.Is(err, ErrDiscovery) || !strings.Contains(err.Error(), "https") {
				t.Fatalf("login through plain http behind https: err = %v", err)
			}
			if opened || plainHits.Load() != 0 {
				t.Fatalf("browser opened %v, plain-http requests %d; want neither", opened, plainHits.Load())
			}
		})
	}
}
