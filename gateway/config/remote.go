package config

import (
	"encoding/binary"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"sluice/gateway/remote"
)

// Remote transports, as written in declarations.
const (
	TransportAuto       = "auto"
	TransportStreamable = "streamable-http"
	TransportSSE        = "sse"
)

// OAuth grants.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// Token endpoint authentication methods.
const (
	AuthNone          = "none"
	AuthSecretBasic   = "client_secret_basic"
	AuthSecretPost    = "client_secret_post"
	AuthPrivateKeyJWT = "private_key_jwt"
)

// Caps on remote declarations.
const (
	MaxURLBytes         = 2048
	MaxHeaders          = 32
	MaxHeaderNameBytes  = 128
	MaxHeaderValueBytes = 8192
	MaxScopes           = 32
	MaxScopeBytes       = 256
	MaxOAuthValueBytes  = 4096
)

// OAuth is a remote server's oauth block. Every field is optional: with no
// clientId the client identity is discovered (a Client ID Metadata
// Document, else dynamic registration). Secret values may be ${env:NAME}
// references and are kept as written.
type OAuth struct {
	ClientID          string   // pre-registered client id
	ClientSecret      string   // as written (a reference, usually)
	Scopes            []string // requested scopes; never nil
	Grant             string   // GrantAuthorizationCode (default) or GrantClientCredentials
	TokenAuthMethod   string   // "" = chosen from the server's metadata
	PrivateKey        string   // private_key_jwt: PEM, as written (a reference, usually)
	ClientMetadataURL string   // an https URL serving this client's metadata document (CIMD)
	RedirectPort      int      // loopback port for the authorization redirect; 0 = any free port
	// Issuer pins the authorization server: its issuer identifier
	// exactly as its metadata states it (RFC 8414 §3.3). "" = whichever
	// authorization server the remote server's metadata names. With a
	// pin, discovery refuses any other, on first use and every time
	// after: codes, tokens and declared client secrets go nowhere else.
	Issuer string
}

var remoteOnlyKeys = []string{"url", "headers", "transport", "oauth", "allowPrivate"}

var oauthKeys = []string{"clientId", "clientSecret", "scopes", "grant", "tokenAuthMethod", "privateKey", "clientMetadataUrl", "redirectPort", "issuer"}

// headers the transport or HTTP itself sets; a declaration may not.
var reservedHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Content-Type": true, "Accept": true, "Connection": true,
	"Transfer-Encoding": true, "Te": true, "Trailer": true, "Upgrade": true, "Keep-Alive": true,
	"Proxy-Connection": true, "Proxy-Authorization": true, "Mcp-Session-Id": true, "Mcp-Protocol-Version": true,
	"Mcp-Method": true, "Mcp-Name": true, "Last-Event-Id": true, "Cookie": true,
}

// IsRemote reports whether the declaration is a remote (url) server.
func (s *Server) IsRemote() bool { return s.URL != "" }

