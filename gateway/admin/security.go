package admin

// This file is the dashboard's gate, in the order every request meets
// it: loopback peer, Host, Origin, login (when a token is configured),
// and a CSRF token on every mutation. Every answer carries a strict CSP.

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"sluice/gateway/internal/urlmask"
)

// CSP allows this origin only: no inline script or style, no other
// origin for anything, no framing, forms posting back here only.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Cookie and header names.
const (
	cookieName = "sluice_admin"
	csrfHeader = "X-CSRF-Token"
	csrfField  = "_csrf"
	maxLogins  = 64 // sessions kept; the oldest is dropped beyond
	loginTTL   = 12 * time.Hour
)

type gate struct {
	remote  bool // --admin-remote: non-loopback peers admitted
	hosts   []string
	origins []string
	token   [32]byte
	hasTok  bool
	csrf    string

	mu       sync.Mutex
	sessions map[[32]byte]time.Time // sha256(cookie) -> expiry
	failed   map[string]*failures   // remote IP -> its failed logins
	now      func() time.Time
}

// failures is one peer's run of wrong tokens: beyond freeLogins each doubles the wait
// before its next attempt, up to maxLoginWait.
type failures struct {
	n    int
	next time.Time
}

const (
	maxLoginWait    = time.Minute
	maxFailedPeers  = 1024
	firstLoginDelay = time.Second
	freeLogins      = 3 // wrong tokens before the first wait
)

// loginWait is how long the peer must still wait before trying a token.
func (g *gate) loginWait(r *http.Request) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.failed[peerIP(r)]
	if f == nil {
		return 0
	}
	return max(f.next.Sub(g.now()), 0)
}

// loginFailed records a wrong token from the peer.
func (g *gate) loginFailed(r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	ip := peerIP(r)
	f := g.failed[ip]
	if f == nil {
		if len(g.failed) >= maxFailedPeers {
			// Bounded: forget the peer whose wait ends first.
			var drop string
			var at time.Time
			for k, x := range g.failed {
				if drop == "" || x.next.Before(at) {
					drop, at = k, x.next
				}
			}
			delete(g.failed, drop)
		}
		f = &failures{}
		g.failed[ip] = f
	}
	f.n++
	if f.n <= freeLogins {
		return // a typo or two costs nothing
	}
	wait := firstLoginDelay << min(f.n-freeLogins-1, 10)
	f.next = g.now().Add(min(wait, maxLoginWait))
}

func (g *gate) loginSucceeded(r *http.Request) {
	g.mu.Lock()
	delete(g.failed, peerIP(r))
	g.mu.Unlock()
}

// endSession forgets the request's session.
func (g *gate) endSession(r *http.Request) {
	c, err := r.Cookie(cookieName)
	if err != nil || c.Value == "" {
		return
	}
	k := sha256.Sum256([]byte(c.Value))
	g.mu.Lock()
	delete(g.sessions, k)
	g.mu.Unlock()
}

