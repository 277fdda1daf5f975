// Package oauth is sluice's MCP authorization client: it gets, stores and
// refreshes the bearer tokens remote servers ask for.
//
// It owns discovery (the 401's WWW-Authenticate, RFC 9728 protected
// resource metadata, RFC 8414 / OpenID Connect authorization server
// metadata with the issuer check), the client identity (declared, a Client
// ID Metadata Document, or RFC 7591 dynamic registration bound to the
// issuer), the authorization code grant with PKCE S256 and the RFC 8707
// resource indicator through a loopback redirect with the RFC 9207 iss
// check, the client-credentials grant (client_secret_basic, _post and
// private_key_jwt), refresh with rotating refresh tokens, step-up on
// insufficient_scope, and the token file (0600, atomic, one per server and
// URL). Authorizer implements gateway/remote's Authorizer.
//
// It is the only package that imports golang.org/x/oauth2 (PKCE, the
// authorization URL, the code exchange and the client-credentials grant),
// and no x/oauth2 type appears in its API. It imports gateway/remote for the
// SSRF-guarded HTTP client and the Authorizer contract, and nothing else of
// sluice; it must never import the gateway root.
//
// # Why every OAuth request goes through the SSRF guard
//
// Metadata URLs come from the remote server (resource_metadata,
// authorization_servers, endpoints): a hostile server could point them at
// 169.254.169.254 or the operator's intranet. Every request uses the same
// guarded client as the MCP traffic, with the same allowPrivate opt-out.
//
// # Why an https server's authorization server must be https too
//
// The same metadata (or a 401's resource_metadata, which says where that
// metadata lives) could name a plain-http authorization server, endpoint
// or metadata document for an https server: codes, refresh tokens and client secrets
// would then cross the network in clear text although the declaration
// asked for TLS. Discovery refuses that downgrade before any request to
// the plain-http side; a server declared over http (a local one) keeps
// http endpoints.
//
// # Why refresh is our own request
//
// x/oauth2 refreshes without extra parameters, but RFC 8707 wants the
// resource on every token request, and the MCP spec requires it. The
// refresh is one form POST; it runs under a file lock and re-reads the
// token file first, because with rotating refresh tokens two processes
// (a CLI call and sluice serve) refreshing at once would leave one with a
// revoked token, and the user re-authorizing every few hours.
//
// # Why a new authorization server drops the stored tokens
//
// Tokens and a dynamic registration are bound to the authorization server
// that issued them (SEP-2352). When a 401's protected resource metadata
// names another one, refreshing at the old server would only yield tokens
// the resource no longer accepts, and presenting the old client id to the
// new server would leak it; so both are dropped and the next
// authorization registers afresh. The scopes stay: they are the
// resource's.
//
// # Why declared client credentials stay with their authorization server
//
// A declared client secret (or key) is a credential at one authorization
// server, often good for more than this resource. The client-credentials
// grant runs without the user, and every 401 re-runs discovery from
// metadata the remote server controls (its resource_metadata may live on
// any origin); so once the credentials have been used with an issuer,
// a grant that discovers another one is refused instead of posting the
// secret there. Only `sluice auth` (the operator, on purpose) accepts the
// new server; an in-place login would show nobody anything first.
//
// # Why a declaration can pin its authorization server
//
// Without a pin, the first use trusts whichever authorization server the
// remote server's metadata names: the first client-credentials grant
// posts the declared secret there before any issuer has been seen. The
// declaration's oauth.issuer (Config.Issuer) is the issuer identifier the
// operator expects; discovery picks it from the metadata's list or
// refuses (ErrIssuerMismatch), on first use, on every rediscovery and
// in `sluice auth` alike, and a token file from another issuer is not
// used (neither presented nor refreshed). The comparison is exact, as
// RFC 8414 §3.3 requires of the metadata itself.
//
// # Why re-authorization can run inside a request
//
// A step-up (403 insufficient_scope) or a moved authorization server needs
// the user once more. With Config.Interactive the refused request runs
// the flow itself and goes on, as a desktop MCP client would; sluice sets
// it only when a person is at the terminal. Logins are serialized and
// bounded, and a scope already asked for and still refused is reported
// instead of asked for again, so a server that never accepts a token
// cannot keep a browser opening.
//
// # Why a declared secret never reaches the token file
//
// The declaration holds a reference (${env:NAME}); writing the resolved
// secret next to the tokens would copy it somewhere its owner does not
// look. Only a secret issued by dynamic registration is stored, since
// nothing else holds it.
package oauth