// remoteBlock parses a url server's fields. It reports false when the
// server has no url.
func (p *parser) remoteBlock(s *Server, pairs []kv, dup map[string]bool, field string) bool {
	var urlKV *kv
	for i := range pairs {
		if pairs[i].key == "url" && !dup["url"] {
			urlKV = &pairs[i]
		}
	}
	if urlKV == nil {
		for _, f := range pairs {
			if !dup[f.key] && f.key != "url" && contains(remoteOnlyKeys, f.key) {
				p.errf(f.k, joinField(field, f.key), "add `url: https://...` for a remote server, or remove it", "%s applies only to remote (url) servers", f.key)
			}
		}
		return false
	}
	s.Transport = TransportAuto
	s.Headers = map[string]string{}
	for _, f := range pairs {
		if dup[f.key] {
			continue
		}
		ff := joinField(field, f.key)
		switch f.key {
		case "url":
			if v, ok := p.str(f.v, ff, MaxURLBytes); ok {
				if _, err := remote.CheckURL(v); err != nil {
					fix := "write an absolute http:// or https:// URL"
					if ue, ok := err.(*remote.URLError); ok && strings.Contains(ue.Reason, "userinfo") {
						fix = "remove user:password@; send credentials with headers (e.g. Authorization: \"Bearer ${env:TOKEN}\") or oauth"
					}
					p.errf(f.v, ff, fix, "%s", strings.TrimPrefix(err.Error(), "remote: "))
				} else {
					s.URL = v
				}
			}
		case "headers":
			s.Headers = p.headers(f.v, ff)
		case "transport":
			if v, ok := p.enum(f.v, ff, TransportAuto, TransportStreamable, TransportSSE); ok {
				s.Transport = v
			}
		case "oauth":
			s.OAuth = p.oauth(f.v, ff)
		case "allowPrivate":
			if p.scope == ScopeProject {
				p.errf(f.k, ff, "remove it; a project declaration can never reach loopback or private addresses (declare the server in your user config to allow that)", "allowPrivate is only allowed in user config")
				continue
			}
			if f.v.Kind != yaml.ScalarNode || f.v.Tag != "!!bool" {
				p.errf(f.v, ff, "write true or false", "allowPrivate must be a boolean, not %s", kindOf(f.v))
				continue
			}
			s.AllowPrivate = f.v.Value == "true"
		case "command", "cli":
			p.errf(f.k, ff, "keep either url (a remote server) or command (a local one), not both", "%s cannot be used with url", f.key)
		case "args", "cwd", "env", "passEnv", "stdoutNoise", "maxLineBytes":
			p.errf(f.k, ff, "remove it; it applies to local (command) servers only", "%s cannot be used with url", f.key)
		}
	}
	if s.URL == "" && p.errors == 0 {
		p.errf(urlKV.v, joinField(field, "url"), "write an absolute http:// or https:// URL", "url is empty")
	}
	if o := s.OAuth; o != nil && o.Issuer != "" && strings.HasPrefix(strings.ToLower(s.URL), "https:") && !strings.HasPrefix(strings.ToLower(o.Issuer), "https:") {
		n := urlKV.v
		for _, f := range pairs {
			if f.key == "oauth" {
				n = f.v
				for i := 0; i+1 < len(f.v.Content); i += 2 {
					if f.v.Content[i].Value == "issuer" {
						n = f.v.Content[i+1]
					}
				}
			}
		}
		p.errf(n, joinField(field, "oauth.issuer"), "write the https issuer; sluice never sends an https server's codes and tokens over plain http", "issuer %q is plain http for an https server", truncate(o.Issuer, 80))
		o.Issuer = ""
	}
	return true
}

