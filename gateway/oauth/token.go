package oauth

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"sluice/gateway/remote"
)

const maxTokenResponseBytes = 64 << 10

// maxExpiresIn caps a token's announced lifetime (ten years, in seconds).
const maxExpiresIn = 10 * 365 * 24 * 3600

// Token endpoint authentication methods.
const (
	methodNone   = "none"
	methodBasic  = "client_secret_basic"
	methodPost   = "client_secret_post"
	methodJWT    = "private_key_jwt"
	assertionJWT = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
)

// client is the identity used at the token endpoint.
type client struct {
	id, secret, method string
	key                crypto.Signer // private_key_jwt
	keyAlg             string
}

// chooseMethod picks the token endpoint auth method: the declared one,
// else the best the server supports for what the client holds.
func chooseMethod(declared string, supported []string, hasSecret, hasKey bool) string {
	if declared != "" {
		return declared
	}
	has := func(m string) bool {
		if len(supported) == 0 {
			return m == methodBasic || m == methodNone // RFC 8414 default: client_secret_basic
		}
		for _, s := range supported {
			if s == m {
				return true
			}
		}
		return false
	}
	switch {
	case hasKey && has(methodJWT):
		return methodJWT
	case hasSecret && has(methodBasic):
		return methodBasic
	case hasSecret && has(methodPost):
		return methodPost
	case hasSecret:
		return methodBasic
	}
	return methodNone
}

