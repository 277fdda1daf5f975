package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"sluice/gateway/remote"
)

// authServer is an OAuth-protected MCP server and its authorization server
// on one loopback listener. It checks what a real one would: PKCE S256,
// the resource indicator, the redirect, client authentication, rotating
// refresh tokens (an old refresh token is refused once used).
type authServer struct {
	t   *testing.T
	srv *httptest.Server

	mu           sync.Mutex
	issuer       string // override the metadata's issuer
	prmResource  string // override the PRM resource
	noS256       bool
	sendIss      string // "" = the issuer; "-" = omit
	expiresIn    int
	clients      map[string]string // client_id -> secret ("" public)
	codes        map[string]codeGrant
	access       map[string][]string // token -> scopes
	refresh      map[string]bool     // live refresh tokens
	needScope    string              // tools/call needs this scope
	jwtKey       *ecdsa.PublicKey
	refreshes    int
	registered   int
	lastResource string

	// Two authorization servers, /as and /as2, share this listener; the
	// protected resource metadata names current ("" = /as) and the
	// resource accepts only tokens that one issued. Clients and tokens
	// are bound to the server that issued them.
	current        string
	issuedBy       map[string]string // client id or token -> "/as" or "/as2"
	grantOnly      []string          // when set, the scopes the AS grants at most
	padAccess      int               // bytes added to each access token issued
	authorizations []string          // the scope parameter of each authorization request
}

type codeGrant struct {
	client, challenge, redirect, resource string
	scopes                                []string
}

func newAuthServer(t *testing.T) *authServer { return startAuthServer(t, false) }

// startAuthServer starts the servers over plain HTTP or, with useTLS, over
// https with httptest's certificate (trusted through tlsConfig).
func startAuthServer(t *testing.T, useTLS bool) *authServer {
	a := &authServer{t: t, expiresIn: 3600, clients: map[string]string{"pre": "pre-secret"},
		codes: map[string]codeGrant{}, access: map[string][]string{}, refresh: map[string]bool{}, issuedBy: map[string]string{}}
	if useTLS {
		a.srv = httptest.NewUnstartedServer(http.HandlerFunc(a.serve))
		a.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are tested
		a.srv.StartTLS()
	} else {
		a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	}
	t.Cleanup(a.srv.Close)
	return a
}

// tlsConfig trusts the test server's certificate (nil over plain HTTP).
func (a *authServer) tlsConfig() *tls.Config {
	if a.srv.TLS == nil {
		return nil
	}
	roots := x509.NewCertPool()
	roots.AddCert(a.srv.Certificate())
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
}

func (a *authServer) url(p string) string { return a.srv.URL + p }

