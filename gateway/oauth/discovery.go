package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"sluice/gateway/remote"
)

const maxMetadataBytes = 256 << 10

// challenge is a parsed Bearer WWW-Authenticate challenge (RFC 6750 §3,
// RFC 9728 §5.1).
type challenge struct {
	ResourceMetadata string
	Scope            string
	Error            string
}

// parseChallenges finds the Bearer challenge among WWW-Authenticate values.
func parseChallenges(values []string) (challenge, bool) {
	for _, v := range values {
		if c, ok := parseBearer(v); ok {
			return c, true
		}
	}
	return challenge{}, false
}

// parseBearer parses `Bearer k="v", k2=v2` (auth-params with quoted or
// token values). Other schemes in the same header are skipped.
func parseBearer(h string) (challenge, bool) {
	s := h
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			return challenge{}, false
		}
		sp := strings.IndexAny(s, " \t")
		scheme := s
		if sp >= 0 {
			scheme = s[:sp]
		}
		if !strings.EqualFold(scheme, "Bearer") {
			// skip to the next scheme: find a comma followed by a token without '='
			if sp < 0 {
				return challenge{}, false
			}
			s = s[sp:]
			params, rest := parseParams(s)
			_ = params
			s = rest
			continue
		}
		var c challenge
		if sp < 0 {
			return c, true
		}
		params, _ := parseParams(s[sp:])
		c.ResourceMetadata = params["resource_metadata"]
		c.Scope = challengeScope(params["scope"])
		c.Error = params["error"]
		return c, true
	}
}

// Bounds on scopes taken from a remote server: its challenge is recorded
// for the next authorization, and every refusal may ask for more.
const (
	maxChallengeScopes = 32  // scopes in one challenge
	maxScopeBytes      = 256 // bytes in one scope
	maxRecordedScopes  = 64  // scopes a step-up may grow the recorded set to
)

// challengeScope is a challenge's scope when it is a list of at most
// maxChallengeScopes scope tokens (RFC 6749 §3.3: %x21 / %x23-5B /
// %x5D-7E) of at most maxScopeBytes each, "" otherwise: a scope is sent
// to the authorization server and recorded in the token file, so anything
// else is not taken from the server.
func challengeScope(s string) string {
	f := strings.Fields(s)
	if len(f) > maxChallengeScopes {
		return ""
	}
	for _, tok := range f {
		if len(tok) > maxScopeBytes {
			return ""
		}
		for i := 0; i < len(tok); i++ {
			if c := tok[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
				return ""
			}
		}
	}
	return strings.Join(f, " ")
}

// parseParams reads auth-params until something that is not k=v; it
// returns them and the rest (the next challenge).
func parseParams(s string) (map[string]string, string) {
	out := map[string]string{}
	for {
		t := strings.TrimLeft(s, " \t,")
		eq := strings.IndexByte(t, '=')
		if eq <= 0 || strings.ContainsAny(t[:eq], " \t,\"") {
			return out, t
		}
		k := strings.ToLower(strings.TrimSpace(t[:eq]))
		t = strings.TrimLeft(t[eq+1:], " \t")
		var v string
		if strings.HasPrefix(t, `"`) {
			var b strings.Builder
			i := 1
			for ; i < len(t); i++ {
				if t[i] == '\\' && i+1 < len(t) {
					i++
					b.WriteByte(t[i])
					continue
				}
				if t[i] == '"' {
					break
				}
				b.WriteByte(t[i])
			}
			v = b.String()
			if i < len(t) {
				i++
			}
			t = t[i:]
		} else {
			end := strings.IndexAny(t, ", \t")
			if end < 0 {
				end = len(t)
			}
			v, t = t[:end], t[end:]
		}
		out[k] = v
		s = t
	}
}

// resourceMetadata is RFC 9728 protected resource metadata (the members
// sluice uses).
type resourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// serverMetadata is RFC 8414 / OpenID Connect discovery metadata.
type serverMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported"`
	IssParameterSupported             bool     `json:"authorization_response_iss_parameter_supported"`
}

// getJSON fetches a metadata document: 200, JSON, bounded.
func (a *Authorizer) getJSON(ctx context.Context, u string, v any) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := a.hc.Do(req)
	if err != nil {
		return false, remote.HideURLError(err) // a well-known url repeats the server's path
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return false, nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes+1))
	if err != nil {
		return false, err
	}
	if len(b) > maxMetadataBytes {
		return false, fmt.Errorf("%w: %s is over %d bytes", ErrDiscovery, u, maxMetadataBytes)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("%w: %s is not valid JSON metadata: %v", ErrDiscovery, u, err)
	}
	return true, nil
}