func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func (p *parser) headers(n *yaml.Node, field string) map[string]string {
	out := map[string]string{}
	pairs, dup, ok := p.mapping(n, field)
	if !ok {
		return out
	}
	if len(n.Content)/2 > MaxHeaders {
		p.errf(n, field, fmt.Sprintf("keep at most %d headers", MaxHeaders), "has %d headers, over the cap of %d", len(n.Content)/2, MaxHeaders)
		return out
	}
	seen := map[string]bool{}
	for _, h := range pairs {
		if dup[h.key] {
			continue
		}
		ff := joinField(field, h.key)
		name := h.key
		valid := name != "" && len(name) <= MaxHeaderNameBytes
		for i := 0; valid && i < len(name); i++ {
			valid = isTokenChar(name[i])
		}
		if !valid {
			p.errf(h.k, field, "use letters, digits and - (an HTTP header name)", "header name %q is not a valid HTTP header name", truncate(name, 40))
			continue
		}
		canon := canonicalHeader(name)
		if reservedHeaders[canon] {
			p.errf(h.k, ff, "remove it; the transport sets it", "header %s is set by the transport and cannot be declared", canon)
			continue
		}
		if seen[canon] {
			p.errf(h.k, ff, "declare each header once", "header %s is declared twice (header names are case-insensitive)", canon)
			continue
		}
		seen[canon] = true
		v, ok := p.str(h.v, ff, MaxHeaderValueBytes)
		if !ok {
			continue
		}
		if strings.ContainsAny(v, "\r\n") {
			p.errf(h.v, ff, "put the value on one line", "header value contains CR or LF, which would inject another header")
			continue
		}
		if hasControl(strings.ReplaceAll(v, "\t", " ")) {
			p.errf(h.v, ff, "remove control characters", "header value contains a control character")
			continue
		}
		if err := scanRefs(v, func(string) {}, func(string) {}); err != nil {
			p.errf(h.v, ff, "write references as ${env:NAME}; write $${ for a literal ${", "%v", err)
			continue
		}
		if p.scope == ScopeProject && canon == "Authorization" && !strings.Contains(v, "${env:") {
			p.warnf(h.v, ff, "write the credential as a reference, e.g. \"Bearer ${env:TOKEN}\"", "a literal credential in a project file is shared with everyone who clones it")
		}
		out[name] = v
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// canonicalHeader is textproto's canonical form (X-Team, Www-Authenticate).
func canonicalHeader(s string) string {
	b := []byte(strings.ToLower(s))
	upper := true
	for i, c := range b {
		if upper && c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
		upper = c == '-'
	}
	return string(b)
}

func (p *parser) oauth(n *yaml.Node, field string) *OAuth {
	o := &OAuth{Scopes: []string{}}
	pairs, dup, ok := p.mapping(n, field)
	if !ok {
		return o
	}
	for _, f := range pairs {
		if dup[f.key] {
			continue
		}
		ff := joinField(field, f.key)
		switch f.key {
		case "clientId":
			if v, ok := p.str(f.v, ff, MaxOAuthValueBytes); ok {
				if v == "" || hasControl(v) {
					p.errf(f.v, ff, "write the client id the authorization server issued", "clientId is empty or contains a control character")
				} else {
					o.ClientID = v
				}
			}
		case "clientSecret", "privateKey":
			v, ok := p.str(f.v, ff, MaxOAuthValueBytes)
			if !ok {
				continue
			}
			if err := scanRefs(v, func(string) {}, func(string) {}); err != nil {
				p.errf(f.v, ff, "write references as ${env:NAME}", "%v", err)
				continue
			}
			if !strings.Contains(v, "${env:") {
				if p.scope == ScopeProject {
					p.errf(f.v, ff, "write it as a reference: ${env:NAME}", "a literal %s in a project file would be shared with everyone who clones it", f.key)
					continue
				}
				p.warnf(f.v, ff, "write it as a reference: ${env:NAME}", "%s is a literal; a reference keeps it out of the file", f.key)
			}
			if f.key == "clientSecret" {
				o.ClientSecret = v
			} else {
				o.PrivateKey = v
			}
		case "scopes":
			if v, ok := p.strList(f.v, ff, MaxScopes, MaxScopeBytes); ok {
				for i, sc := range v {
					if sc == "" || strings.ContainsAny(sc, " \t\"\\") || hasControl(sc) {
						p.errf(f.v.Content[i], fmt.Sprintf("%s[%d]", ff, i), "list one scope per item, without spaces or quotes", "scope %q is not a valid OAuth scope token", truncate(sc, 40))
					}
				}
				o.Scopes = v
			}
		case "grant":
			if v, ok := p.enum(f.v, ff, GrantAuthorizationCode, GrantClientCredentials); ok {
				o.Grant = v
			}
		case "tokenAuthMethod":
			if v, ok := p.enum(f.v, ff, AuthNone, AuthSecretBasic, AuthSecretPost, AuthPrivateKeyJWT); ok {
				o.TokenAuthMethod = v
			}
		case "clientMetadataUrl":
			if v, ok := p.str(f.v, ff, MaxURLBytes); ok {
				u, err := url.Parse(v)
				if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" || u.User != nil || u.Fragment != "" {
					p.errf(f.v, ff, "write the https URL (with a path) that serves this client's metadata document", "clientMetadataUrl %q is not an https URL with a path", truncate(v, 80))
				} else {
					o.ClientMetadataURL = v
				}
			}
		case "redirectPort":
			if v, ok := p.integer(f.v, ff, 1024, 65535); ok {
				o.RedirectPort = int(v)
			}
		case "issuer":
			if v, ok := p.str(f.v, ff, MaxURLBytes); ok {
				u, err := url.Parse(v)
				switch {
				case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Opaque != "":
					p.errf(f.v, ff, "write the authorization server's issuer URL exactly as its metadata states it, e.g. https://auth.example.com", "issuer %q is not an absolute http(s) URL", truncate(v, 80))
				case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(v, "#"):
					p.errf(f.v, ff, "remove the user:password@, query and fragment; an issuer identifier has none (RFC 8414 §2)", "issuer %q has userinfo, a query or a fragment", truncate(v, 80))
				default:
					o.Issuer = v
				}
			}
		default:
			p.unknown(f.k, field, f.key, oauthKeys)
		}
	}
	if o.Grant == "" {
		o.Grant = GrantAuthorizationCode
	}
	if o.Grant == GrantClientCredentials {
		if o.ClientID == "" {
			p.errf(n, joinField(field, "clientId"), "add the client id the authorization server issued", "the client_credentials grant needs a clientId")
		}
		if o.ClientSecret == "" && o.PrivateKey == "" {
			p.errf(n, field, "add clientSecret: ${env:NAME} (or privateKey for private_key_jwt)", "the client_credentials grant needs a clientSecret or a privateKey")
		}
	}
	if o.TokenAuthMethod == AuthPrivateKeyJWT && o.PrivateKey == "" {
		p.errf(n, joinField(field, "privateKey"), "add privateKey: ${env:NAME} holding a PEM key", "tokenAuthMethod private_key_jwt needs a privateKey")
	}
	if (o.TokenAuthMethod == AuthSecretBasic || o.TokenAuthMethod == AuthSecretPost) && o.ClientSecret == "" {
		p.errf(n, joinField(field, "clientSecret"), "add clientSecret: ${env:NAME}", "tokenAuthMethod %s needs a clientSecret", o.TokenAuthMethod)
	}
	return o
}

// remoteDigestFields are bound for url servers, after DigestFields (whose
// stdio members are then empty).
var remoteDigestFields = []string{"url", "headers", "transport", "oauth"}

// encRemote encodes one remote field for the digest; see encField.
func (s *Server) encRemote(b []byte, name string) []byte {
	str := func(b []byte, v string) []byte {
		b = binary.AppendUvarint(b, uint64(len(v)))
		return append(b, v...)
	}
	switch name {
	case "url":
		b = str(b, s.URL)
	case "headers":
		keys := make([]string, 0, len(s.Headers))
		for k := range s.Headers {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return canonicalHeader(keys[i]) < canonicalHeader(keys[j]) })
		b = binary.AppendUvarint(b, uint64(len(keys)))
		for _, k := range keys {
			b = str(str(b, canonicalHeader(k)), s.Headers[k])
		}
	case "transport":
		b = str(b, s.Transport)
	case "oauth":
		if s.OAuth == nil {
			return str(b, "")
		}
		o := s.OAuth
		b = str(b, "oauth")
		for _, v := range []string{o.ClientID, o.ClientSecret, o.Grant, o.TokenAuthMethod, o.PrivateKey, o.ClientMetadataURL, strconv.Itoa(o.RedirectPort)} {
			b = str(b, v)
		}
		b = binary.AppendUvarint(b, uint64(len(o.Scopes)))
		for _, sc := range o.Scopes {
			b = str(b, sc)
		}
		if o.Issuer != "" {
			// only when set: a declaration without a pin keeps the
			// digest (and trust) it had before the field existed
			b = str(str(b, "issuer"), o.Issuer)
		}
	}
	return b
}

// ExpandHeaders expands ${env:NAME} references in a remote server's
// headers. Errors name the server, the header and the variable, never a
// value.
func (s *Server) ExpandHeaders(lookup func(string) (string, bool)) (map[string]string, error) {
	out, err := ExpandEnv(s.Headers, lookup)
	if e, ok := err.(*EnvRefError); ok {
		e.Server = s.ID
	}
	if err != nil {
		return nil, err
	}
	for k, v := range out {
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("server %s: header %s: the value from the environment contains CR, LF or NUL", s.ID, k)
		}
	}
	return out, nil
}
