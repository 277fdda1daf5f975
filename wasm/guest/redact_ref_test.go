package guest

// The straightforward redactor the fast one must agree with: every
// built-in rule's regexp over the whole text, rule after rule, over every
// string of the result (member names included), each decoded and
// re-encoded whole. Redactor must produce the same strings (its windows
// keep the raw bytes it did not change, so outputs are compared after
// decoding).

import (
	"errors"
	"regexp"
	"strconv"
)

// A redaction rule: matches of re are replaced; when keep > 0 the first keep
// submatch groups (e.g. a "Bearer " prefix) are written back unmasked, and
// with tail the last group after the mask; lead 'a' requires the byte
// before a match to be no letter or digit.
type refRule struct {
	name string
	re   *regexp.Regexp
	keep int
	tail bool
	lead byte
}

// refBuiltinRules are the secrets masked by default.
var refBuiltinRules = []struct {
	name, expr string
	keep       int
	tail       bool
	lead       byte
}{
	{"private-key", `-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*)`, 0, false, 0},
	{"aws-access-key-id", `\b(?:AKIA|ASIA|ABIA|ACCA|AIDA|AROA)[0-9A-Z]{16}\b`, 0, false, 0},
	{"aws-secret-access-key", awsSecretExpr, 2, false, 0},
	{"github-token", `\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b`, 0, false, 0},
	{"github-pat", `\bgithub_pat_[A-Za-z0-9_]{22,255}\b`, 0, false, 0},
	{"gitlab-token", `\bglpat-[A-Za-z0-9_\-]{20,}`, 0, false, 0},
	{"slack-token", `\bxox[abposre]-[A-Za-z0-9-]{10,}`, 0, false, 0},
	{"slack-webhook", `\bhooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{8,}`, 0, false, 0},
	{"google-api-key", `\bAIza[0-9A-Za-z_\-]{35}`, 0, false, 0},
	{"stripe-key", `\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}`, 0, false, 0},
	{"jwt", `\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*`, 0, false, 0},
	{"bearer-token", bearerExpr, 2, false, 0},
	{"url-credentials", urlCredsExpr, 1, true, 0},
	{"password-pair", pairExpr, 1, false, 'a'},
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
		r.rules = append(r.rules, refRule{name: b.name, re: regexp.MustCompile(b.expr), keep: b.keep, tail: b.tail, lead: b.lead})
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
		locs := refFindAll(rule, s)
		if len(locs) == 0 {
			continue
		}
		changed = true
		s = mask(s, locs, rule.name, rule.keep, rule.tail)
	}
	return s, changed
}

// refFindAll is FindAllSubmatchIndex, keeping for a rule with a lead
// check the leftmost matches whose check passes.
func refFindAll(rule refRule, s []byte) [][]int {
	if rule.lead == 0 {
		return rule.re.FindAllSubmatchIndex(s, -1)
	}
	var locs [][]int
	for pos := 0; pos <= len(s); {
		m := rule.re.FindSubmatchIndex(s[pos:])
		if m == nil {
			break
		}
		for k := range m {
			if m[k] >= 0 {
				m[k] += pos
			}
		}
		if !leadOK(rule.lead, s, m[0]) {
			pos = m[0] + 1
			continue
		}
		locs = append(locs, m)
		pos = m[1]
		if m[1] == m[0] {
			pos++
		}
	}
	return locs
}

// redactString rewrites the raw JSON string raw onto out.
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
// (member names too).
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
			var ch, kch bool
			out, kch, ierr = r.redactString(out, k)
			if ierr != nil {
				return false
			}
			out = append(out, ':')
			out, ch, ierr = r.redactValue(out, b, vs, ve)
			any = any || ch || kch
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

// redactResult masks secrets in every string of the result. It returns
// (nil, false, nil) when nothing had to change.
func (r *refRedactor) redactResult(result []byte) ([]byte, bool, error) {
	e, err := SkipValue(result, 0)
	if err != nil || SkipSpace(result, 0) >= len(result) || result[SkipSpace(result, 0)] != '{' || SkipSpace(result, e) != len(result) {
		return nil, false, errNotObject
	}
	out, any, err := r.redactValue(r.out[:0], result, SkipSpace(result, 0), e)
	r.out = out
	if err != nil {
		return nil, false, errors.New("redact: " + err.Error())
	}
	if !any {
		return nil, false, nil
	}
	return out, true, nil
}
