package oauth

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"

	"sluice/gateway/remote"
)

// Grants.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// expirySkew refreshes a token this long before it expires.
const expirySkew = 30 * time.Second

// Config describes one remote server's OAuth client. Secret values are
// already resolved from their references; they are never logged.
type Config struct {
	Server            string      // server id
	URL               string      // the MCP server URL (the protected resource)
	ClientID          string      // pre-registered client id; "" = CIMD or dynamic registration
	ClientSecret      string      // with ClientID
	PrivateKey        string      // PEM, for private_key_jwt
	Scopes            []string    // requested scopes; default: from the server
	Grant             string      // GrantAuthorizationCode (default) or GrantClientCredentials
	TokenAuthMethod   string      // "" = chosen from the server's metadata
	ClientMetadataURL string      // https URL of this client's metadata document (CIMD)
	RedirectPort      int         // loopback redirect port; 0 = any free port
	Issuer            string      // the declared authorization server (its exact issuer); "" = the one discovered
	StateDir          string      // tokens live in StateDir/oauth
	AllowPrivate      bool        // the SSRF guard's opt-out, as for the server itself
	TLSConfig         *tls.Config // nil: the system roots (tests trust their own certificate)
	ClientName        string      // shown by the authorization server; default "sluice"
	Logger            *slog.Logger

	// Interactive, when set, lets a refused request wait for the user: a
	// challenge that needs a new authorization (step-up to a larger scope
	// on insufficient_scope, a refresh token that no longer works, a new
	// authorization server) runs Login in place with these options, its
	// Challenge taken from the refusal, instead of failing with
	// ErrLoginRequired. Logins are serialized; at most maxInteractive run
	// per interactiveWindow. nil: the request fails and the user runs
	// `sluice auth`.
	Interactive *LoginOptions
	// InteractiveFirst extends Interactive to a server never authorized
	// (no token file). Without it the first authorization is always
	// `sluice auth`.
	InteractiveFirst bool
}

// Bounds of in-place authorization: a server that keeps refusing every
// new token does not keep a browser opening.
const (
	maxInteractive    = 3
	interactiveWindow = 10 * time.Minute
)

// Authorizer supplies a server's bearer token to gateway/remote, refreshes
// it, and runs the interactive flow for `sluice auth`. It implements
// remote.Authorizer. Safe for concurrent use.
type Authorizer struct {
	cfg      Config
	resource *url.URL
	hc       *http.Client
	st       store
	log      *slog.Logger
	key      *client // parsed private key holder (method and key only)

	mu  sync.Mutex
	rec *record
	// staleRefresh, when set, is the refresh token the token file still
	// holds although the authorization server has replaced it: a refresh
	// whose record could not be saved. rec then holds the newer tokens,
	// and a file still naming staleRefresh must not replace them.
	staleRefresh string

	loginMu sync.Mutex  // serializes in-place logins
	logins  []time.Time // recent in-place logins, under loginMu
}