func (a *authServer) writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func rnd() string {
	b := make([]byte, 12)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// currentAS is the authorization server the resource trusts now.
func (a *authServer) currentAS() string {
	if a.current == "" {
		return "/as"
	}
	return a.current
}

// issuedHere reports whether a client id or token belongs to the
// authorization server as (the pre-registered clients belong to both).
func (a *authServer) issuedHere(as, id string) bool {
	by, ok := a.issuedBy[id]
	return !ok || by == as
}

func (a *authServer) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	path, as := r.URL.Path, "/as"
	for _, p := range []string{"/as2", "/as"} {
		if rest, ok := strings.CutPrefix(path, p+"/"); ok {
			path, as = "/as/"+rest, p
			break
		}
		if rest, ok := strings.CutPrefix(path, "/.well-known/oauth-authorization-server"+p); ok && rest == "" {
			path, as = "/.well-known/oauth-authorization-server/as", p
			break
		}
	}
	switch path {
	case "/.well-known/oauth-protected-resource/mcp":
		res := a.url("/mcp")
		if a.prmResource != "" {
			res = a.prmResource
		}
		a.writeJSON(w, 200, map[string]any{"resource": res, "authorization_servers": []string{a.url(a.currentAS())}, "scopes_supported": []string{"read"}})
	case "/.well-known/oauth-authorization-server/as":
		iss := a.url(as)
		if a.issuer != "" {
			iss = a.issuer
		}
		methods := []string{"S256"}
		if a.noS256 {
			methods = []string{"plain"}
		}
		a.writeJSON(w, 200, map[string]any{"issuer": iss, "authorization_endpoint": a.url(as + "/authorize"), "token_endpoint": a.url(as + "/token"),
			"registration_endpoint": a.url(as + "/register"), "code_challenge_methods_supported": methods,
			"token_endpoint_auth_methods_supported":          []string{"client_secret_basic", "private_key_jwt", "none"},
			"authorization_response_iss_parameter_supported": a.sendIss != "-"})
	case "/as/register":
		var m map[string]any
		json.NewDecoder(r.Body).Decode(&m)
		if m["application_type"] != "native" || m["token_endpoint_auth_method"] != "none" {
			a.writeJSON(w, 400, map[string]string{"error": "invalid_client_metadata"})
			return
		}
		id := "dyn-" + rnd()
		a.clients[id] = ""
		a.issuedBy[id] = as
		a.registered++
		a.writeJSON(w, 201, map[string]any{"client_id": id, "token_endpoint_auth_method": "none"})
	case "/as/authorize":
		q := r.URL.Query()
		a.authorizations = append(a.authorizations, q.Get("scope"))
		if _, ok := a.clients[q.Get("client_id")]; !ok || !a.issuedHere(as, q.Get("client_id")) || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("resource") != a.url("/mcp") {
			http.Error(w, "bad authorization request: "+r.URL.RawQuery, 400)
			return
		}
		code := rnd()
		a.codes[code] = codeGrant{client: q.Get("client_id"), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"),
			resource: q.Get("resource"), scopes: strings.Fields(q.Get("scope"))}
		back, _ := url.Parse(q.Get("redirect_uri"))
		v := url.Values{"code": {code}, "state": {q.Get("state")}}
		switch a.sendIss {
		case "":
			v.Set("iss", a.url(as))
		case "-":
		default:
			v.Set("iss", a.sendIss)
		}
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	case "/as/token":
		a.token(w, r, as)
	case "/mcp":
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		scopes, ok := a.access[tok]
		if !ok || !a.issuedHere(a.currentAS(), tok) {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", resource_metadata="`+a.url("/.well-known/oauth-protected-resource/mcp")+`", scope="read"`)
			w.WriteHeader(401)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(body, &m)
		if m.Method == "tools/call" && a.needScope != "" && !contains(scopes, a.needScope) {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="read `+a.needScope+`"`)
			w.WriteHeader(403)
			return
		}
		if m.ID == nil {
			w.WriteHeader(202)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"ok":%q}}`, m.ID, m.Method)
	default:
		http.NotFound(w, r)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// clientAuth checks the client's authentication and returns its id.
func (a *authServer) clientAuth(r *http.Request) (string, bool) {
	if id, secret, ok := r.BasicAuth(); ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		want, known := a.clients[id]
		return id, known && want != "" && want == secret
	}
	id := r.PostForm.Get("client_id")
	if r.PostForm.Get("client_assertion_type") != "" {
		return id, a.checkJWT(id, r.PostForm.Get("client_assertion"))
	}
	want, known := a.clients[id]
	return id, known && want == r.PostForm.Get("client_secret")
}

func (a *authServer) checkJWT(id, jwt string) bool {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 || a.jwtKey == nil {
		return false
	}
	var claims struct {
		Iss, Sub, Aud string
		Exp           int64
	}
	cb, _ := base64.RawURLEncoding.DecodeString(parts[1])
	json.Unmarshal(cb, &claims)
	if claims.Iss != id || claims.Sub != id || claims.Aud != a.url("/as") || claims.Exp < time.Now().Unix() {
		return false
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	if len(sig) != 64 {
		return false
	}
	h := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	return ecdsa.Verify(a.jwtKey, h[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
}

func (a *authServer) token(w http.ResponseWriter, r *http.Request, as string) {
	r.ParseForm()
	f := r.PostForm
	a.lastResource = f.Get("resource")
	id, ok := a.clientAuth(r)
	if !ok || !a.issuedHere(as, id) {
		a.writeJSON(w, 401, map[string]string{"error": "invalid_client"})
		return
	}
	if f.Get("resource") != a.url("/mcp") {
		a.writeJSON(w, 400, map[string]string{"error": "invalid_target"})
		return
	}
	var scopes []string
	switch f.Get("grant_type") {
	case "authorization_code":
		g, ok := a.codes[f.Get("code")]
		delete(a.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if !ok || g.client != id || g.redirect != f.Get("redirect_uri") || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			a.writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
			return
		}
		scopes = g.scopes
	case "refresh_token":
		if !a.refresh[f.Get("refresh_token")] || !a.issuedHere(as, f.Get("refresh_token")) {
			a.writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "refresh token already used"})
			return
		}
		delete(a.refresh, f.Get("refresh_token")) // rotation
		a.refreshes++
		scopes = []string{"read"}
	case "client_credentials":
		scopes = strings.Fields(f.Get("scope"))
	default:
		a.writeJSON(w, 400, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	if a.grantOnly != nil {
		var granted []string
		for _, s := range scopes {
			if contains(a.grantOnly, s) {
				granted = append(granted, s)
			}
		}
		scopes = granted
	}
	at, rt := "at-"+rnd()+strings.Repeat("x", a.padAccess), "rt-"+rnd()
	a.access[at] = scopes
	a.refresh[rt] = true
	a.issuedBy[at], a.issuedBy[rt] = as, as
	a.writeJSON(w, 200, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": a.expiresIn, "refresh_token": rt})
}

// browser follows the authorization URL like a user who approves: the
// server redirects to the loopback callback.
func browser(t *testing.T) func(string) error {
	return func(u string) error {
		resp, err := http.Get(u)
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

func newAuthorizer(t *testing.T, a *authServer, mod func(*Config)) *Authorizer {
	t.Helper()
	cfg := Config{Server: "s", URL: a.url("/mcp"), StateDir: t.TempDir(), AllowPrivate: true, TLSConfig: a.tlsConfig()}
	if mod != nil {
		mod(&cfg)
	}
	az, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return az
}

// call runs one tools/call through gateway/remote with the authorizer.
func call(t *testing.T, a *authServer, az *Authorizer) string {
	t.Helper()
	c, err := remote.Dial(context.Background(), &remote.Options{Server: "s", URL: a.url("/mcp"), Transport: remote.TransportStreamable, AllowPrivate: true, Authorizer: az, TLSConfig: a.tlsConfig()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Send([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)); err != nil {
		t.Fatal(err)
	}
	m, err := c.Receive()
	if err != nil {
		t.Fatal(err)
	}
	return string(m)
}

func TestLoginDynamicRegistrationAndRefresh(t *testing.T) {
	a := newAuthServer(t)
	az := newAuthorizer(t, a, nil)
	if m := call(t, a, az); !strings.Contains(m, "sluice auth s") {
		t.Fatalf("before login: %s", m)
	}
	if err := az.Login(context.Background(), LoginOptions{Open: browser(t)}); err != nil {
		t.Fatal(err)
	}
	if a.registered != 1 {
		t.Fatalf("registered %d clients", a.registered)
	}
	if m := call(t, a, az); !strings.Contains(m, `"ok":"tools/call"`) {
		t.Fatalf("after login: %s", m)
	}
	st, _ := az.Status()
	if !st.Authorized || !st.Refreshable {
		t.Fatalf("status %+v", st)
	}
	fi, err := os.Stat(az.st.file())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode: %v %v", fi, err)
	}

	// The server revokes the access token: the 401 refreshes (rotating the
	// refresh token) and the call is retried once.
	a.mu.Lock()
	a.access = map[string][]string{}
	a.mu.Unlock()
	if m := call(t, a, az); !strings.Contains(m, `"ok":"tools/call"`) {
		t.Fatalf("after revocation: %s", m)
	}
	// A second authorizer (another process) reads the rotated token from
	// the file; an expired token is refreshed before use.
	a.mu.Lock()
	a.access = map[string][]string{}
	a.mu.Unlock()
	az2, _ := New(az.cfg)
	az2.mu.Lock()
	r, _ := az2.loadLocked()
	r.Expiry = time.Now().Add(-time.Minute)
	az2.mu.Unlock()
	if m := call(t, a, az2); !strings.Contains(m, `"ok":"tools/call"`) {
		t.Fatalf("second process: %s", m)
	}
	if a.refreshes != 2 || a.lastResource != a.url("/mcp") {
		t.Fatalf("refreshes %d (want 2), last resource %q", a.refreshes, a.lastResource)
	}

	// Step-up: the tool needs another scope.
	a.mu.Lock()
	a.needScope = "write"
	a.mu.Unlock()
	if m := call(t, a, az2); !strings.Contains(m, `scope \"read write\"`) || !strings.Contains(m, "sluice auth s") {
		t.Fatalf("step-up: %s", m)
	}
	if err := az2.Login(context.Background(), LoginOptions{Open: browser(t)}); err != nil {
		t.Fatal(err)
	}
	if m := call(t, a, az2); !strings.Contains(m, `"ok":"tools/call"`) {
		t.Fatalf("after step-up: %s", m)
	}

	if ok, err := az2.Logout(); !ok || err != nil {
		t.Fatalf("logout %v %v", ok, err)
	}
	if st, _ := az2.Status(); st.Authorized {
		t.Fatal("still authorized after logout")
	}
}

func TestLoginPreRegisteredKeepsSecretOutOfFile(t *testing.T) {
	a := newAuthServer(t)
	az := newAuthorizer(t, a, func(c *Config) { c.ClientID, c.ClientSecret = "pre", "pre-secret" })
	if err := az.Login(context.Background(), LoginOptions{Open: browser(t)}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(az.st.file())
	if strings.Contains(string(b), "pre-secret") {
		t.Fatal("the declared secret was written to the token file")
	}
	if a.registered != 0 {
		t.Fatal("registered although a client id was declared")
	}
	if m := call(t, a, az); !strings.Contains(m, `"ok"`) {
		t.Fatalf("call: %s", m)
	}
}

func TestClientCredentials(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"basic", func(c *Config) { c.ClientID, c.ClientSecret = "pre", "pre-secret" }},
		{"jwt", func(c *Config) { c.ClientID, c.PrivateKey, c.TokenAuthMethod = "svc", pemKey, "private_key_jwt" }},
	} {
		a := newAuthServer(t)
		a.jwtKey = &key.PublicKey
		a.clients["svc"] = ""
		az := newAuthorizer(t, a, func(c *Config) { c.Grant = GrantClientCredentials; tc.mod(c) })
		if m := call(t, a, az); !strings.Contains(m, `"ok":"tools/call"`) {
			t.Fatalf("%s: %s", tc.name, m)
		}
	}
}

func TestLoginRefusals(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*authServer)
		want error
		text string
	}{
		{"issuer mismatch", func(a *authServer) { a.issuer = "https://evil.example/as" }, ErrDiscovery, "names issuer"},
		{"resource mismatch", func(a *authServer) { a.prmResource = "https://other.example/mcp" }, ErrDiscovery, "not this server"},
		{"no S256", func(a *authServer) { a.noS256 = true }, ErrDiscovery, "S256"},
		{"wrong iss", func(a *authServer) { a.sendIss = "https://evil.example/as" }, ErrCallback, "RFC 9207"},
	}
	for _, tc := range cases {
		a := newAuthServer(t)
		tc.mod(a)
		az := newAuthorizer(t, a, nil)
		err := az.Login(context.Background(), LoginOptions{Open: browser(t), Timeout: 10 * time.Second})
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: err = %v", tc.name, err)
		}
		if st, _ := az.Status(); st.Authorized {
			t.Errorf("%s: a token was stored", tc.name)
		}
	}
}

func TestParseChallenges(t *testing.T) {
	cases := []struct {
		in   []string
		want challenge
		ok   bool
	}{
		{[]string{`Bearer resource_metadata="https://a/x", scope="a b"`}, challenge{ResourceMetadata: "https://a/x", Scope: "a b"}, true},
		{[]string{`Basic realm="x", Bearer error="insufficient_scope", scope=write`}, challenge{Scope: "write", Error: "insufficient_scope"}, true},
		{[]string{`Basic realm="x"`}, challenge{}, false},
		{[]string{`Bearer`}, challenge{}, true},
		{[]string{`bearer scope="a \b"`}, challenge{Scope: `a b`}, true},
		{[]string{`bearer scope="a \"q\""`}, challenge{}, true}, // a quote is no scope token: nothing is taken
		{[]string{`Bearer scope="a  b	c"`}, challenge{Scope: `a b c`}, true},
	}
	for _, tc := range cases {
		got, ok := parseChallenges(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%q: got %+v %v, want %+v %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseChallenges(f *testing.F) {
	f.Add(`Bearer resource_metadata="https://a/x", scope="a b", error=invalid_token`)
	f.Add(`Basic realm="a", Bearer scope="x\"`)
	f.Fuzz(func(t *testing.T, s string) {
		parseChallenges([]string{s})
	})
}