func peerIP(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

func newGate(o *Options) *gate {
	g := &gate{remote: o.Remote, hosts: o.AllowedHosts, origins: o.AllowedOrigins, sessions: map[[32]byte]time.Time{},
		failed: map[string]*failures{}, now: time.Now}
	if o.Token != "" {
		g.token, g.hasTok = sha256.Sum256([]byte(o.Token)), true
	}
	g.csrf = randomHex(32)
	return g
}

// NewToken returns a fresh login token for a dashboard whose operator
// configured none: 32 random bytes, hex. It is meant to live as long as
// the process and to be shown to the operator only (LoginURL).
func NewToken() string { return randomHex(32) }

// LoginURL is the address that logs a browser in to the dashboard at base
// (http://host:port) with token: the login page with the token in the
// fragment, which the browser keeps to itself (see the package doc).
func LoginURL(base, token string) string {
	return strings.TrimSuffix(base, "/") + Path + "/login#token=" + url.QueryEscape(token)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// peerAllowed is the loopback gate: the TCP peer must be loopback, and a
// request relayed by a proxy (which would look loopback) is refused too,
// unless remote access was asked for on purpose.
func (g *gate) peerAllowed(r *http.Request) bool {
	if g.remote {
		return true
	}
	if r.Header.Get("Forwarded") != "" || r.Header.Get("X-Forwarded-For") != "" {
		return false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (g *gate) hostAllowed(host string) bool {
	if host == "" {
		return false
	}
	for _, a := range g.hosts {
		if strings.EqualFold(a, host) || strings.EqualFold(a, hostname(host)) {
			return true
		}
	}
	if g.remote && len(g.hosts) == 0 {
		// Any name may reach a remote dashboard; the login stands
		// between it and the dashboard (New refuses Remote without a
		// token), and Origin must still be the request's own.
		return true
	}
	return isLoopbackName(hostname(host))
}

// originAllowed: an Origin named in AllowedOrigins, or exactly the
// request's own origin (its scheme and Host). Any other Origin, a
// loopback one on another port or scheme included, is another site.
func (g *gate) originAllowed(r *http.Request, origin string) bool {
	for _, a := range g.origins {
		if strings.EqualFold(strings.TrimSuffix(a, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.User != nil {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return strings.EqualFold(u.Scheme, scheme) && strings.EqualFold(withPort(u.Host, scheme), withPort(r.Host, scheme))
}

// withPort spells host with its port, the scheme's default when absent.
func withPort(host, scheme string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	port := "80"
	if scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), port)
}

// loggedIn: no token configured, or a live session cookie.
func (g *gate) loggedIn(r *http.Request) bool {
	if !g.hasTok {
		return true
	}
	c, err := r.Cookie(cookieName)
	if err != nil || c.Value == "" {
		return false
	}
	k := sha256.Sum256([]byte(c.Value))
	g.mu.Lock()
	defer g.mu.Unlock()
	exp, ok := g.sessions[k]
	if ok && time.Now().After(exp) {
		delete(g.sessions, k)
		return false
	}
	return ok
}

// tokenOK compares a submitted token in constant time.
func (g *gate) tokenOK(t string) bool {
	got := sha256.Sum256([]byte(strings.TrimSpace(t)))
	return g.hasTok && subtle.ConstantTimeCompare(got[:], g.token[:]) == 1
}

// newSession returns a fresh cookie value and remembers it.
func (g *gate) newSession() string {
	v := randomHex(32)
	k := sha256.Sum256([]byte(v))
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.sessions) >= maxLogins {
		var oldest [32]byte
		var at time.Time
		for s, exp := range g.sessions {
			if at.IsZero() || exp.Before(at) {
				oldest, at = s, exp
			}
		}
		delete(g.sessions, oldest)
	}
	g.sessions[k] = time.Now().Add(loginTTL)
	return v
}

// csrfOK checks the per-process token from the header or the form field.
func (g *gate) csrfOK(r *http.Request) bool {
	t := r.Header.Get(csrfHeader)
	if t == "" {
		t = r.PostFormValue(csrfField)
	}
	return t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(g.csrf)) == 1
}

func hostname(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

func isLoopbackName(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Mask hides a declared value's literal parts and keeps its references
// to variables (they hold no value): "Bearer ${env:TOKEN}" is shown as
// "••••${env:TOKEN}". A hidden part is shown as four dots whatever its
// length, so the length is not told either.
func Mask(v string) string {
	var b strings.Builder
	lit := false
	hide := func() {
		if !lit {
			b.WriteString("••••")
			lit = true
		}
	}
	for i := 0; i < len(v); {
		switch {
		case strings.HasPrefix(v[i:], "$${"):
			hide()
			i += 3
		case strings.HasPrefix(v[i:], "${"):
			end := strings.IndexByte(v[i:], '}')
			if end < 0 {
				hide()
				i = len(v)
				continue
			}
			b.WriteString(v[i : i+end+1])
			lit = false
			i += end + 1
		default:
			hide()
			i++
		}
	}
	return b.String()
}

// MaskURL hides the values of a url's query (Mask: literal parts as
// four dots, references kept) and the segments of its path that look
// like a key (urlmask, the rule of the CLI and of remote's errors), and
// keeps everything else, parameter names included: a hosted server often
// takes its key there.
func MaskURL(u string) string {
	u = urlmask.HidePath(u, "••••")
	base, rest, ok := strings.Cut(u, "?")
	if !ok {
		return u
	}
	query, frag, hasFrag := strings.Cut(rest, "#")
	parts := strings.Split(query, "&")
	for i, p := range parts {
		if k, v, ok := strings.Cut(p, "="); ok && v != "" {
			parts[i] = k + "=" + Mask(v)
		} else if !ok && !urlmask.PlainQueryItem(p) {
			parts[i] = Mask(p) // a bare item (?sk_live_...) is a value too, a flag (?debug) not
		}
	}
	out := base + "?" + strings.Join(parts, "&")
	if hasFrag {
		out += "#" + frag
	}
	return out
}

func maskMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = Mask(v)
	}
	return out
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