// prmCandidates lists where protected resource metadata may live: the
// challenge's resource_metadata first, then the path-suffixed and root
// well-known URIs (RFC 9728 §3.1).
func prmCandidates(resource *url.URL, fromChallenge string) []string {
	var out []string
	if fromChallenge != "" {
		out = append(out, fromChallenge)
	}
	base := resource.Scheme + "://" + resource.Host
	if p := strings.TrimSuffix(resource.EscapedPath(), "/"); p != "" {
		out = append(out, base+"/.well-known/oauth-protected-resource"+p)
	}
	return append(out, base+"/.well-known/oauth-protected-resource")
}

// asCandidates lists the metadata URLs for an issuer in the order the MCP
// authorization spec gives (RFC 8414 first, then OpenID Connect).
func asCandidates(issuer *url.URL) []string {
	base := issuer.Scheme + "://" + issuer.Host
	p := strings.TrimSuffix(issuer.EscapedPath(), "/")
	if p == "" {
		return []string{base + "/.well-known/oauth-authorization-server", base + "/.well-known/openid-configuration"}
	}
	return []string{
		base + "/.well-known/oauth-authorization-server" + p,
		base + "/.well-known/openid-configuration" + p,
		base + p + "/.well-known/openid-configuration",
	}
}

// storeResource is the server URL as the token file knows it: scheme and
// host lowercased, no fragment, no trailing slash on a non-root path. The
// query stays: two urls that differ only there are two records.
func storeResource(u *url.URL) string {
	c := *u
	c.Scheme = strings.ToLower(c.Scheme)
	c.Host = strings.ToLower(c.Host)
	c.Fragment = ""
	c.RawFragment = ""
	if c.Path != "/" {
		c.Path = strings.TrimSuffix(c.Path, "/")
		c.RawPath = ""
	}
	return c.String()
}

// canonicalResource is the resource indicator sent to the authorization
// server (RFC 8707): storeResource without the query, which RFC 8707 §2
// advises against and which may hold a key meant for the server alone.
func canonicalResource(u *url.URL) string {
	c := *u
	c.RawQuery, c.ForceQuery = "", false
	return storeResource(&c)
}

// resourceMatches reports whether the PRM's resource identifies the server:
// equal to it, or a prefix of it at a path boundary on the same origin.
func resourceMatches(prm string, server *url.URL) bool {
	p, err := url.Parse(prm)
	if err != nil || p.Scheme == "" || p.Host == "" {
		return false
	}
	if !strings.EqualFold(p.Scheme, server.Scheme) || !strings.EqualFold(p.Host, server.Host) {
		return false
	}
	pp := strings.TrimSuffix(p.Path, "/")
	sp := strings.TrimSuffix(server.Path, "/")
	return pp == "" || pp == sp || strings.HasPrefix(sp, pp+"/")
}

// discovery is what the flow needs, found from the server outward.
type discovery struct {
	resource string // the resource indicator to send
	issuer   string
	as       serverMetadata
	scopes   []string // scopes to ask for
}

