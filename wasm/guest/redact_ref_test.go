package guest

// The straightforward redactor the fast one replaced, kept verbatim (names
// aside) as the reference for the differential tests: every built-in rule's
// regexp over the whole text, rule after rule, and a JSON walk that re-skips
// nested values. Redactor must produce byte-identical results.

import (
	"errors"
	"regexp"
	"strconv"
)

// A redaction rule: matches of re are replaced; when keep > 0 the first keep
// submatch groups (e.g. a "Bearer " prefix) are written back unmasked.
type refRule struct {
	name string
	re   *regexp.Regexp
	keep int
}

// refBuiltinRules are the secrets masked by default.
var refBuiltinRules = []struct {
	name, expr string
	keep       int
}{
	{"private-key", `-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*)`, 0},
	{"aws-access-key-id", `\b(?:AKIA|ASIA|ABIA|ACCA|AIDA|AROA)[0-9A-Z]{16}\b`, 0},
	{"aws-secret-access-key", `(?i)(aws.{0,20}?(?:secret|private).{0,20}?|secret_?access_?key)([\s"':=]+)[A-Za-z0-9/+=]{40}\b`, 2},
	{"github-token", `\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b`, 0},
	{"github-pat", `\bgithub_pat_[A-Za-z0-9_]{22,255}\b`, 0},
	{"gitlab-token", `\bglpat-[A-Za-z0-9_\-]{20,}`, 0},
	{"slack-token", `\bxox[abposre]-[A-Za-z0-9-]{10,}`, 0},
	{"bearer-token", `(?i)(\bbearer)(\s+)[A-Za-z0-9\-._~+/]{8,}=*`, 2},
}

// refRedactor masks secrets in the model-facing strings of MCP tool results.
type refRedactor struct {
	rules []refRule
	buf   []byte
	str   []byte
	out   []byte
}

// newRefRedactor builds a Redactor from the filter config:
//
//	{"patterns": ["regexp", ...], "disable": ["bearer-token", ...]}
//
// Extra patterns use Go regexp syntax; their whole match is masked.
func newRefRedactor(config []byte) (*refRedactor, error) {
	disabled := map[string]bool{}
	var extra []string
	if len(config) > 0 && string(SkipSpaceBytes(config)) != "null" {
		if v, ok := Lookup(config, "disable"); ok {
			if _, err := Elements(v, 0, func(s, e int) bool {
				name, err := AppendUnquote(nil, v[s:e])
				if err == nil {
					disabled[string(name)] = true
				}
				return true
			}); err != nil {
				return nil, errors.New("redact: config field disable must be an array of rule names")
			}
		}
		if v, ok := Lookup(config, "patterns"); ok {
			var perr error
			if _, err := Elements(v, 0, func(s, e int) bool {
				p, err := AppendUnquote(nil, v[s:e])
				if err != nil {
					perr = errors.New("redact: config field patterns must be an array of strings")
					return false
				}
				extra = append(extra, string(p))
				return true
			}); err != nil || perr != nil {
				if perr == nil {
					perr = errors.New("redact: config field patterns must be an array of strings")
				}
				return nil, perr
			}
		}
		if _, err := SkipValue(config, 0); err != nil || SkipSpaceBytes(config)[0] != '{' {
			return nil, errors.New("redact: config must be a JSON object")
		}
	}
	r := &refRedactor{}
	for _, b := range refBuiltinRules {
		if disabled[b.name] {
			continue
		}
		r.rules = append(r.rules, refRule{name: b.name, re: regexp.MustCompile(b.expr), keep: b.keep})
	}
	for i, p := range extra {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, errors.New("redact: patterns[" + strconv.Itoa(i) + "]: " + err.Error())
		}
		r.rules = append(r.rules, refRule{name: "pattern-" + strconv.Itoa(i), re: re})
	}
	return r, nil
}

// redactText masks secrets in s, returning the new text and whether anything
// changed.
func (r *refRedactor) redactText(s []byte) ([]byte, bool) {
	changed := false
	for _, rule := range r.rules {
		locs := rule.re.FindAllSubmatchIndex(s, -1)
		if len(locs) == 0 {
			continue
		}
		changed = true
		var out []byte
		last := 0
		for _, m := range locs {
			out = append(out, s[last:m[0]]...)
			for g := 1; g <= rule.keep && 2*g+1 < len(m); g++ {
				if m[2*g] >= 0 {
					out = append(out, s[m[2*g]:m[2*g+1]]...)
				}
			}
			out = append(out, "[REDACTED:"...)
			out = append(out, rule.name...)
			out = append(out, ']')
			last = m[1]
		}
		s = append(out, s[last:]...)
	}
	return s, changed
}

