package oauth

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestProbeErrorKeepsTheURLQueryOut: a declared url may carry a key in
// its query; gateway/remote never repeats the query in an error, and a
// failed authorization (which reaches the model when it runs in place)
// must not either.
func TestProbeErrorKeepsTheURLQueryOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: the probe fails to connect
	az, err := New(Config{Server: "s", URL: "http://" + addr + "/mcp?api_key=query-secret-0123456789", StateDir: t.TempDir(), AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	err = az.Login(context.Background(), LoginOptions{})
	if err == nil {
		t.Fatal("login against a closed port succeeded")
	}
	if strings.Contains(err.Error(), "query-secret") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("probe error: %v; want the server named without its query", err)
	}
}

// TestResourceIndicatorLeavesTheQueryOut: the RFC 8707 resource goes to
// the authorization server (which the remote's metadata names); a key in
// the declared url's query must not go with it (RFC 8707 §2: no query).
func TestResourceIndicatorLeavesTheQueryOut(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	as := newPinAS(t)
	inner := as.srv.Config.Handler
	as.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		seen = append(seen, r.URL.String()+" "+r.Form.Encode())
		mu.Unlock()
		inner.ServeHTTP(w, r)
	})
	resource := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"authorization_servers":["` + as.srv.URL + `"]}`))
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer resource.Close()
	az, err := New(Config{Server: "s", URL: resource.URL + "/mcp?api_key=query-secret-0123456789", StateDir: t.TempDir(), AllowPrivate: true,
		Grant: GrantClientCredentials, ClientID: "machine", ClientSecret: "machine-secret"})
	if err != nil {
		t.Fatal(err)
	}
	if err := az.Login(context.Background(), LoginOptions{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	sent := false
	for _, s := range seen {
		if strings.Contains(s, "query-secret") {
			t.Fatalf("the authorization server was sent the url's query: %s", s)
		}
		if strings.Contains(s, "resource=") {
			sent = true
		}
	}
	if !sent {
		t.Fatalf("no token request carried a resource: %q", seen)
	}
}
