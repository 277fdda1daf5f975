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
	// ErrCallback: the authorization redirect carried an error, a wrong
	// state, or a wrong issuer.
	ErrCallback = errors.New("oauth: authorization response refused")
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