// redactString rewrites the raw JSON string value raw onto out.
func (r *refRedactor) redactString(out, raw []byte) ([]byte, bool, error) {
	var err error
	r.str, err = AppendUnquote(r.str[:0], raw)
	if err != nil {
		return out, false, err
	}
	text, changed := r.redactText(r.str)
	if !changed {
		return append(out, raw...), false, nil
	}
	return AppendQuote(out, text), true, nil
}

// redactValue copies the JSON value b[s:e] onto out, redacting every string
// value (object keys are kept).
func (r *refRedactor) redactValue(out, b []byte, s, e int) ([]byte, bool, error) {
	switch b[s] {
	case '"':
		return r.redactString(out, b[s:e])
	case '{':
		out = append(out, '{')
		any, n := false, 0
		var ierr error
		_, err := Members(b[:e], s, func(k []byte, vs, ve int) bool {
			if n > 0 {
				out = append(out, ',')
			}
			n++
			out = append(out, k...)
			out = append(out, ':')
			var ch bool
			out, ch, ierr = r.redactValue(out, b, vs, ve)
			any = any || ch
			return ierr == nil
		})
		if err == nil {
			err = ierr
		}
		return append(out, '}'), any, err
	case '[':
		out = append(out, '[')
		any, n := false, 0
		var ierr error
		_, err := Elements(b[:e], s, func(vs, ve int) bool {
			if n > 0 {
				out = append(out, ',')
			}
			n++
			var ch bool
			out, ch, ierr = r.redactValue(out, b, vs, ve)
			any = any || ch
			return ierr == nil
		})
		if err == nil {
			err = ierr
		}
		return append(out, ']'), any, err
	}
	return append(out, b[s:e]...), false, nil
}

// redactItem copies one content item, redacting its text (and an embedded
// resource's text).
func (r *refRedactor) redactItem(out, b []byte, s, e int) ([]byte, bool, error) {
	if b[s] != '{' {
		return append(out, b[s:e]...), false, nil
	}
	out = append(out, '{')
	any, n := false, 0
	var ierr error
	_, err := Members(b[:e], s, func(k []byte, vs, ve int) bool {
		if n > 0 {
			out = append(out, ',')
		}
		n++
		out = append(out, k...)
		out = append(out, ':')
		var ch bool
		switch {
		case KeyIs(k, "text") && b[vs] == '"':
			out, ch, ierr = r.redactString(out, b[vs:ve])
		case KeyIs(k, "resource") && b[vs] == '{':
			out, ch, ierr = r.redactItem(out, b, vs, ve)
		default:
			out = append(out, b[vs:ve]...)
		}
		any = any || ch
		return ierr == nil
	})
	if err == nil {
		err = ierr
	}
	return append(out, '}'), any, err
}

// redactResult masks secrets in the text of content items, the text of
// embedded resources and every string value inside structuredContent. It
// returns (nil, false, nil) when nothing had to change. The returned slice
// is reused by the next call.
func (r *refRedactor) redactResult(result []byte) ([]byte, bool, error) {
	out := append(r.out[:0], '{')
	any, n := false, 0
	var ierr error
	_, err := Members(result, 0, func(k []byte, vs, ve int) bool {
		if n > 0 {
			out = append(out, ',')
		}
		n++
		out = append(out, k...)
		out = append(out, ':')
		var ch bool
		switch {
		case KeyIs(k, "content") && result[vs] == '[':
			out = append(out, '[')
			m := 0
			var eerr error
			_, eerr = Elements(result[:ve], vs, func(is, ie int) bool {
				if m > 0 {
					out = append(out, ',')
				}
				m++
				var c bool
				var e error
				out, c, e = r.redactItem(out, result, is, ie)
				ch = ch || c
				if e != nil {
					ierr = e
					return false
				}
				return true
			})
			if ierr == nil {
				ierr = eerr
			}
			out = append(out, ']')
		case KeyIs(k, "structuredContent"):
			out, ch, ierr = r.redactValue(out, result, vs, ve)
		default:
			out = append(out, result[vs:ve]...)
		}
		any = any || ch
		return ierr == nil
	})
	if err == nil {
		err = ierr
	}
	out = append(out, '}')
	r.out = out
	if err != nil {
		return nil, false, errors.New("redact: input is not a JSON object: " + err.Error())
	}
	if !any {
		return nil, false, nil
	}
	return out, true, nil
}
