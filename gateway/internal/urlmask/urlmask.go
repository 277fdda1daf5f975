// Package urlmask decides which parts of a url may carry a credential and
// hides them where a url is shown to a person or to a model: the CLI's
// listings, the dashboard and the messages of errors. One rule for every
// surface, so a key that one of them hides is not printed by another.
//
// It imports nothing but the standard library, so gateway/admin (which
// imports no other package of sluice's) can use it too.
//
// # Why path segments are judged by their shape
//
// Hosted servers and webhooks often carry their key in the path
// (https://host/v1/sk_live_.../mcp, https://hooks.example/services/T0/B0/
// <secret>). A path is also where a url says what it is, so hiding every
// segment would leave nothing to recognise a server by. A segment is
// hidden when it has a known token prefix (after undoing %-escapes), when
// one of its pieces is a long run mixing letters and digits, or a longer
// one switching case as random letters do (what generated keys look like
// and words, CamelCase names and uuids do not), when it is NAME=VALUE
// with a key word for a name, or when the segment before it names a key
// or token (/key/<value>). A word, a version (v1), a date or a short id
// stays. A fragment that is more than a plain word is hidden whole.
package urlmask

import (
	"net/url"
	"strings"
)

// PlainQueryItem reports whether a bare query item reads as a flag (?debug,
// ?read-only): up to 16 letters, - and _, starting with a letter. Any
// other bare item may be a key (?sk_live_...) and is hidden.
func PlainQueryItem(p string) bool {
	if p == "" || len(p) > 16 {
		return p == ""
	}
	for i := 0; i < len(p); i++ {
		c := p[i] | 0x20
		if !(c >= 'a' && c <= 'z') && (i == 0 || (p[i] != '-' && p[i] != '_')) {
			return false
		}
	}
	return true
}

// tokenPrefixes are the prefixes of well-known credential formats.
var tokenPrefixes = []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "sk-", "sk_live_", "sk_test_",
	"pk_live_", "rk_live_", "xoxa-", "xoxb-", "xoxp-", "xoxr-", "AKIA", "ASIA", "AIza", "ya29.", "eyJ", "npm_", "hf_", "pypi-",
	"dop_v1_", "shpat_", "whsec_", "SG."}

// SecretSegment reports whether the path segment seg (as written in the
// url, possibly %-escaped) looks like a credential; prev is the segment
// before it ("" for the first). Escapes are undone first, so %73k_live_
// is sk_live_; the pieces judged are the runs of letters and digits
// between any other bytes, so a key joined by : + = or , (a bot's
// id:secret, base64 with padding) is judged like one joined by - or _;
// a NAME=VALUE segment whose name is a key word hides its value.
func SecretSegment(prev, seg string) bool {
	if u, ok := unescape(seg); ok {
		seg = u
	}
	if p, ok := unescape(prev); ok {
		prev = p
	}
	if len(seg) < 8 {
		return false
	}
	for _, p := range tokenPrefixes {
		if len(seg) >= len(p)+8 && strings.HasPrefix(seg, p) {
			return true
		}
	}
	if keyWord(prev) && !plainWord(seg) {
		return true
	}
	for _, item := range strings.FieldsFunc(seg, func(r rune) bool { return r == ';' || r == ',' || r == '&' }) {
		if name, val, ok := strings.Cut(item, "="); ok && keyWord(name) && val != "" {
			return true
		}
	}
	for _, piece := range strings.FieldsFunc(seg, func(r rune) bool { return !alnum(r) }) {
		if len(piece) >= 12 && mixed(piece) || len(piece) >= 20 && mixedCase(piece) {
			return true
		}
	}
	return false
}

// unescape undoes a segment's %-escapes; false when it has none or they
// are not valid.
func unescape(s string) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, false
	}
	u, err := url.PathUnescape(s)
	return u, err == nil
}

func alnum(r rune) bool { return r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

// mixedCase: letters only, switching case at least once every three
// letters on average: what a generated key without digits looks like
// (a webhook's secret), which a CamelCase name does not (it switches once
// a word).
func mixedCase(s string) bool {
	switches := 0
	for i := 1; i < len(s); i++ {
		a, b := s[i-1], s[i]
		if !(a|0x20 >= 'a' && a|0x20 <= 'z') {
			return false
		}
		if (a >= 'a') != (b >= 'a') {
			switches++
		}
	}
	return switches*3 >= len(s)
}

// keyWord: a segment that names what follows it as a key.
func keyWord(s string) bool {
	switch strings.ToLower(s) {
	case "key", "keys", "apikey", "api-key", "api_key", "token", "tokens", "secret", "secrets", "access_token", "access-token", "auth-token", "auth_token",
		"password", "passwd", "pass", "sig", "signature", "auth", "code", "session", "sessionid", "session_id":
		return true
	}
	return false
}

// plainWord: lowercase letters and - _ only (a name such as list or
// read-only, not a value).
func plainWord(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// mixed: letters and digits only, at least two of each: the shape of a
// generated key rather than a word or a number.
func mixed(s string) bool {
	letters, digits := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letters++
		default:
			return false
		}
	}
	return letters >= 2 && digits >= 2
}

// HidePath returns raw with every segment of its path that SecretSegment
// flags replaced by hidden, and a fragment that is not a plain word (see
// PlainQueryItem) replaced by hidden too; everything else, query
// included, is kept as written. raw need not parse: the path is what follows scheme://host (or
// the start, for a url without a scheme) up to ? or #.
func HidePath(raw, hidden string) string {
	if i := strings.IndexByte(raw, '#'); i >= 0 && !PlainQueryItem(raw[i+1:]) {
		raw = raw[:i+1] + hidden
	}
	start := 0
	if i := strings.Index(raw, "://"); i >= 0 {
		rest := raw[i+3:]
		j := strings.IndexAny(rest, "/?#")
		if j < 0 || rest[j] != '/' {
			return raw
		}
		start = i + 3 + j
	}
	end := len(raw)
	if j := strings.IndexAny(raw[start:], "?#"); j >= 0 {
		end = start + j
	}
	segs := strings.Split(raw[start:end], "/")
	changed := false
	for i, s := range segs {
		prev := ""
		if i > 0 {
			prev = segs[i-1]
		}
		if SecretSegment(prev, s) {
			segs[i], changed = hidden, true
		}
	}
	if !changed {
		return raw
	}
	return raw[:start] + strings.Join(segs, "/") + raw[end:]
}
