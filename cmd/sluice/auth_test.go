package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// protectedServer is an OAuth-protected MCP server (streamable HTTP, JSON
// answers, legacy era) with its authorization server, on loopback. It
// requires PKCE S256 and the resource indicator, registers clients
// dynamically, and rotates refresh tokens.
type protectedServer struct {
	srv *httptest.Server

	mu        sync.Mutex
	codes     map[string][3]string // code -> {challenge, redirect, scope}
	access    map[string]string    // access token -> its scope
	refresh   map[string]bool
	refreshes int
	scopes    []string // the scope of each authorization request
}

func newProtectedServer(t *testing.T) *protectedServer {
	p := &protectedServer{codes: map[string][3]string{}, access: map[string]string{}, refresh: map[string]bool{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

// newProtectedTLSServer is newProtectedServer over https, with httptest's
// certificate.
func newProtectedTLSServer(t *testing.T) *protectedServer {
	p := &protectedServer{codes: map[string][3]string{}, access: map[string]string{}, refresh: map[string]bool{}}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(p.serve))
	p.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are tested
	p.srv.StartTLS()
	t.Cleanup(p.srv.Close)
	return p
}

func token() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (p *protectedServer) json(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (p *protectedServer) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	base := p.srv.URL
	switch r.URL.Path {
	case "/.well-known/oauth-protected-resource/mcp":
		p.json(w, 200, map[string]any{"resource": base + "/mcp", "authorization_servers": []string{base}})
	case "/.well-known/oauth-authorization-server":
		p.json(w, 200, map[string]any{"issuer": base, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
			"registration_endpoint": base + "/register", "code_challenge_methods_supported": []string{"S256"}})
	case "/register":
		p.json(w, 201, map[string]any{"client_id": "c-" + token(), "token_endpoint_auth_method": "none"})
	case "/authorize":
		q := r.URL.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("resource") != base+"/mcp" {
			http.Error(w, "bad request", 400)
			return
		}
		code := token()
		p.codes[code] = [3]string{q.Get("code_challenge"), q.Get("redirect_uri"), q.Get("scope")}
		p.scopes = append(p.scopes, q.Get("scope"))
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	case "/token":
		r.ParseForm()
		f := r.PostForm
		if f.Get("resource") != base+"/mcp" {
			p.json(w, 400, map[string]string{"error": "invalid_target"})
			return
		}
		scope := ""
		switch f.Get("grant_type") {
		case "authorization_code":
			c, ok := p.codes[f.Get("code")]
			scope = c[2]
			delete(p.codes, f.Get("code"))
			sum := sha256.Sum256([]byte(f.Get("code_verifier")))
			if !ok || c[0] != base64.RawURLEncoding.EncodeToString(sum[:]) || c[1] != f.Get("redirect_uri") {
				p.json(w, 400, map[string]string{"error": "invalid_grant"})
				return
			}
		case "refresh_token":
			if !p.refresh[f.Get("refresh_token")] {
				p.json(w, 400, map[string]string{"error": "invalid_grant"})
				return
			}
			delete(p.refresh, f.Get("refresh_token"))
			p.refreshes++
		default:
			p.json(w, 400, map[string]string{"error": "unsupported_grant_type"})
			return
		}
		at, rt := "at-"+token(), "rt-"+token()
		p.access[at], p.refresh[rt] = scope, true
		p.json(w, 200, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": 3600, "refresh_token": rt})
	case "/mcp":
		scope, ok := p.access[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(401)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct{ Name string }
		}
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &m)
		if m.Method == "tools/call" && m.Params.Name == "admin" && !slices.Contains(strings.Fields(scope), "admin") {
			// Step-up: this tool needs the admin scope.
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="admin", resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(403)
			return
		}
		if m.ID == nil {
			w.WriteHeader(202)
			return
		}
		var res any
		switch m.Method {
		case "initialize":
			res = map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "protected", "version": "1"}}
		case "tools/list":
			res = map[string]any{"tools": []any{map[string]any{"name": "whoami", "description": "says hello", "inputSchema": map[string]any{"type": "object"}},
				map[string]any{"name": "admin", "description": "needs the admin scope", "inputSchema": map[string]any{"type": "object"}}}}
		case "tools/call":
			res = map[string]any{"content": []any{map[string]any{"type": "text", "text": "hello, authorized caller"}}}
		default:
			p.json(w, 200, map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
			return
		}
		p.json(w, 200, map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": res})
	default:
		http.NotFound(w, r)
	}
}

// TestAuthFlowThroughTheBinary: a call to an OAuth-protected server says
// to run sluice auth; sluice auth --no-browser prints the URL, a browser
// (here: an HTTP client following redirects) approves, the tokens are
// stored 0600; calls then work, a revoked access token is refreshed with
// rotation, and --logout forgets everything.
func TestAuthFlowThroughTheBinary(t *testing.T) {
	w := newWorld(t)
	p := newProtectedServer(t)
	w.writeUser("servers:\n" + remoteDecl("prot", p.srv.URL+"/mcp", "allowPrivate: true", "actionClass: read", "transport: streamable-http"))

	want(t, sluice(t, "", "call", "prot__whoami"), exitFailure, "sluice auth prot")
	want(t, sluice(t, "", "servers"), exitOK, "prot: oauth: none")

	authURL, done, out, errb := startAuth(t, "prot")
	resp, err := http.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "authorized") {
		t.Fatalf("callback page: %s", body)
	}
	if code := <-done; code != exitOK || !strings.Contains(out.String(), "Authorized: prot") {
		t.Fatalf("sluice auth: exit %d\n%s\n%s", code, out.String(), errb.String())
	}

	files, _ := filepath.Glob(filepath.Join(w.state, "sluice", "oauth", "prot-*.json"))
	if len(files) != 1 {
		t.Fatalf("token files: %v", files)
	}
	fi, _ := os.Stat(files[0])
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v", fi.Mode())
	}
	stored, _ := os.ReadFile(files[0])

	r := sluice(t, "", "call", "prot__whoami")
	want(t, r, exitOK, "hello, authorized caller")
	want(t, sluice(t, "", "servers"), exitOK, "prot: oauth: authorized until")

	// The server forgets every access token: the next call refreshes.
	p.mu.Lock()
	p.access = map[string]string{}
	p.mu.Unlock()
	r2 := sluice(t, "", "call", "prot__whoami")
	want(t, r2, exitOK, "hello, authorized caller")
	p.mu.Lock()
	refreshes := p.refreshes
	p.mu.Unlock()
	if refreshes != 1 {
		t.Fatalf("refreshes = %d, want 1", refreshes)
	}
	rotated, _ := os.ReadFile(files[0])
	var a, b struct{ RefreshToken string }
	json.Unmarshal(stored, &a)
	json.Unmarshal(rotated, &b)
	if a.RefreshToken == "" || a.RefreshToken == b.RefreshToken {
		t.Fatal("the rotated refresh token was not stored")
	}
	for _, res := range []result{r, r2} {
		if strings.Contains(res.stdout+res.stderr, "at-") || strings.Contains(res.stdout+res.stderr, b.RefreshToken) {
			t.Fatalf("a token reached the output:\n%s", res)
		}
	}

	want(t, sluice(t, "", "auth", "prot", "--logout"), exitOK, "Forgot the tokens of prot")
	if _, err := os.Stat(files[0]); !os.IsNotExist(err) {
		t.Fatal("the token file survived --logout")
	}
	want(t, sluice(t, "", "auth", "prot", "--logout"), exitOK, "No tokens were stored")
	want(t, sluice(t, "", "auth", "nosuch"), exitUsage, "no server \"nosuch\"")
}