// New checks cfg and returns an Authorizer. It does no I/O.
func New(cfg Config) (*Authorizer, error) {
	u, err := remote.CheckURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	if cfg.StateDir == "" {
		return nil, errors.New("oauth: no state directory for tokens")
	}
	if cfg.ClientName == "" {
		cfg.ClientName = "sluice"
	}
	if cfg.Grant == "" {
		cfg.Grant = GrantAuthorizationCode
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	a := &Authorizer{
		cfg: cfg, resource: u,
		hc:  remote.NewHTTPClient(remote.ClientOptions{AllowPrivate: cfg.AllowPrivate, TLSConfig: cfg.TLSConfig}),
		st:  store{dir: filepath.Join(cfg.StateDir, "oauth"), server: cfg.Server, resource: storeResource(u)},
		log: cfg.Logger.With("server", cfg.Server),
	}
	if cfg.PrivateKey != "" {
		k, alg, err := parseKey(cfg.PrivateKey)
		if err != nil {
			return nil, fmt.Errorf("server %s: %w", cfg.Server, err)
		}
		a.key = &client{key: k, keyAlg: alg}
	}
	return a, nil
}

// tokenClient is the client identity recorded in r, with the declared
// secret or key (a declared secret is never written to the token file).
func (a *Authorizer) tokenClient(r *record) *client {
	c := &client{id: r.ClientID, secret: r.ClientSecret, method: r.AuthMethod}
	if !r.Registered && r.ClientID == a.cfg.ClientID {
		c.secret = a.cfg.ClientSecret
	}
	if a.key != nil && c.method == methodJWT {
		c.key, c.keyAlg = a.key.key, a.key.keyAlg
	}
	return c
}

func (a *Authorizer) loadLocked() (*record, error) {
	if a.rec != nil {
		return a.rec, nil
	}
	r, err := a.load()
	if err != nil {
		return nil, err
	}
	a.rec = r
	return r, nil
}

// load reads the token file through pinned.
func (a *Authorizer) load() (*record, error) {
	r, err := a.st.load()
	return a.pinned(r), err
}

// pinned is r, or nil when the declaration pins another authorization
// server than the one r's tokens (and refresh endpoint) belong to: a
// token file written before the pin must not keep refreshing there with
// the declared secret.
func (a *Authorizer) pinned(r *record) *record {
	if r != nil && a.cfg.Issuer != "" && r.Issuer != a.cfg.Issuer {
		return nil
	}
	return r
}

func valid(r *record) bool {
	return r != nil && r.AccessToken != "" && (r.Expiry.IsZero() || time.Until(r.Expiry) > expirySkew)
}

// Authorization returns "Bearer <token>" when a token is stored (refreshed
// first when it expired), "" otherwise: the server's 401 then reaches
// Challenge.
func (a *Authorizer) Authorization(ctx context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, err := a.loadLocked()
	if err != nil {
		return "", err
	}
	if valid(r) {
		return "Bearer " + r.AccessToken, nil
	}
	if r != nil && r.RefreshToken != "" {
		if err := a.refreshLocked(ctx); err == nil && valid(a.rec) {
			return "Bearer " + a.rec.AccessToken, nil
		} else if err != nil {
			a.log.Info("token refresh failed", "err", err.Error())
		}
	}
	if a.cfg.Grant == GrantClientCredentials && r != nil {
		if err := a.clientCredentialsLocked(ctx, challenge{}, false); err == nil {
			return "Bearer " + a.rec.AccessToken, nil
		}
	}
	if r != nil && r.AccessToken != "" {
		return "Bearer " + r.AccessToken, nil // expired: let the server say so
	}
	return "", nil
}

// Secrets returns the credentials a server may be sent or told of: the
// access and refresh tokens in use (and a stale refresh token still on
// disk) and the client secret. ok is false, with nothing returned, while
// a refresh or a login holds them: the caller keeps what it had, as the
// server cannot have seen a token the authorizer has not yet handed out.
func (a *Authorizer) Secrets() (secrets []string, ok bool) {
	if !a.mu.TryLock() {
		return nil, false
	}
	defer a.mu.Unlock()
	secrets = append(secrets, a.cfg.ClientSecret, a.staleRefresh)
	if r := a.rec; r != nil {
		secrets = append(secrets, r.AccessToken, r.RefreshToken, r.ClientSecret)
	}
	return secrets, true
}

// Challenge handles a 401 (refresh, or a new client-credentials token) and
// a 403 insufficient_scope (step-up: a new client-credentials token with the
// scope, or the union of the scopes recorded for the next authorization,
// which runs in place when Config.Interactive is set). A 401 whose
// protected resource metadata names another authorization server than the
// one that issued the stored tokens drops them and the registration: they
// are bound to that server. Challenge returns nil when a retry may succeed.
func (a *Authorizer) Challenge(ctx context.Context, status int, www []string) error {
	a.mu.Lock()
	seen := ""
	if a.rec != nil {
		seen = a.rec.AccessToken
	}
	a.mu.Unlock()
	err := a.challenge(ctx, status, www)
	if err == nil || a.cfg.Interactive == nil || !errors.Is(err, ErrLoginRequired) {
		return err
	}
	return a.loginInPlace(ctx, www, seen, err)
}

// loginInPlace runs the interactive flow for a refused request, unless
// another login got a new token since the refusal (seen is the token the
// request was refused with), or the recent-login budget is spent.
func (a *Authorizer) loginInPlace(ctx context.Context, www []string, seen string, cause error) error {
	a.loginMu.Lock()
	defer a.loginMu.Unlock()
	a.mu.Lock()
	r := a.rec
	fresh := valid(r) && r.AccessToken != seen
	if r == nil {
		r, _ = a.load()
	}
	a.mu.Unlock()
	if fresh {
		return nil
	}
	if r == nil && !a.cfg.InteractiveFirst {
		return cause
	}
	now := time.Now()
	recent := a.logins[:0]
	for _, t := range a.logins {
		if now.Sub(t) < interactiveWindow {
			recent = append(recent, t)
		}
	}
	a.logins = recent
	if len(recent) >= maxInteractive {
		return fmt.Errorf("%w (sluice already asked for authorization %d times in the last %s)", cause, len(recent), interactiveWindow)
	}
	a.logins = append(a.logins, now)
	a.log.Info("authorizing again in place", "reason", firstLine(cause))
	lo := *a.cfg.Interactive
	lo.Challenge = www
	if err := a.Login(ctx, lo); err != nil {
		return fmt.Errorf("%w: authorizing again failed: %w; run `sluice auth %s`", remote.ErrAuthRequired, err, a.cfg.Server)
	}
	return nil
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return shorten(s)
}

func (a *Authorizer) challenge(ctx context.Context, status int, www []string) error {
	ch, _ := parseChallenges(www)
	a.mu.Lock()
	defer a.mu.Unlock()
	r, err := a.loadLocked()
	if err != nil {
		return err
	}
	stepUp := status == http.StatusForbidden && ch.Error == "insufficient_scope"
	if disk, err := a.load(); err == nil && valid(disk) && (r == nil || disk.AccessToken != r.AccessToken) && !stepUp && !a.unsavedOver(disk) {
		a.rec = disk // authorized (or refreshed) by another process since
		a.staleRefresh = ""
		return nil
	}
	if a.cfg.Grant == GrantClientCredentials {
		if err := a.clientCredentialsLocked(ctx, ch, false); err != nil {
			return fmt.Errorf("%w: %w", remote.ErrAuthRequired, err)
		}
		return nil
	}
	if !stepUp && r != nil && r.Issuer != "" {
		if d, err := a.discover(ctx, ch); err == nil && d.issuer != r.Issuer {
			a.log.Info("the server names another authorization server; its tokens and registration are dropped", "old", r.Issuer, "new", d.issuer)
			r.forgetIssuer()
			r.Issuer = d.issuer
			if err := a.st.save(r); err != nil {
				return err
			}
			return fmt.Errorf("%w: %w: the server is now protected by authorization server %s; run `sluice auth %s`", remote.ErrAuthRequired, ErrLoginRequired, d.issuer, a.cfg.Server)
		}
	}
	if stepUp && r != nil && r.AccessToken != "" && ch.Scope != "" && len(r.TokenScopes) > 0 && subset(strings.Fields(ch.Scope), r.TokenScopes) {
		return fmt.Errorf("%w: the server refuses the token for lack of scope %q, which sluice asked for when authorizing; the authorization server did not grant it (check the account's permissions)", remote.ErrAuthRequired, ch.Scope)
	}
	if !stepUp && r != nil && r.RefreshToken != "" {
		if err := a.refreshLocked(ctx); err == nil {
			return nil
		} else {
			a.log.Info("token refresh failed", "err", err.Error())
		}
	}
	hint := ""
	if stepUp && ch.Scope != "" {
		hint = fmt.Sprintf(" (the server asks for scope %q)", ch.Scope)
		if r != nil {
			u := union(r.Scopes, strings.Fields(ch.Scope))
			if err := scopeGrowth(r.Scopes, u); err != nil {
				return fmt.Errorf("%w: %w", remote.ErrAuthRequired, err)
			}
			r.Scopes = u
			_ = a.st.save(r)
		}
	}
	return fmt.Errorf("%w: %w%s; run `sluice auth %s`", remote.ErrAuthRequired, ErrLoginRequired, hint, a.cfg.Server)
}

// scopeGrowth refuses a step-up that would grow the recorded scopes past
// maxRecordedScopes: a server asking for ever new scopes on each refusal
// would otherwise grow the token file with every request.
func scopeGrowth(old, grown []string) error {
	if len(grown) > maxRecordedScopes && len(grown) > len(old) {
		return fmt.Errorf("oauth: the server asks for more scopes than sluice records (%d in all, over the cap of %d); it keeps asking for new ones, so sluice asks for none of them", len(grown), maxRecordedScopes)
	}
	return nil
}

func subset(a, b []string) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}

