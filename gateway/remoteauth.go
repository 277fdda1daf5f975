package gateway

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"sluice/gateway/config"
	"sluice/gateway/oauth"
)

// authorizer builds the OAuth client of a remote server, with the oauth
// block's references expanded. A server whose declared headers carry an
// Authorization has no authorizer: the declaration decided.
func (g *Gateway) authorizer(d config.Server, headers http.Header) (*oauth.Authorizer, error) {
	if headers.Get("Authorization") != "" {
		return nil, nil
	}
	cfg := oauth.Config{
		Server: d.ID, URL: d.URL, StateDir: g.stateDir, ClientName: g.opts.ClientName,
		AllowPrivate: d.AllowPrivate && d.Scope == config.ScopeUser, Logger: g.log,
	}
	if o := d.OAuth; o != nil {
		secrets, err := config.ExpandEnv(map[string]string{"clientSecret": o.ClientSecret, "privateKey": o.PrivateKey}, g.opts.LookupEnv)
		if err != nil {
			if e, ok := err.(*config.EnvRefError); ok {
				e.Server = d.ID
				e.Key = "oauth." + e.Key
			}
			return nil, &Error{Kind: KindGateway, Server: d.ID, Message: err.Error(), Err: err}
		}
		cfg.ClientID, cfg.ClientSecret, cfg.PrivateKey = o.ClientID, secrets["clientSecret"], secrets["privateKey"]
		cfg.Scopes, cfg.Grant, cfg.TokenAuthMethod = o.Scopes, o.Grant, o.TokenAuthMethod
		cfg.ClientMetadataURL, cfg.RedirectPort, cfg.Issuer = o.ClientMetadataURL, o.RedirectPort, o.Issuer
	}
	if ra := g.opts.Reauthorize; ra != nil && ra.Open != nil {
		id, open := d.ID, ra.Open
		cfg.Interactive = &oauth.LoginOptions{Open: func(u string) error { return open(id, u) }, Timeout: ra.Timeout}
	}
	a, err := oauth.New(cfg)
	if err != nil {
		return nil, &Error{Kind: KindGateway, Server: d.ID, Message: err.Error(), Err: err}
	}
	return a, nil
}

// AuthOptions tune Auth.
type AuthOptions struct {
	// Open receives the authorization URL (a browser, or printing it).
	Open func(url string) error
	// Timeout bounds the wait for the redirect; 0 = 5 minutes.
	Timeout time.Duration
	// Notice is told of a redirect that refuses without the login's
	// state (see oauth.LoginOptions.Notice); nil: not told.
	Notice func(string)
}

// ReauthorizeOptions tune the in-place authorization of Options.Reauthorize.
type ReauthorizeOptions struct {
	// Open receives the server's id and the authorization URL.
	Open func(server, url string) error
	// Timeout bounds the wait for the redirect; 0 = 5 minutes.
	Timeout time.Duration
}

// remoteDecl resolves id to a remote server the caller may authorize.
func (g *Gateway) remoteDecl(id string) (config.Server, http.Header, error) {
	v, err := g.server(id)
	if err != nil {
		return config.Server{}, nil, err
	}
	d := v.decl
	if !d.IsRemote() {
		return d, nil, &Error{Kind: KindBadInput, Server: id, Message: fmt.Sprintf("server %s is a local server; only remote (url) servers use OAuth", id)}
	}
	if !v.Trusted() {
		return d, nil, untrustedErr(v)
	}
	headers, err := d.ExpandHeaders(g.opts.LookupEnv)
	if err != nil {
		return d, nil, &Error{Kind: KindGateway, Server: id, Message: err.Error(), Err: err}
	}
	h := make(http.Header, len(headers))
	for k, val := range headers {
		h.Set(k, val)
	}
	if h.Get("Authorization") != "" {
		return d, nil, &Error{Kind: KindBadInput, Server: id, Message: fmt.Sprintf("server %s sends a declared Authorization header; remove it from headers to use OAuth", id)}
	}
	return d, h, nil
}

// Auth runs the OAuth flow for a remote server (`sluice auth SERVER`) and
// stores its tokens. A running connection (sluice serve) picks them up
// from the token file when the server next refuses its old ones.
func (g *Gateway) Auth(ctx context.Context, id string, o AuthOptions) error {
	d, h, err := g.remoteDecl(id)
	if err != nil {
		return err
	}
	a, err := g.authorizer(d, h)
	if err != nil {
		return err
	}
	if err := a.Login(ctx, oauth.LoginOptions{Open: o.Open, Timeout: o.Timeout, Notice: o.Notice}); err != nil {
		return &Error{Kind: KindUpstream, Server: id, Message: fmt.Sprintf("server %s: authorization failed: %v", id, err), Err: err}
	}
	return nil
}

// Logout forgets a remote server's tokens; it reports whether any were
// stored.
func (g *Gateway) Logout(id string) (bool, error) {
	d, h, err := g.remoteDecl(id)
	if err != nil {
		return false, err
	}
	a, err := g.authorizer(d, h)
	if err != nil {
		return false, err
	}
	ok, err := a.Logout()
	if err != nil {
		return false, &Error{Kind: KindGateway, Server: id, Message: fmt.Sprintf("server %s: removing its tokens: %v", id, err), Err: err}
	}
	return ok, nil
}

// authState describes the stored authorization of a remote server for
// `sluice servers`: "" for local servers and declared credentials, else
// "none", "valid until ...", "expired, refreshable", "expired".
func (g *Gateway) authState(d config.Server) string {
	if !d.IsRemote() {
		return ""
	}
	headers, err := d.ExpandHeaders(g.opts.LookupEnv)
	if err != nil {
		return ""
	}
	h := make(http.Header, len(headers))
	for k, v := range headers {
		h.Set(k, v)
	}
	if h.Get("Authorization") != "" {
		return "header"
	}
	a, err := g.authorizer(d, h)
	if err != nil || a == nil {
		return ""
	}
	st, err := a.Status()
	switch {
	case err != nil:
		return "unreadable"
	case !st.Authorized:
		return "none"
	case st.Expiry.IsZero() || time.Until(st.Expiry) > 0:
		if st.Expiry.IsZero() {
			return "authorized"
		}
		return "authorized until " + st.Expiry.UTC().Format(time.RFC3339)
	case st.Refreshable:
		return "expired, refreshable"
	}
	return "expired"
}