// TestStepUpThroughTheBinary: a tool that needs a larger scope (403
// insufficient_scope) fails with the advice to run sluice auth when no one
// is at a terminal; at a terminal sluice authorizes again in place,
// through the browser, asking for the old and the new scope, and the
// call goes on.
func TestStepUpThroughTheBinary(t *testing.T) {
	w := newWorld(t)
	p := newProtectedServer(t)
	w.writeUser("servers:\n" + remoteDecl("prot", p.srv.URL+"/mcp", "allowPrivate: true", "actionClass: read", "transport: streamable-http"))
	var opened []string
	old := openBrowser
	openBrowser = func(u string) error { // a user who approves: follow to the callback
		opened = append(opened, u)
		resp, err := http.Get(u)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	t.Cleanup(func() { openBrowser = old })

	want(t, sluice(t, "", "auth", "prot"), exitOK, "Authorized: prot")
	want(t, sluice(t, "", "call", "prot__whoami"), exitOK, "hello, authorized caller")
	r := sluice(t, "", "call", "prot__admin")
	want(t, r, exitFailure, "sluice auth prot", `scope "admin"`)
	if len(opened) != 1 {
		t.Fatalf("the browser opened %d times without a terminal, want only for sluice auth", len(opened))
	}

	fakeTerminal(t)
	r = sluice(t, "", "call", "prot__admin")
	want(t, r, exitOK, "hello, authorized caller", "asks sluice to authorize again")
	p.mu.Lock()
	scopes := append([]string(nil), p.scopes...)
	p.mu.Unlock()
	if len(opened) != 2 || len(scopes) != 2 || !slices.Contains(strings.Fields(scopes[1]), "admin") {
		t.Fatalf("browser opened %d times, authorization scopes %q; want a second authorization asking for admin", len(opened), scopes)
	}
	want(t, sluice(t, "", "call", "prot__admin"), exitOK, "hello, authorized caller")
	if len(opened) != 2 {
		t.Fatal("the larger scope was asked for again although the token has it")
	}
	if strings.Contains(r.stdout+r.stderr, "at-") {
		t.Fatalf("a token reached the output:\n%s", r)
	}
}

// TestAuthOverHTTPSThroughTheBinary: the built binary against an
// OAuth-protected server on https (loopback, httptest's certificate,
// trusted through SSL_CERT_FILE as a user would add a private CA):
// sluice auth --no-browser, the browser's approval, a call, a refresh
// after the server forgets its tokens. Without the trust the call fails
// naming the certificate.
func TestAuthOverHTTPSThroughTheBinary(t *testing.T) {
	w := newWorld(t)
	p := newProtectedTLSServer(t)
	if !strings.HasPrefix(p.srv.URL, "https://127.0.0.1:") {
		t.Fatalf("not an https loopback server: %s", p.srv.URL)
	}
	w.writeUser("servers:\n" + remoteDecl("prot", p.srv.URL+"/mcp", "allowPrivate: true", "actionClass: read", "transport: streamable-http"))

	want(t, sluiceProc(t, "", "call", "prot__whoami"), exitFailure, "certificate")

	ca := filepath.Join(w.root, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", ca)
	t.Setenv("SSL_CERT_DIR", filepath.Join(w.root, "no-certs"))
	want(t, sluiceProc(t, "", "call", "prot__whoami"), exitFailure, "sluice auth prot")

	cmd := exec.Command(sluiceBin, "auth", "prot", "--no-browser", "--timeout", "2m")
	var out syncBuffer
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	urls := make(chan string, 1)
	var errText syncBuffer
	go func() {
		re := regexp.MustCompile(`(https://127\.0\.0\.1:\d+/authorize\?\S+)`)
		b := make([]byte, 4096)
		sent := false
		for {
			n, err := stderr.Read(b)
			errText.Write(b[:n])
			if m := re.FindStringSubmatch(errText.String()); m != nil && !sent {
				urls <- m[1]
				sent = true
			}
			if err != nil {
				if !sent {
					close(urls)
				}
				return
			}
		}
	}()
	authURL, ok := <-urls
	if !ok {
		t.Fatalf("sluice auth printed no https authorization URL:\n%s", errText.String())
	}
	resp, err := p.srv.Client().Get(authURL) // the browser trusts the certificate too
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "authorized") {
		t.Fatalf("callback page: %s", body)
	}
	if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), "Authorized: prot") {
		t.Fatalf("sluice auth: %v\n%s\n%s", err, out.String(), errText.String())
	}

	want(t, sluiceProc(t, "", "call", "prot__whoami"), exitOK, "hello, authorized caller")
	p.mu.Lock()
	p.access = map[string]string{}
	p.mu.Unlock()
	r := sluiceProc(t, "", "call", "prot__whoami")
	want(t, r, exitOK, "hello, authorized caller")
	p.mu.Lock()
	refreshes := p.refreshes
	p.mu.Unlock()
	if refreshes != 1 {
		t.Fatalf("refreshes = %d, want 1", refreshes)
	}
	if strings.Contains(r.stdout+r.stderr, "at-") {
		t.Fatalf("a token reached the output:\n%s", r)
	}
}

// startAuth runs `sluice auth ID --no-browser` in process and returns the
// authorization url it prints, the channel its exit code arrives on, and
// its output.
func startAuth(t *testing.T, id string) (authURL string, done <-chan int, out, errb *syncBuffer) {
	t.Helper()
	out, errb = new(syncBuffer), new(syncBuffer)
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"auth", id, "--no-browser", "--timeout", "1m"}, strings.NewReader(""), out, errb)
	}()
	re := regexp.MustCompile(`(http://127\.0\.0\.1:\d+/authorize\?\S+)`)
	for deadline := time.Now().Add(30 * time.Second); authURL == ""; {
		if m := re.FindStringSubmatch(errb.String()); m != nil {
			authURL = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("sluice auth printed no URL:\n%s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return authURL, code, out, errb
}