func union(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// refreshLocked redeems the refresh token under the cross-process lock,
// re-reading the file first: another process may have rotated it already.
func (a *Authorizer) refreshLocked(ctx context.Context) error {
	unlock, err := a.st.lock()
	if err != nil {
		return err
	}
	defer unlock()
	disk, err := a.load()
	if err != nil {
		return err
	}
	switch {
	case a.unsavedOver(disk):
		// The file holds what this process could not replace: keep the
		// newer tokens in memory.
	case disk != nil && a.rec != nil && disk.RefreshToken != a.rec.RefreshToken && valid(disk):
		a.rec, a.staleRefresh = disk, "" // rotated by another process
		return nil
	case disk != nil:
		a.rec, a.staleRefresh = disk, ""
	}
	r := a.rec
	if r == nil || r.RefreshToken == "" {
		return ErrLoginRequired
	}
	t, err := a.refresh(ctx, r, a.tokenClient(r))
	if err != nil {
		return err
	}
	old := r.RefreshToken
	r.AccessToken, r.RefreshToken, r.Expiry = t.AccessToken, t.RefreshToken, t.Expiry
	a.log.Info("token refreshed", "expires", r.Expiry)
	if err := a.st.save(r); err != nil {
		// The new tokens work: this process goes on with them (the next
		// refresh tries to store its record again). What the file holds
		// is older; after a rotation its refresh token is dead, which
		// "nothing was stored" alone would hide.
		if a.staleRefresh == "" {
			a.staleRefresh = old
		}
		if r.RefreshToken != old {
			a.log.Warn("token refreshed but not stored", "err", fmt.Sprintf("%v; this process goes on with the new tokens, but the authorization server replaced the refresh token, so the stored authorization may no longer refresh once this process ends (run 'sluice auth %s' then)", err, a.st.server))
		} else {
			a.log.Warn("token refreshed but not stored", "err", err.Error()+"; this process goes on with the new tokens")
		}
		return nil
	}
	a.staleRefresh = ""
	return nil
}

// unsavedOver reports whether disk is the record a refresh of this
// process could not replace (see staleRefresh): a.rec is newer.
func (a *Authorizer) unsavedOver(disk *record) bool {
	return a.staleRefresh != "" && a.rec != nil && (disk == nil || disk.RefreshToken == a.staleRefresh)
}

// clientCredentialsLocked gets a client-credentials token. Unless the
// operator asked for it (explicit: `sluice auth`), the declared
// credentials go only to the authorization server they were first used
// with: the remote server's metadata must not redirect them elsewhere.
func (a *Authorizer) clientCredentialsLocked(ctx context.Context, ch challenge, explicit bool) error {
	d, err := a.discover(ctx, ch)
	if err != nil {
		return err
	}
	if !explicit && a.rec != nil && a.rec.Issuer != "" && d.issuer != a.rec.Issuer {
		// `sluice auth` in another process may have accepted the new
		// server since: the token file then names it.
		if disk, err := a.load(); err == nil && disk != nil && disk.Issuer == d.issuer {
			a.rec = disk
			a.staleRefresh = ""
		}
	}
	if !explicit && a.rec != nil && a.rec.Issuer != "" && d.issuer != a.rec.Issuer {
		a.log.Info("the server names another authorization server; the declared client credentials are not sent to it", "old", a.rec.Issuer, "new", d.issuer)
		return fmt.Errorf("%w: the server now names authorization server %s, but its declared client credentials were used with %s; sluice sends them to no other server on its own: run `sluice auth %s` to accept the new one", ErrIssuerChanged, d.issuer, a.rec.Issuer, a.cfg.Server)
	}
	if a.cfg.ClientID == "" {
		return errors.New("oauth: the client_credentials grant needs a declared clientId")
	}
	if a.rec != nil && ch.Scope != "" {
		u := union(a.rec.Scopes, d.scopes)
		if err := scopeGrowth(a.rec.Scopes, u); err != nil {
			return err
		}
		d.scopes = u
	}
	c := &client{id: a.cfg.ClientID, secret: a.cfg.ClientSecret,
		method: chooseMethod(a.cfg.TokenAuthMethod, d.as.TokenEndpointAuthMethodsSupported, a.cfg.ClientSecret != "", a.key != nil)}
	if c.method == methodJWT {
		if a.key == nil {
			return errors.New("oauth: private_key_jwt needs a privateKey")
		}
		c.key, c.keyAlg = a.key.key, a.key.keyAlg
	}
	t, err := a.clientCredentials(ctx, d, c)
	if err != nil {
		return err
	}
	r := &record{Issuer: d.issuer, TokenEndpoint: d.as.TokenEndpoint, AuthMethod: c.method, ClientID: c.id,
		AccessToken: t.AccessToken, RefreshToken: t.RefreshToken, Expiry: t.Expiry, Scopes: d.scopes, TokenScopes: d.scopes}
	a.rec = r
	a.staleRefresh = ""
	return a.st.save(r)
}

// Status describes the stored authorization, for `sluice servers`.
type Status struct {
	Authorized  bool      // a token is stored
	Expiry      time.Time // zero: no expiry known
	Refreshable bool
	Issuer      string
}

// Status reads the token file (never returning a token).
func (a *Authorizer) Status() (Status, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, err := a.load()
	if err != nil || r == nil {
		return Status{}, err
	}
	return Status{Authorized: r.AccessToken != "", Expiry: r.Expiry, Refreshable: r.RefreshToken != "", Issuer: r.Issuer}, nil
}

// Logout forgets the server's tokens and client registration. It reports
// whether anything was stored.
func (a *Authorizer) Logout() (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rec = nil
	a.staleRefresh = ""
	return a.st.remove()
}

// LoginOptions tune the interactive flow.
type LoginOptions struct {
	// Challenge holds the WWW-Authenticate values of a refusal the caller
	// already has; nil: Login probes the server for them.
	Challenge []string
	// Open is handed the authorization URL (open a browser, or print it).
	Open func(authURL string) error
	// Timeout bounds waiting for the redirect; default 5 minutes.
	Timeout time.Duration
	// Notice is told, in a line of text, of a redirect that refuses the
	// login without its state: the authorization server's refusal, or a
	// request made to look like one, so the login keeps waiting (nil:
	// not told). It may be called from another goroutine.
	Notice func(string)
}

// Login runs the whole flow: probe the server for its challenge, discover
// the authorization server, establish the client identity (declared, a
// Client ID Metadata Document, or dynamic registration), then the
// authorization code grant with PKCE S256 and the resource indicator
// through a loopback redirect (or the client-credentials grant), and store
// the tokens.
func (a *Authorizer) Login(ctx context.Context, lo LoginOptions) error {
	ch, ok := parseChallenges(lo.Challenge)
	if !ok {
		var err error
		if ch, err = a.probe(ctx); err != nil {
			return err
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cfg.Grant == GrantClientCredentials {
		return a.clientCredentialsLocked(ctx, ch, true)
	}
	old, _ := a.load()
	d, err := a.discover(ctx, ch)
	if err != nil {
		return err
	}
	if old != nil {
		d.scopes = union(d.scopes, old.Scopes)
	}
	if !slices.Contains(d.as.CodeChallengeMethodsSupported, "S256") {
		return fmt.Errorf("%w: the authorization server does not list S256 in code_challenge_methods_supported; PKCE cannot be used, so sluice will not proceed", ErrDiscovery)
	}
	if d.as.AuthorizationEndpoint == "" {
		return fmt.Errorf("%w: the authorization server metadata has no authorization_endpoint", ErrDiscovery)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(a.cfg.RedirectPort)))
	if err != nil {
		return fmt.Errorf("oauth: cannot listen for the redirect on 127.0.0.1:%d: %w", a.cfg.RedirectPort, err)
	}
	defer ln.Close()
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port)

	c, registered, err := a.identity(ctx, d, redirect, old)
	if err != nil {
		return err
	}
	verifier := oauth2.GenerateVerifier()
	state := randomString()
	cfg := a.oauth2Config(d, c, redirect)
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", d.resource))

	type result struct {
		code string
		err  error
	}
	got := make(chan result, 1)
	var refusals atomic.Pointer[string] // the last stateless refusal, for the timeout's error
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		res := result{}
		switch {
		case q.Get("state") == state:
		case statelessRefusal(r, d):
			// Some authorization servers leave the state out of a
			// refusal. Any local program, or a page that navigates
			// the browser here, can send the same, so it does not end
			// the login: the person is told at once and decides (the
			// login waits on; Ctrl-C ends it), and a timeout names it.
			said := q.Get("error")
			if desc := q.Get("error_description"); desc != "" {
				said += " " + strconv.Quote(shorten(desc))
			}
			refusals.Store(&said)
			if lo.Notice != nil {
				lo.Notice("a redirect without this login's state says " + said + "; it may be the authorization server's refusal, or a request made to look like one, so sluice keeps waiting: if you refused, press Ctrl-C")
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, "<p>sluice: this answer (%s) carries no state, so sluice cannot tell it from another page's request and keeps waiting. If you refused, stop the login where it runs (Ctrl-C) and start it again.</p>", html.EscapeString(said))
			return
		default:
			// Any page the browser opens can reach this listener: a
			// request without this login's state is not its answer, so
			// it neither ends the login nor decides its outcome.
			http.Error(w, "sluice: this is not the answer to the pending authorization (the state does not match)", http.StatusBadRequest)
			return
		}
		switch {
		case q.Has("iss") && q.Get("iss") != d.issuer: // RFC 9207: simple string comparison, no normalization
			res.err = fmt.Errorf("%w: iss %q is not the authorization server %q (RFC 9207)", ErrCallback, shorten(q.Get("iss")), d.issuer)
		case !q.Has("iss") && d.as.IssParameterSupported:
			res.err = fmt.Errorf("%w: the authorization server promised an iss parameter and sent none (RFC 9207)", ErrCallback)
		case q.Get("error") != "":
			res.err = fmt.Errorf("%w: %s %s", ErrCallback, shorten(q.Get("error")), shorten(q.Get("error_description")))
		case q.Get("code") == "":
			res.err = fmt.Errorf("%w: no code in the redirect", ErrCallback)
		default:
			res.code = q.Get("code")
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if res.err != nil {
			fmt.Fprintf(w, "<p>sluice: authorization failed: %s</p>", html.EscapeString(res.err.Error()))
		} else {
			io.WriteString(w, "<p>sluice: authorized. You can close this window.</p>")
		}
		select {
		case got <- res:
		default:
		}
	})}
	go srv.Serve(ln)
	defer srv.Close()

	if lo.Open != nil {
		if err := lo.Open(authURL); err != nil {
			return err
		}
	}
	timeout := lo.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	var res result
	select {
	case res = <-got:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(timeout):
		if said := refusals.Load(); said != nil {
			return fmt.Errorf("%w: no authorization redirect within %s; a redirect without the login's state said %s (the authorization server's refusal, or a request made to look like one)", ErrCallback, timeout, *said)
		}
		return fmt.Errorf("oauth: no authorization redirect within %s", timeout)
	}
	if res.err != nil {
		return res.err
	}
	t, err := a.exchange(ctx, d, c, res.code, redirect, verifier)
	if err != nil {
		return err
	}
	r := &record{Issuer: d.issuer, TokenEndpoint: d.as.TokenEndpoint, AuthMethod: c.method, ClientID: c.id,
		Registered: registered, AccessToken: t.AccessToken, RefreshToken: t.RefreshToken, Expiry: t.Expiry, Scopes: d.scopes, TokenScopes: d.scopes}
	if registered {
		r.ClientSecret = c.secret
	}
	a.rec = r
	a.staleRefresh = ""
	return a.st.save(r)
}

