package remote

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"sluice/gateway/internal/urlmask"
)

// maxRedirects bounds the redirects one request may follow.
const maxRedirects = 5

type blockedRange struct {
	p    netip.Prefix
	name string
}

func mustPrefixes(name string, ps ...string) []blockedRange {
	out := make([]blockedRange, 0, len(ps))
	for _, p := range ps {
		out = append(out, blockedRange{netip.MustParsePrefix(p), name})
	}
	return out
}

// refused lists the ranges the guard refuses, most specific names first.
// Prefixes that embed an IPv4 address (IPv4-mapped, NAT64, 6to4) are not
// here: the embedded address is checked instead.
var refused = concat(
	mustPrefixes("loopback", "127.0.0.0/8", "::1/128"),
	mustPrefixes("unspecified", "0.0.0.0/8", "::/128"),
	mustPrefixes("link-local (cloud metadata lives here)", "169.254.0.0/16", "fe80::/10"),
	mustPrefixes("private", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7", "fec0::/10"),
	mustPrefixes("carrier-grade NAT (shared address space)", "100.64.0.0/10"),
	mustPrefixes("multicast", "224.0.0.0/4", "ff00::/8"),
	mustPrefixes("reserved", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4",
		"::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32", "3fff::/20", "5f00::/16"),
)

func concat(xs ...[]blockedRange) []blockedRange {
	var out []blockedRange
	for _, x := range xs {
		out = append(out, x...)
	}
	return out
}

var (
	nat64    = netip.MustParsePrefix("64:ff9b::/96")
	sixToF   = netip.MustParsePrefix("2002::/16")
	global6  = netip.MustParsePrefix("2000::/3")
	mapped4  = netip.MustParsePrefix("::ffff:0:0/96")
	metadata = map[netip.Addr]bool{
		netip.MustParseAddr("169.254.169.254"): true,
		netip.MustParseAddr("169.254.170.2"):   true,
		netip.MustParseAddr("100.100.100.200"): true,
		netip.MustParseAddr("fd00:ec2::254"):   true,
	}
)

// Refused reports whether the guard refuses a connection to a, and the name
// of the range it falls in. IPv4 addresses embedded in IPv6 (mapped, NAT64,
// 6to4) are judged by the embedded address; an IPv6 address outside global
// unicast (2000::/3) is refused as reserved.
func Refused(a netip.Addr) (string, bool) {
	a = a.WithZone("")
	if metadata[a] {
		return "a cloud metadata address", true
	}
	if a.Is6() && mapped4.Contains(a) {
		return Refused(a.Unmap())
	}
	if a.Is6() && (nat64.Contains(a) || sixToF.Contains(a)) {
		b := a.As16()
		var v4 [4]byte
		if nat64.Contains(a) {
			copy(v4[:], b[12:16])
		} else {
			copy(v4[:], b[2:6])
		}
		if name, bad := Refused(netip.AddrFrom4(v4)); bad {
			return name + " (embedded in IPv6)", true
		}
		return "", false
	}
	for _, r := range refused {
		if r.p.Contains(a) {
			return r.name, true
		}
	}
	if a.Is6() && !global6.Contains(a) {
		return "reserved", true
	}
	return "", false
}

// CheckURL validates a server URL: absolute http or https, a host, no
// userinfo (credentials belong in headers or OAuth, not in a URL that ends
// up in logs), no fragment. It does not resolve the host; the dialer checks
// the addresses at connect time.
func CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		shown := redactURL(raw)
		return nil, &URLError{URL: shown, Reason: "not a URL: " + quotedPartsOf(strings.TrimPrefix(err.Error(), "parse "+fmt.Sprintf("%q", raw)+": "), shown)}
	}
	if u.User != nil {
		return nil, &URLError{URL: redactURL(raw), Reason: "it carries userinfo (user:password@); put credentials in headers or use oauth"}
	}
	switch u.Scheme {
	case "http", "https":
	case "":
		return nil, &URLError{URL: redactURL(raw), Reason: "it is not absolute; write http:// or https://"}
	default:
		return nil, &URLError{URL: redactURL(raw), Reason: "scheme " + u.Scheme + " is not http or https"}
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, &URLError{URL: redactURL(raw), Reason: "it has no host"}
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return nil, &URLError{URL: redactURL(raw), Reason: "it has a #fragment"}
	}
	if p := u.Port(); p != "" {
		var n int
		if _, err := fmt.Sscanf(p, "%d", &n); err != nil || n < 1 || n > 65535 {
			return nil, &URLError{URL: redactURL(raw), Reason: "port " + p + " is out of range"}
		}
	}
	return u, nil
}

// redactURL drops userinfo from a URL that failed to parse or carries it,
// and hides the values of its query (a hosted server often takes its key
// there; the names stay, to tell which parameter is meant) and the
// segments of its path that look like a key (urlmask): the URL of an
// error message, which reaches logs and terminals.
// quotedPartsOf is a parse error's reason with each quoted part of the
// url it repeats (invalid port ":KEY" after host) kept only when the
// redacted url shows it too or it is too short to be a key; otherwise
// it is "…", as in the url.
func quotedPartsOf(reason, shown string) string {
	return quotedPart().ReplaceAllStringFunc(reason, func(q string) string {
		part, err := strconv.Unquote(q)
		if err != nil || len(part) < 8 || strings.Contains(shown, part) {
			return q
		}
		return `"…"`
	})
}

