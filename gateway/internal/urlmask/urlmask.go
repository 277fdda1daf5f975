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
// hidden when it has a known token prefix, when one of its pieces is a
// long run mixing letters and digits (what generated keys look like and
// words do not), or when the segment before it names a key or token
// (/key/<value>). A word, a version (v1), a date or a short id stays.
package urlmask

import "strings"

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
// before it ("" for the first).
func SecretSegment(prev, seg string) bool {
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
	for _, piece := range strings.FieldsFunc(seg, func(r rune) bool { return r == '-' || r == '_' || r == '.' || r == '~' }) {
		if len(piece) >= 12 && mixed(piece) {
			return true
		}
	}
	return false
}

// keyWord: a segment that names what follows it as a key.
func keyWord(s string) bool {
	switch strings.ToLower(s) {
	case "key", "keys", "apikey", "api-key", "api_key", "token", "tokens", "secret", "secrets", "access_token", "access-token", "auth-token", "auth_token":
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
// flags replaced by hidden; everything else, query included, is kept as
// written. raw need not parse: the path is what follows scheme://host (or
// the start, for a url without a scheme) up to ? or #.
func HidePath(raw, hidden string) string {
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