// statelessRefusal reports whether a redirect without any state looks
// like an authorization server's refusal (RFC 6749 §4.1.2.1 wants the
// state echoed, yet some leave it out): a GET with an error code and no
// code, an iss matching the issuer where one is sent or promised (RFC
// 9207), and, where the browser says how it fetched (Fetch Metadata), a
// top-level navigation. A page's hidden request (an image, a fetch, a
// frame) is no such navigation, and a wrong state is never a refusal:
// the authorization server echoes the state it got or none. What passes
// is only reported (LoginOptions.Notice, the timeout's error): any local
// program can send it, so it neither ends nor completes the login.
func statelessRefusal(r *http.Request, d *discovery) bool {
	q := r.URL.Query()
	if r.Method != http.MethodGet || q.Has("state") || q.Has("code") || !errorCode(q.Get("error")) {
		return false
	}
	if (q.Has("iss") || d.as.IssParameterSupported) && q.Get("iss") != d.issuer {
		return false
	}
	if m := r.Header.Get("Sec-Fetch-Mode"); m != "" && m != "navigate" {
		return false
	}
	if dest := r.Header.Get("Sec-Fetch-Dest"); dest != "" && dest != "document" {
		return false
	}
	return true
}

// errorCode reports whether s is an RFC 6749 error code: 1 to 64
// characters of %x20-21 / %x23-5B / %x5D-7E.
func errorCode(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// identity picks the client: declared, else a Client ID Metadata Document
// URL when the server supports them, else a registration bound to this
// issuer (reused, or made now).
func (a *Authorizer) identity(ctx context.Context, d *discovery, redirect string, old *record) (*client, bool, error) {
	if a.cfg.ClientID != "" {
		c := &client{id: a.cfg.ClientID, secret: a.cfg.ClientSecret,
			method: chooseMethod(a.cfg.TokenAuthMethod, d.as.TokenEndpointAuthMethodsSupported, a.cfg.ClientSecret != "", a.key != nil)}
		if c.method == methodJWT && a.key != nil {
			c.key, c.keyAlg = a.key.key, a.key.keyAlg
		}
		return c, false, nil
	}
	if a.cfg.ClientMetadataURL != "" && d.as.ClientIDMetadataDocumentSupported {
		return &client{id: a.cfg.ClientMetadataURL, method: methodNone}, false, nil
	}
	if old != nil && old.Registered && old.Issuer == d.issuer && old.ClientID != "" && a.cfg.RedirectPort != 0 {
		return &client{id: old.ClientID, secret: old.ClientSecret, method: old.AuthMethod}, true, nil
	}
	if d.as.RegistrationEndpoint == "" {
		return nil, false, fmt.Errorf("%w: the authorization server offers no registration and no client id is declared; add oauth.clientId to the declaration", ErrDiscovery)
	}
	c, err := a.register(ctx, d, redirect)
	return c, err == nil, err
}

// probe sends an unauthenticated request to learn the server's challenge.
// A server that answers without one is fine: discovery then uses the
// well-known locations.
func (a *Authorizer) probe(ctx context.Context) (challenge, error) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sluice","version":"auth"}}}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.resource.String(), bytes.NewReader(body))
	if err != nil {
		return challenge{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := a.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // it repeats the whole URL, query (a declared key) included
		}
		return challenge{}, fmt.Errorf("oauth: reaching %s: %w", remote.Describe(a.resource), err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		a.endSession(ctx, sid)
	}
	ch, _ := parseChallenges(resp.Header.Values("WWW-Authenticate"))
	return ch, nil
}

func (a *Authorizer) endSession(ctx context.Context, sid string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, a.resource.String(), nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", sid)
	if resp, err := a.hc.Do(req); err == nil {
		resp.Body.Close()
	}
}

func randomString() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