var quotedPart = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"(?:[^"\\]|\\.)*"`) })

func redactURL(raw string) string {
	raw = urlmask.HidePath(raw, "…")
	if i := strings.Index(raw, "://"); i >= 0 {
		rest := raw[i+3:]
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			end = len(rest)
		}
		if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
			raw = raw[:i+3] + "…@" + rest[at+1:]
			rest, end = raw[i+3:], end-(at+1)+len("…@")
		}
		// a port that is not a number is no port (a key typed after the
		// host with : for /)
		host := rest[:end]
		if c := strings.LastIndex(host, ":"); c >= 0 && c > strings.LastIndex(host, "]") && strings.Trim(host[c+1:], "0123456789") != "" {
			raw = raw[:i+3] + host[:c+1] + "…" + rest[end:]
		}
	}
	base, query, ok := strings.Cut(raw, "?")
	if !ok {
		return raw
	}
	query, _, hasFrag := strings.Cut(query, "#")
	parts := strings.Split(query, "&")
	for i, p := range parts {
		if k, v, ok := strings.Cut(p, "="); ok && v != "" {
			parts[i] = k + "=…"
		} else if !ok && !urlmask.PlainQueryItem(p) {
			parts[i] = "…" // a bare item (?sk_live_...) is a value too, a flag (?debug) not
		}
	}
	raw = base + "?" + strings.Join(parts, "&")
	if hasFrag {
		raw += "#…"
	}
	return raw
}

// HideURLError is err with the url an HTTP client error repeats (Post
// "URL": ...) shown as errors show urls: query values, userinfo and a key
// in the path hidden. Any other error is returned as is.
func HideURLError(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) || ue.URL == "" {
		return err
	}
	return &url.Error{Op: ue.Op, URL: redactURL(ue.URL), Err: ue.Err}
}

// Describe returns the URL without query and fragment, and with the
// segments of its path that look like a key hidden (urlmask), for
// messages that may reach a log or a model.
func Describe(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User = nil
	c.RawQuery = ""
	c.Fragment = ""
	return urlmask.HidePath(c.String(), "…")
}

// guardControl is the net.Dialer Control hook: it runs after DNS
// resolution, on the very address about to be connected.
func guardControl(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("remote: SSRF guard cannot parse dial address %q: %w", address, err)
	}
	if name, bad := Refused(ap.Addr()); bad {
		return &BlockedError{Addr: ap.Addr().WithZone(""), Range: name}
	}
	return nil
}

// ClientOptions configures NewHTTPClient.
type ClientOptions struct {
	// AllowPrivate turns the address check off (user-scope declarations
	// only). The scheme and redirect rules still apply.
	AllowPrivate bool
	// DialTimeout bounds one connect; default 10s.
	DialTimeout time.Duration
	// TLSConfig, if set, is used for https (tests pass a config trusting
	// their own certificate).
	TLSConfig *tls.Config
}

// NewHTTPClient returns an HTTP client whose every connection goes through
// the SSRF guard. It uses no proxy from the environment (a proxy would make
// the guard judge the proxy's address instead of the server's), follows at
// most a few redirects, only to http or https on the same origin as the
// first request, and never downgrades https to http. It has no overall
// timeout: requests are bounded by their context, since SSE streams are
// long-lived.
func NewHTTPClient(o ClientOptions) *http.Client {
	d := &net.Dialer{Timeout: o.DialTimeout, KeepAlive: 30 * time.Second}
	if d.Timeout <= 0 {
		d.Timeout = 10 * time.Second
	}
	if !o.AllowPrivate {
		d.Control = guardControl
	}
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           16,
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		TLSClientConfig:        o.TLSConfig,
	}
	return &http.Client{Transport: tr, CheckRedirect: checkRedirect}
}

// SameOriginRedirects is the redirect policy of NewHTTPClient.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("remote: stopped after %d redirects", maxRedirects)
	}
	first := via[0].URL
	u := req.URL
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("remote: redirect to scheme %q refused", u.Scheme)
	}
	if u.User != nil {
		return errors.New("remote: redirect to a URL with userinfo refused")
	}
	if first.Scheme == "https" && u.Scheme != "https" {
		return fmt.Errorf("remote: redirect from https to %s refused", Describe(u))
	}
	if !strings.EqualFold(first.Host, u.Host) && !(first.Scheme == "http" && u.Scheme == "https" && strings.EqualFold(first.Hostname(), u.Hostname())) {
		return fmt.Errorf("remote: cross-origin redirect to %s refused", Describe(u))
	}
	return nil
}

// dialErr reports whether err happened while connecting, before anything
// was written.
// certErr reports a refused server certificate: retrying cannot help.
func certErr(err error) bool {
	var ve *tls.CertificateVerificationError
	var ue x509.UnknownAuthorityError
	var he x509.HostnameError
	var ie x509.CertificateInvalidError
	return errors.As(err, &ve) || errors.As(err, &ue) || errors.As(err, &he) || errors.As(err, &ie)
}

func dialErr(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var be *BlockedError
	return errors.As(err, &be)
}