// assertion builds a private_key_jwt client assertion (RFC 7523) for aud.
func (c *client) assertion(aud string) (string, error) {
	if c.key == nil {
		return "", errors.New("oauth: private_key_jwt needs a private key")
	}
	header, _ := json.Marshal(map[string]string{"alg": c.keyAlg, "typ": "JWT"})
	jti := make([]byte, 16)
	rand.Read(jti)
	now := time.Now()
	claims, _ := json.Marshal(map[string]any{
		"iss": c.id, "sub": c.id, "aud": aud,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"jti": base64.RawURLEncoding.EncodeToString(jti),
	})
	signing := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(claims)
	var sig []byte
	var err error
	switch k := c.key.(type) {
	case ed25519.PrivateKey:
		sig = ed25519.Sign(k, []byte(signing))
	case *rsa.PrivateKey:
		h := sha256.Sum256([]byte(signing))
		sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, h[:])
	case *ecdsa.PrivateKey:
		h := sha256.Sum256([]byte(signing))
		var r, s *big.Int
		r, s, err = ecdsa.Sign(rand.Reader, k, h[:])
		if err == nil {
			n := (k.Curve.Params().BitSize + 7) / 8
			sig = make([]byte, 2*n)
			r.FillBytes(sig[:n])
			s.FillBytes(sig[n:])
		}
	default:
		return "", errors.New("oauth: unsupported private key type")
	}
	if err != nil {
		return "", err
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// parseKey reads a PEM private key (PKCS#8, PKCS#1 RSA, SEC1 EC) and names
// its JWS algorithm.
func parseKey(pemText string) (crypto.Signer, string, error) {
	blk, _ := pem.Decode([]byte(pemText))
	if blk == nil {
		return nil, "", errors.New("oauth: privateKey is not PEM")
	}
	var k any
	var err error
	switch blk.Type {
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(blk.Bytes)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(blk.Bytes)
	default:
		k, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
	}
	if err != nil {
		return nil, "", fmt.Errorf("oauth: privateKey: %v", err)
	}
	switch k := k.(type) {
	case *rsa.PrivateKey:
		return k, "RS256", nil
	case *ecdsa.PrivateKey:
		switch k.Curve.Params().BitSize {
		case 256:
			return k, "ES256", nil
		case 384:
			return k, "ES384", nil
		}
		return nil, "", errors.New("oauth: privateKey: only P-256 and P-384 EC keys are supported")
	case ed25519.PrivateKey:
		return k, "EdDSA", nil
	}
	return nil, "", errors.New("oauth: privateKey: unsupported key type")
}

// authParams adds the client authentication to a token request.
func (c *client) authParams(req *http.Request, form url.Values, aud string) error {
	switch c.method {
	case methodBasic:
		req.SetBasicAuth(url.QueryEscape(c.id), url.QueryEscape(c.secret))
	case methodPost:
		form.Set("client_id", c.id)
		form.Set("client_secret", c.secret)
	case methodJWT:
		a, err := c.assertion(aud)
		if err != nil {
			return err
		}
		form.Set("client_id", c.id)
		form.Set("client_assertion_type", assertionJWT)
		form.Set("client_assertion", a)
	default:
		form.Set("client_id", c.id)
	}
	return nil
}

// tokenResponse is RFC 6749 §5.1.
type tokenResponse struct {
	AccessToken  string          `json:"access_token"`
	TokenType    string          `json:"token_type"`
	ExpiresIn    json.Number     `json:"expires_in"`
	RefreshToken string          `json:"refresh_token"`
	Scope        string          `json:"scope"`
	Error        string          `json:"error"`
	ErrorDesc    string          `json:"error_description"`
	Extra        json.RawMessage `json:"-"`
}

// post sends a token-endpoint form and decodes the answer. It is used for
// refresh (x/oauth2 cannot add the RFC 8707 resource to a refresh) and for
// private_key_jwt grants.
func (a *Authorizer) post(ctx context.Context, endpoint, aud string, c *client, form url.Values) (*oauth2.Token, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, nil)
	if err != nil {
		return nil, "", err
	}
	if err := c.authParams(req, form, aud); err != nil {
		return nil, "", err
	}
	body := form.Encode()
	req.Body = io.NopCloser(strings.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, "", remote.HideURLError(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponseBytes+1))
	if err != nil {
		return nil, "", err
	}
	if len(b) > maxTokenResponseBytes {
		return nil, "", &TokenError{Endpoint: "token", Status: resp.StatusCode, Description: "response over the size cap"}
	}
	var tr tokenResponse
	jerr := json.Unmarshal(b, &tr)
	if resp.StatusCode != http.StatusOK || tr.Error != "" || jerr != nil || tr.AccessToken == "" {
		te := &TokenError{Endpoint: "token", Status: resp.StatusCode, Code: tr.Error, Description: shorten(tr.ErrorDesc)}
		if jerr != nil && te.Description == "" {
			te.Description = "the response is not JSON"
		}
		return nil, "", te
	}
	if tr.TokenType != "" && !strings.EqualFold(tr.TokenType, "bearer") {
		return nil, "", &TokenError{Endpoint: "token", Status: resp.StatusCode, Description: "token_type " + shorten(tr.TokenType) + " is not Bearer"}
	}
	t := &oauth2.Token{AccessToken: tr.AccessToken, TokenType: "Bearer", RefreshToken: tr.RefreshToken}
	if n, err := tr.ExpiresIn.Int64(); err == nil && n > 0 {
		// Capped: a lifetime past a Duration's range would wrap into
		// the past and make every request refresh again.
		t.Expiry = time.Now().Add(time.Duration(min(n, maxExpiresIn)) * time.Second)
	}
	return t, tr.Scope, nil
}

func shorten(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// exchange trades an authorization code for tokens (x/oauth2 carries the
// PKCE verifier and the resource).
func (a *Authorizer) exchange(ctx context.Context, d *discovery, c *client, code, redirect, verifier string) (*oauth2.Token, error) {
	if c.method == methodJWT {
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect},
			"code_verifier": {verifier}, "resource": {d.resource}}
		t, _, err := a.post(ctx, d.as.TokenEndpoint, d.issuerOrToken(), c, form)
		return t, err
	}
	cfg := a.oauth2Config(d, c, redirect)
	t, err := cfg.Exchange(a.httpCtx(ctx), code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", d.resource))
	if err != nil {
		return nil, wrapOAuth2(err)
	}
	return t, nil
}

func (d *discovery) issuerOrToken() string {
	if d.issuer != "" {
		return d.issuer
	}
	return d.as.TokenEndpoint
}