// discover finds the authorization server for the resource: protected
// resource metadata (challenge, then well-known), else the server's origin
// as issuer (servers from before RFC 9728); then its metadata, with the
// issuer and PKCE checks.
func (a *Authorizer) discover(ctx context.Context, ch challenge) (*discovery, error) {
	d := &discovery{resource: canonicalResource(a.resource)}
	if ch.ResourceMetadata != "" {
		u, err := url.Parse(ch.ResourceMetadata)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("%w: the server's resource_metadata %q is not an http(s) URL", ErrDiscovery, shorten(ch.ResourceMetadata))
		}
		if a.downgrades(u) {
			return nil, fmt.Errorf("%w: the server's resource_metadata %s is plain http behind the https server %s; whoever is on the path could name the authorization server that gets codes, tokens and client secrets (the metadata must use https)", ErrDiscovery, remote.Describe(u), d.resource)
		}
	}
	var prm resourceMetadata
	found := false
	for _, u := range prmCandidates(a.resource, ch.ResourceMetadata) {
		ok, err := a.getJSON(ctx, u, &prm)
		if err != nil {
			return nil, err
		}
		if ok {
			found = true
			break
		}
	}
	var issuers []string
	if found {
		if prm.Resource != "" && !resourceMatches(prm.Resource, a.resource) {
			return nil, fmt.Errorf("%w: the protected resource metadata names resource %q, not this server (%s); refusing to send it a token", ErrDiscovery, prm.Resource, d.resource)
		}
		if prm.Resource != "" {
			d.resource = prm.Resource
		}
		issuers = prm.AuthorizationServers
		if len(issuers) == 0 {
			return nil, fmt.Errorf("%w: the protected resource metadata lists no authorization_servers", ErrDiscovery)
		}
	} else if a.cfg.Issuer != "" {
		issuers = []string{a.cfg.Issuer} // no metadata to contradict the declaration
	} else {
		issuers = []string{a.resource.Scheme + "://" + a.resource.Host}
	}
	if pin := a.cfg.Issuer; pin != "" {
		// The declaration names the authorization server: the metadata
		// may list it among others, never replace it.
		i := slices.Index(issuers, pin)
		if i < 0 {
			return nil, fmt.Errorf("%w: the server names authorization server %s, but its declaration pins oauth.issuer %s; sluice sends codes, tokens and client credentials to no other (if the server moved on purpose, change oauth.issuer)", ErrIssuerMismatch, shorten(strings.Join(issuers, ", ")), pin)
		}
		issuers = []string{pin}
	}
	issuer, err := url.Parse(issuers[0])
	if err != nil || (issuer.Scheme != "https" && issuer.Scheme != "http") || issuer.Host == "" {
		return nil, fmt.Errorf("%w: authorization server %q is not an http(s) URL", ErrDiscovery, issuers[0])
	}
	if a.downgrades(issuer) {
		return nil, fmt.Errorf("%w: authorization server %q is plain http behind the https server %s; its codes and tokens would cross the network in clear text (the authorization server must use https)", ErrDiscovery, issuers[0], d.resource)
	}
	asFound := false
	for _, u := range asCandidates(issuer) {
		var m serverMetadata
		ok, err := a.getJSON(ctx, u, &m)
		if err != nil {
			return nil, err
		}
		if ok {
			if m.Issuer != issuers[0] { // RFC 8414 §3.3: identical
				return nil, fmt.Errorf("%w: metadata at %s names issuer %q, not %q", ErrDiscovery, u, m.Issuer, issuers[0])
			}
			d.as, asFound = m, true
			break
		}
	}
	if !asFound {
		if found {
			return nil, fmt.Errorf("%w: no authorization server metadata for %s", ErrDiscovery, issuers[0])
		}
		// 2025-03-26 servers: default endpoints on the server's origin.
		base := issuers[0]
		d.as = serverMetadata{Issuer: base, AuthorizationEndpoint: base + "/authorize", TokenEndpoint: base + "/token",
			RegistrationEndpoint: base + "/register", CodeChallengeMethodsSupported: []string{"S256"}}
	}
	d.issuer = d.as.Issuer
	if d.as.TokenEndpoint == "" {
		return nil, fmt.Errorf("%w: the authorization server metadata has no token_endpoint", ErrDiscovery)
	}
	for _, e := range []string{d.as.AuthorizationEndpoint, d.as.TokenEndpoint, d.as.RegistrationEndpoint} {
		if e == "" {
			continue
		}
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("%w: endpoint %q is not an http(s) URL", ErrDiscovery, e)
		}
		if a.downgrades(u) {
			return nil, fmt.Errorf("%w: endpoint %q of the authorization server is plain http behind the https server %s; codes and tokens would cross the network in clear text (the endpoint must use https)", ErrDiscovery, e, d.resource)
		}
	}
	switch {
	case ch.Scope != "":
		d.scopes = strings.Fields(ch.Scope)
	case len(a.cfg.Scopes) > 0:
		d.scopes = a.cfg.Scopes
	case found && len(prm.ScopesSupported) > 0:
		d.scopes = prm.ScopesSupported
	}
	// Ask for a refresh token where the authorization server has the
	// OpenID offline_access scope; never invent it where it does not.
	if len(d.scopes) > 0 && slices.Contains(d.as.ScopesSupported, "offline_access") && !slices.Contains(d.scopes, "offline_access") {
		d.scopes = append(append([]string(nil), d.scopes...), "offline_access")
	}
	return d, nil
}

// downgrades reports whether u is plain http while the server it
// authorizes for is https: the declaration asked for a protected channel,
// and the metadata must not take the codes, tokens and client secrets off
// it.
func (a *Authorizer) downgrades(u *url.URL) bool {
	return strings.EqualFold(a.resource.Scheme, "https") && !strings.EqualFold(u.Scheme, "https")
}
