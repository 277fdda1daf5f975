package oauth

import (
	"errors"
	"fmt"
)

// Sentinels for branch points.
var (
	// ErrLoginRequired: no usable token and none can be had without the
	// user; `sluice auth SERVER` runs the interactive flow.
	ErrLoginRequired = errors.New("oauth: login required")
	// ErrDiscovery: the server's or the authorization server's metadata is
	// missing, malformed, or fails a check (issuer, resource, PKCE).
	ErrDiscovery = errors.New("oauth: discovery failed")
	// ErrCallback: the authorization redirect (one with this login's
	// state; any other request is ignored, a stateless refusal only
	// reported) carried an error or a wrong issuer, or the login timed
	// out after a stateless refusal.
	ErrCallback = errors.New("oauth: authorization response refused")
	// ErrIssuerChanged: the server's metadata names another authorization
	// server than the one the declared client credentials were used with;
	// only an explicit `sluice auth` sends them to the new one (never an
	// in-place login, which shows the user nothing for this grant).
	ErrIssuerChanged = errors.New("oauth: the authorization server changed")
	// ErrIssuerMismatch: the server's metadata names another
	// authorization server than the declaration's oauth.issuer; nothing
	// is sent to it, not even by `sluice auth`.
	ErrIssuerMismatch = errors.New("oauth: not the declared authorization server")
)

// TokenError is an error response from a token or registration endpoint
// (RFC 6749 §5.2). Description is the server's text, shortened; it never
// holds a token.
type TokenError struct {
	Endpoint    string // "token" or "registration"
	Status      int
	Code        string // error
	Description string // error_description
}

func (e *TokenError) Error() string {
	s := fmt.Sprintf("oauth: %s endpoint answered HTTP %d", e.Endpoint, e.Status)
	if e.Code != "" {
		s += ": " + e.Code
	}
	if e.Description != "" {
		s += " (" + e.Description + ")"
	}
	return s
}