func (a *Authorizer) oauth2Config(d *discovery, c *client, redirect string) *oauth2.Config {
	style := oauth2.AuthStyleInParams
	secret := ""
	switch c.method {
	case methodBasic:
		style, secret = oauth2.AuthStyleInHeader, c.secret
	case methodPost:
		secret = c.secret
	}
	return &oauth2.Config{
		ClientID: c.id, ClientSecret: secret, RedirectURL: redirect, Scopes: d.scopes,
		Endpoint: oauth2.Endpoint{AuthURL: d.as.AuthorizationEndpoint, TokenURL: d.as.TokenEndpoint, AuthStyle: style},
	}
}

func (a *Authorizer) httpCtx(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, a.hc)
}

// clientCredentials gets a token with the client_credentials grant.
func (a *Authorizer) clientCredentials(ctx context.Context, d *discovery, c *client) (*oauth2.Token, error) {
	if c.method == methodJWT {
		form := url.Values{"grant_type": {"client_credentials"}, "resource": {d.resource}}
		if len(d.scopes) > 0 {
			form.Set("scope", strings.Join(d.scopes, " "))
		}
		t, _, err := a.post(ctx, d.as.TokenEndpoint, d.issuerOrToken(), c, form)
		return t, err
	}
	style := oauth2.AuthStyleInHeader
	if c.method == methodPost {
		style = oauth2.AuthStyleInParams
	}
	cc := clientcredentials.Config{ClientID: c.id, ClientSecret: c.secret, TokenURL: d.as.TokenEndpoint, Scopes: d.scopes,
		EndpointParams: url.Values{"resource": {d.resource}}, AuthStyle: style}
	t, err := cc.Token(a.httpCtx(ctx))
	if err != nil {
		return nil, wrapOAuth2(err)
	}
	return t, nil
}

// refresh redeems a refresh token; with rotation the answer carries a new
// refresh token, which replaces the old one (kept when none is returned).
func (a *Authorizer) refresh(ctx context.Context, r *record, c *client) (*oauth2.Token, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r.RefreshToken}, "resource": {canonicalResource(a.resource)}}
	aud := r.Issuer
	if aud == "" {
		aud = r.TokenEndpoint
	}
	t, _, err := a.post(ctx, r.TokenEndpoint, aud, c, form)
	if err != nil {
		return nil, err
	}
	if t.RefreshToken == "" {
		t.RefreshToken = r.RefreshToken
	}
	return t, nil
}

func wrapOAuth2(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		return &TokenError{Endpoint: "token", Status: status, Code: re.ErrorCode, Description: shorten(re.ErrorDescription)}
	}
	return err
}

// register performs dynamic client registration (RFC 7591) for a public
// native client with the loopback redirect.
func (a *Authorizer) register(ctx context.Context, d *discovery, redirect string) (*client, error) {
	meta := map[string]any{
		"client_name":                a.cfg.ClientName,
		"redirect_uris":              []string{redirect},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": methodNone,
		"application_type":           "native",
	}
	if len(d.scopes) > 0 {
		meta["scope"] = strings.Join(d.scopes, " ")
	}
	b, _ := json.Marshal(meta)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.as.RegistrationEndpoint, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, remote.HideURLError(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponseBytes+1))
	if err != nil {
		return nil, err
	}
	var out struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		Method       string `json:"token_endpoint_auth_method"`
		Error        string `json:"error"`
		ErrorDesc    string `json:"error_description"`
	}
	jerr := json.Unmarshal(body, &out)
	if resp.StatusCode/100 != 2 || jerr != nil || out.ClientID == "" {
		return nil, &TokenError{Endpoint: "registration", Status: resp.StatusCode, Code: out.Error, Description: shorten(out.ErrorDesc)}
	}
	m := out.Method
	if m == "" {
		m = methodNone
		if out.ClientSecret != "" {
			m = methodBasic
		}
	}
	return &client{id: out.ClientID, secret: out.ClientSecret, method: m}, nil
}
