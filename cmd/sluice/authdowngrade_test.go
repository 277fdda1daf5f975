package main

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestAuthRefusesPlainHTTPBehindHTTPS: 'sluice auth' of an https server
// whose metadata names a plain-http authorization server fails at once,
// saying so, prints no authorization link and sends the plain-http side
// nothing.
func TestAuthRefusesPlainHTTPBehindHTTPS(t *testing.T) {
	w := newWorld(t)
	var plainHits atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		plainHits.Add(1)
		http.NotFound(rw, r)
	}))
	defer plain.Close()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") {
			rw.Header().Set("Content-Type", "application/json")
			json.NewEncoder(rw).Encode(map[string]any{"authorization_servers": []string{plain.URL}})
			return
		}
		rw.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+"https://"+r.Host+`/.well-known/oauth-protected-resource"`)
		rw.WriteHeader(401)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(w.root, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", ca)
	t.Setenv("SSL_CERT_DIR", filepath.Join(w.root, "no-certs"))
	w.writeUser("servers:\n" + remoteDecl("prot", srv.URL+"/mcp", "allowPrivate: true", "actionClass: read", "transport: streamable-http", "oauth:\n      clientId: pre"))
	r := sluiceProc(t, "", "auth", "prot", "--no-browser", "--timeout", "20s")
	want(t, r, exitFailure, "plain http behind the https server", "must use https")
	if strings.Contains(r.stdout+r.stderr, "/authorize") || plainHits.Load() != 0 {
		t.Fatalf("an authorization link was offered or the plain-http server was asked (%d requests):\n%s", plainHits.Load(), r)
	}
}
