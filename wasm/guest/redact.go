package guest

import (
	"bytes"
	"errors"
	"math/bits"
	"regexp"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Why the built-in rules are not simply run over the whole text
//
// Each rule's regexp over a whole text costs the regexp engine's per-byte
// price for every byte, once per rule; in a guest, where every loop
// back-edge pays the host's termination check, that was ~10 ms per KiB.
// Instead one pass over the text, eight bytes a step, flags the byte pairs
// a built-in match can start with and keeps the positions where a cheap
// literal check (a rule's fixed anchor: "AKIA", "ghp_", "-----BEGIN ",
// case-folded "bearer" ...) passes. Each rule is then matched only at its
// candidates: the rules that are a literal and runs of a class by their
// run lengths (exactly what greedy matching and \b decide), private-key by
// its markers, and aws-secret-access-key by an anchored form of its regexp
// on a window that provably holds any match starting there plus the byte
// after it (so \b sees the right neighbour); a leading \b is checked
// against the byte before. The result is, match for match, what the
// whole-text regexps find (leftmost-first, non-overlapping, rule after rule
// on the text the previous rules left); redact_ref_test.go keeps the
// whole-text implementation, and differential tests and a fuzz target hold
// the two together. Configured patterns have no known anchor and still run
// over every decoded string in full.
//
// # Why the guest asks the host where the anchors are
//
// Even that pass, run in the guest, cost 5-15x its native time: every
// eight-byte step is a loop iteration. So RedactResult first asks Find
// (the host's input_find, native code) for every occurrence of an anchor
// keyword inside the JSON strings of the result, and touches only the
// strings that have one, and of a long string only windows around its
// keywords: the window is decoded, redacted by the same rule pass and, when
// something was masked, re-encoded in place of its raw bytes; the rest of
// the string is copied as it is. A window is grown (doubled) whenever a
// match, or a check that could have matched, ran up to its end, so a
// window's answer is the whole string's. A string with a \u escape (which
// could spell an anchor that raw bytes do not show) is decoded and
// redacted whole.
//
// # Why every string, keys included
//
// A model reads every string of a result: item text, resource uris and
// text, resource_link names and descriptions, annotations, _meta,
// structuredContent values and member names alike. Redaction therefore
// does not depend on member names at all (so escaped names such as
// "t\u0065xt" cannot steer it); only the search for secrets split across
// adjacent text items looks at the structure, with names compared after
// unescaping.

// builtinRule is one built-in secret rule.
type builtinRule struct {
	name, expr string
	keep       int  // leading submatch groups written back unmasked (a label, "Bearer ")
	tail       bool // the last submatch group is written back after the mask ("@" of a URL)
	// lead is the check on the byte before a match: 'w' = \b before a
	// word character (the byte before is no word character), 'a' = the
	// byte before is no letter or digit, 0 = none.
	lead  byte
	first string // the bytes a match can start with
	// at is a cheap necessary condition for a match starting at s[p]
	// (s[p] is one of first). It reads at most atReach bytes from s[p]
	// and nothing before: redactBuiltins relies on it to keep candidates
	// across masks.
	at func(s []byte, p int) bool
	// match, when set, replaces the regexp: the leftmost-first match at
	// s[p] (lead already checked) as FindSubmatchIndex would report it, or
	// nil. It sets r.clip when its answer depended on the end of s (a run
	// or a check reached it), which in a window means "look further".
	match func(r *Redactor, s []byte, p int) []int
}

// ci spells word (lower-case ASCII) as a case-insensitive regexp that
// folds ASCII only ((?i) would also fold "ſ" into s and "K" into k).
func ci(word string) string {
	var b []byte
	for i := 0; i < len(word); i++ {
		c := word[i]
		if c >= 'a' && c <= 'z' {
			b = append(b, '[', c-0x20, c, ']')
		} else {
			b = append(b, regexp.QuoteMeta(string(c))...)
		}
	}
	return string(b)
}

// Expressions of the rules (shared with the reference implementation).
var (
	awsSecretExpr = `(` + ci("aws") + `.{0,20}?(?:` + ci("secret") + `|` + ci("private") + `).{0,20}?|` +
		ci("secret") + `_?` + ci("access") + `_?` + ci("key") + `)([\s"':=]+)[A-Za-z0-9/+=]{40}\b`
	bearerExpr   = `(\b` + ci("bearer") + `)(\s+)[A-Za-z0-9\-._~+/]{8,}=*`
	pairExpr     = `((?:` + ci("pass") + `(?:` + ci("word") + `|` + ci("wd") + `|` + ci("phrase") + `)|` + ci("secret") + `|` + ci("token") + `|` + ci("api") + `[_\-]?` + ci("key") + `)["']?\s*[:=]\s*["']?)[^\s"'&,;<>]{6,}`
	urlCredsExpr = `(://[^\s/?#@"'<>:]*:)[^\s/?#@"'<>]+(@)`
)

// builtinRules are the secrets masked by default, in the order they apply.
var builtinRules = []builtinRule{
	{name: "private-key", expr: `-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*)`,
		first: "-", at: prefixAt(pemBegin)},
	{name: "aws-access-key-id", expr: `\b(?:AKIA|ASIA|ABIA|ACCA|AIDA|AROA)[0-9A-Z]{16}\b`,
		lead: 'w', first: "A", at: awsKeyIDAt, match: awsKeyIDMatch},
	{name: "aws-secret-access-key", expr: awsSecretExpr,
		keep: 2, first: "aAsS", at: awsSecretAt, match: awsSecretMatch},
	{name: "github-token", expr: `\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b`,
		lead: 'w', first: "g", at: githubTokenAt, match: wordRunMatch(4, clsAlnum, 36, 255)},
	{name: "github-pat", expr: `\bgithub_pat_[A-Za-z0-9_]{22,255}\b`,
		lead: 'w', first: "g", at: prefixAt("github_pat_"), match: wordRunMatch(11, clsWord, 22, 255)},
	{name: "gitlab-token", expr: `\bglpat-[A-Za-z0-9_\-]{20,}`,
		lead: 'w', first: "g", at: prefixAt("glpat-"), match: runMatch(6, clsGitlab, 20)},
	{name: "slack-token", expr: `\bxox[abposre]-[A-Za-z0-9-]{10,}`,
		lead: 'w', first: "x", at: slackAt, match: runMatch(5, clsSlack, 10)},
	{name: "slack-webhook", expr: `\bhooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{8,}`,
		lead: 'w', first: "h", at: prefixAt(slackHooks), match: webhookMatch},
	{name: "google-api-key", expr: `\bAIza[0-9A-Za-z_\-]{35}`,
		lead: 'w', first: "A", at: prefixAt("AIza"), match: googleKeyMatch},
	{name: "stripe-key", expr: `\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}`,
		lead: 'w', first: "rs", at: stripeAt, match: runMatch(8, clsAlnum, 16)},
	{name: "jwt", expr: `\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*`,
		lead: 'w', first: "e", at: prefixAt("eyJ"), match: jwtMatch},
	{name: "bearer-token", expr: bearerExpr,
		keep: 2, lead: 'w', first: "bB", at: bearerAt, match: bearerMatch},
	{name: "url-credentials", expr: urlCredsExpr,
		keep: 1, tail: true, first: ":", at: prefixAt("://"), match: urlCredsMatch},
	{name: "password-pair", expr: pairExpr,
		keep: 1, lead: 'a', first: "pPsStTaA", at: pairAt, match: pairMatch},
}

const (
	privateKeyRule = 0
	awsSecretRule  = 2
)

// Every rule has its own matcher; its expr is the regexp it must agree
// with (redact_ref_test.go runs those over whole texts).

// atReach bounds the bytes builtinRule.at reads ("hooks.slack.com/" is the
// longest anchor).
const atReach = 16

// uEscapeBit is the pseudo-rule raw JSON strings are checked with: a
// backslash not followed by one of "\/bfnrt (a \u escape, which could
// spell an anchor, or an invalid escape, which decoding must report).
const uEscapeBit = 1 << 31

// findKeys are the keywords RedactResult asks Find for: every candidate
// of every rule starts with one of them (ASCII case folded), and "\u"
// marks strings that must be decoded whole. findReach[i] is how far after
// keyword i a window first reaches (windows grow as needed). findFollow[i],
// when set, holds the raw bytes that may follow keyword i in a match
// (including a backslash, which may start an escape of one): a record
// followed by another byte is dropped before any work, so prose such as
// "secrets", "tokens" or "passed" costs the guest next to nothing.
var findKeys, findReach, findFollow = func() ([]byte, []int, []*[256]bool) {
	type kw struct {
		k      string
		reach  int
		follow string
	}
	const sep = "\"' \t:=\\" // a label's quote, space, ':' or '=' (or an escape)
	list := []kw{{"-----begin", 512, " "}, {"akia", 64, ""}, {"asia", 64, ""}, {"abia", 64, ""}, {"acca", 64, ""}, {"aida", 64, ""}, {"aroa", 64, ""},
		{"aws", 320, ""}, {"secret", 96, sep + "_aA"}, {"ghp_", 300, ""}, {"gho_", 300, ""}, {"ghu_", 300, ""}, {"ghs_", 300, ""}, {"ghr_", 300, ""},
		{"github_pat_", 300, ""}, {"glpat-", 64, ""}, {"xox", 64, "abposre"}, {slackHooks, 128, "swtSWT"}, {"aiza", 64, ""}, {"sk_live_", 64, ""},
		{"sk_test_", 64, ""}, {"rk_live_", 64, ""}, {"rk_test_", 64, ""}, {"eyj", 256, ""}, {"bearer", 64, " \t\\"}, {"://", 128, ""},
		{"pass", 64, "wWpP"}, {"token", 64, sep}, {"api", 64, "_-kK"}, {`\u`, 0, ""}}
	var keys []byte
	var reach []int
	var follow []*[256]bool
	for i, k := range list {
		if i > 0 {
			keys = append(keys, '\n')
		}
		keys = append(keys, k.k...)
		reach = append(reach, k.reach)
		var f *[256]bool
		if k.follow != "" {
			f = new([256]bool)
			for j := 0; j < len(k.follow); j++ {
				f[k.follow[j]] = true
			}
		}
		follow = append(follow, f)
	}
	return keys, reach, follow
}()

// keyLens[i] is the length of findKeys' keyword i.
var keyLens = func() []int {
	var n []int
	for _, k := range bytes.Split(findKeys, []byte{'\n'}) {
		n = append(n, len(k))
	}
	return n
}()

// uKey is the index of `\u` in findKeys.
const uKey = 29

// startRules[c] has bit i set when built-in rule i can match from a byte c.
var startRules [256]uint32

// redactTables fills startRules, once, on the first NewRedactor.
var redactTables = sync.OnceFunc(func() {
	for i, b := range builtinRules {
		for j := 0; j < len(b.first); j++ {
			startRules[b.first[j]] |= 1 << i
		}
	}
	startRules['\\'] |= uEscapeBit
})

// A redaction rule: matches of re are replaced; when keep > 0 the first keep
// submatch groups (e.g. a "Bearer " prefix) are written back unmasked.
type redactRule struct {
	name string
	re   *regexp.Regexp
	keep int
}

// Redactor masks secrets in every string of MCP tool results. Its buffers
// are reused across calls, so a Redactor is not safe for concurrent use.
type Redactor struct {
	// Skip, if set, returns the index just past the JSON value starting
	// at index i of the result being redacted (in a guest: InputSkip, the
	// host's native scanner; only valid when RedactResult is given the
	// call's whole input). nil = SkipValue.
	Skip func(i int) (int, error)
	// Find, if set, finds keywords in the strings of the result being
	// redacted (in a guest: InputFind, the host's native search; only
	// valid when RedactResult is given the call's whole input). nil = the
	// same search in Go.
	Find FindFunc

	builtins uint32       // bit i: builtinRules[i] is enabled
	extra    []redactRule // configured patterns, run over the whole text
	cands    [32][]int    // per built-in rule: candidate match starts
	spares   [32][]int    // carry's other candidate buffers
	spans    [][2]int     // mask: where each replacement went
	locs     [][]int
	str      []byte
	win      []byte
	out      []byte
	recs     []FindRecord // Find's buffer
	pending  []int        // decodeWindow: record positions in the decoded window
	cur      []FindRecord // the records of the string being redacted
	items    []textItem   // content's items (for secrets split between them)
	native   FindFunc
	// private-key END-marker search memo (see nextPEMEnd)
	endFrom, endAt, endEnd int
	// clip: a matcher's answer depended on the end of the text (see
	// builtinRule.match); set during redactBuiltins.
	clip bool
	// noJoin turns off the search across adjacent text items (tests
	// comparing string by string with the reference).
	noJoin bool
}

// NewRedactor builds a Redactor from the filter config:
//
//	{"patterns": ["regexp", ...], "disable": ["bearer-token", ...]}
//
// Extra patterns use Go regexp syntax; their whole match is masked.
func NewRedactor(config []byte) (*Redactor, error) {
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
	redactTables()
	r := &Redactor{}
	for i, b := range builtinRules {
		if !disabled[b.name] {
			r.builtins |= 1 << i
		}
	}
	for i, p := range extra {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, errors.New("redact: patterns[" + strconv.Itoa(i) + "]: " + err.Error())
		}
		r.extra = append(r.extra, redactRule{name: "pattern-" + strconv.Itoa(i), re: re})
	}
	return r, nil
}

// RuleNames lists the built-in rules in the order they apply.
func RuleNames() []string {
	var n []string
	for _, b := range builtinRules {
		n = append(n, b.name)
	}
	return n
}

// SkipSpaceBytes trims leading JSON space.
func SkipSpaceBytes(b []byte) []byte { return b[SkipSpace(b, 0):] }

// RedactText masks secrets in s, returning the new text and whether anything
// changed. The result may alias s.
func (r *Redactor) RedactText(s []byte) ([]byte, bool) {
	changed := false
	if r.builtins != 0 {
		s, changed = r.redactBuiltins(s)
	}
	for _, rule := range r.extra {
		locs := rule.re.FindAllSubmatchIndex(s, -1)
		if len(locs) == 0 {
			continue
		}
		changed = true
		s = mask(s, locs, rule.name, rule.keep, false)
	}
	return s, changed
}

// redactBuiltins applies the enabled built-in rules in order.
func (r *Redactor) redactBuiltins(s []byte) ([]byte, bool) {
	r.scan(s, r.builtins)
	return r.applyRules(s)
}

// applyRules applies the enabled built-in rules in order, starting from
// the candidates in r.cands (found by scan, or from Find's records).
func (r *Redactor) applyRules(s []byte) ([]byte, bool) {
	changed := false
	todo := r.builtins &^ uEscapeBit
	for i := range builtinRules {
		bit := uint32(1) << i
		if todo&bit == 0 {
			continue
		}
		todo &^= bit
		if len(r.cands[i]) == 0 {
			continue
		}
		locs := r.matches(i, s)
		if len(locs) == 0 {
			continue
		}
		changed = true
		b := &builtinRules[i]
		ns := r.mask(s, locs, b.name, b.keep, b.tail)
		// The masks moved the text after them and replaced some of it:
		// carry the later rules' candidates over.
		r.carry(todo, s, ns, locs)
		s = ns
	}
	return s, changed
}

// carry maps the candidates of the rules in todo from s to the text ns
// that masking locs of s produced (r.spans: where each mask went). A
// candidate's check reads at most atReach bytes, so one further than that
// before a match keeps its verdict and only moves; the bytes just before
// each mask and the mask itself are checked again, once for all rules (a
// guest pays ~50 ns a loop step: rule by rule, position by position, was
// the dearest part of redacting a small window).
func (r *Redactor) carry(todo uint32, s, ns []byte, locs [][]int) {
	var oi [32]int
	var old [32][]int
	for m := todo; m != 0; m &= m - 1 {
		k := bits.TrailingZeros32(m)
		old[k], r.cands[k] = r.cands[k], r.spares[k][:0]
	}
	oldEnd, newEnd := 0, 0
	for j, m := range locs {
		for t := todo; t != 0; t &= t - 1 {
			k := bits.TrailingZeros32(t)
			o, i := old[k], oi[k]
			for ; i < len(o) && o[i] < m[0]-atReach; i++ {
				if o[i] >= oldEnd {
					r.cands[k] = append(r.cands[k], o[i]-oldEnd+newEnd)
				}
			}
			for i < len(o) && o[i] < m[1] {
				i++
			}
			oi[k] = i
		}
		sp := r.spans[j]
		for p := max(newEnd, sp[0]-atReach); p < sp[1]; p++ {
			for t := startRules[ns[p]] & todo; t != 0; t &= t - 1 {
				k := bits.TrailingZeros32(t)
				if builtinRules[k].at(ns, p) {
					r.cands[k] = append(r.cands[k], p)
				}
			}
		}
		oldEnd, newEnd = m[1], sp[1]
	}
	for t := todo; t != 0; t &= t - 1 {
		k := bits.TrailingZeros32(t)
		for _, c := range old[k][oi[k]:] {
			if c >= oldEnd {
				r.cands[k] = append(r.cands[k], c-oldEnd+newEnd)
			}
		}
		r.spares[k] = old[k]
	}
}

// scan records, for each rule in mask, every position of s where a match of
// it could start. It reads s eight bytes at a time (SWAR) and flags the
// positions whose byte pair can begin some rule's anchor; only those go
// through the per-rule checks. A guest pays for every loop iteration, so
// one iteration per eight bytes is what makes the pass cheap.
func (r *Redactor) scan(s []byte, mask uint32) {
	for m := mask &^ uEscapeBit; m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m)
		r.cands[i] = r.cands[i][:0]
	}
	i := 0
	// Four words an iteration: in a guest the loop itself costs more than
	// the arithmetic.
	for ; i+33 <= len(s); i += 32 {
		h0, h1, h2, h3 := anchorHits(s, i), anchorHits(s, i+8), anchorHits(s, i+16), anchorHits(s, i+24)
		if h0|h1|h2|h3 == 0 {
			continue
		}
		r.candidates(s, i, h0, mask)
		r.candidates(s, i+8, h1, mask)
		r.candidates(s, i+16, h2, mask)
		r.candidates(s, i+24, h3, mask)
	}
	for ; i+9 <= len(s); i += 8 {
		r.candidates(s, i, anchorHits(s, i), mask)
	}
	for ; i < len(s); i++ {
		r.candidate(s, i, mask)
	}
}

// anchorHits flags (high bit of the byte) the bytes of s[i:i+8] that may
// start an anchor; it reads s[i+8] too.
func anchorHits(s []byte, i int) uint64 {
	x := load64(s, i)
	y := load64(s, i+1) // the byte after each of x's
	fx, fy := x|0x20*lsb, y|0x20*lsb
	h := eqMask(fx, '-')&eqMask(fy, '-') |
		eqMask(x, 'A') |
		eqMask(fx, 'a')&(eqMask(fy, 'w')|eqMask(fy, 'p')) |
		eqMask(fx, 's')&eqMask(fy, 'e') |
		eqMask(x, 's')&eqMask(y, 'k') | eqMask(x, 'r')&eqMask(y, 'k') |
		eqMask(x, 'g')&(eqMask(y, 'h')|eqMask(y, 'i')|eqMask(y, 'l')) |
		eqMask(x, 'x')&eqMask(y, 'o') |
		eqMask(x, 'h')&eqMask(y, 'o') |
		eqMask(x, 'e')&eqMask(y, 'y') |
		eqMask(fx, 'b')&eqMask(fy, 'e') |
		eqMask(fx, 'p')&eqMask(fy, 'a') |
		eqMask(fx, 't')&eqMask(fy, 'o') |
		eqMask(x, ':')&eqMask(y, '/')
	if bs := eqMask(x, '\\'); bs != 0 {
		h |= bs &^ simpleEscapeNext(y)
	}
	return h
}

// simpleEscapeNext has the high bit set exactly in the bytes of y that may
// follow a backslash as a one-character escape: " \ / b f n r t.
func simpleEscapeNext(y uint64) uint64 {
	return exactEq(y, '"') | exactEq(y, '\\') | exactEq(y, '/') | exactEq(y, 'b') |
		exactEq(y, 'f') | exactEq(y, 'n') | exactEq(y, 'r') | exactEq(y, 't')
}

// exactEq has the high bit set in exactly the bytes of x equal to c.
func exactEq(x uint64, c byte) uint64 {
	t := x ^ (uint64(c) * lsb)
	const low7 = 0x7f7f7f7f7f7f7f7f
	nz := (t&low7 + low7) | t // high bit: byte nonzero (no carries between bytes)
	return ^nz & msb
}

// candidates runs candidate for each byte of s[i:i+8] flagged in hit.
func (r *Redactor) candidates(s []byte, i int, hit uint64, mask uint32) {
	for hit != 0 {
		p := i + bits.TrailingZeros64(hit)>>3
		hit &= hit - 1
		r.candidate(s, p, mask)
	}
}

// eqMask has the high bit set in every byte of x equal to c (and possibly,
// above such a byte, in some that are not: a superset is all scan needs).
func eqMask(x uint64, c byte) uint64 {
	q := x ^ (uint64(c) * lsb)
	return (q - lsb) &^ q & msb
}

// candidate runs the anchor checks of the rules in mask that can start with
// s[p].
func (r *Redactor) candidate(s []byte, p int, mask uint32) {
	m := startRules[s[p]] & mask &^ uEscapeBit
	for m != 0 {
		k := bits.TrailingZeros32(m)
		m &= m - 1
		if builtinRules[k].at(s, p) {
			r.cands[k] = append(r.cands[k], p)
		}
	}
}

// leadOK reports whether the byte before s[p] allows a match of a rule
// with the given lead check there.
func leadOK(lead byte, s []byte, p int) bool {
	if p == 0 {
		return true
	}
	switch lead {
	case 'w':
		return !isWordByte(s[p-1])
	case 'a':
		return !isAlnum(s[p-1])
	}
	return true
}

// matches returns what FindAllSubmatchIndex(s, -1) of built-in rule i
// returns (for the rules with a lead check, the leftmost matches whose
// lead check passes), looking only at its candidates.
func (r *Redactor) matches(i int, s []byte) [][]int {
	r.locs = r.locs[:0]
	r.endFrom, r.endAt = -1, -1
	b := &builtinRules[i]
	pos := 0
	for _, p := range r.cands[i] {
		if p < pos {
			continue
		}
		var loc []int
		if i == privateKeyRule {
			loc = r.privateKeyAt(s, p)
		} else {
			if !leadOK(b.lead, s, p) {
				continue
			}
			loc = b.match(r, s, p)
		}
		if loc == nil {
			continue
		}
		if loc[1] >= len(s)-1 {
			r.clip = true // \b after it, or a longer match, would need the next bytes
		}
		r.locs = append(r.locs, loc)
		pos = loc[1]
	}
	return r.locs
}

// mask replaces each match in locs with [REDACTED:name], keeping the first
// keep submatch groups (and, with tail, the last group after the mask).
func mask(s []byte, locs [][]int, name string, keep int, tail bool) []byte {
	var out []byte
	last := 0
	for _, m := range locs {
		out = append(out, s[last:m[0]]...)
		out = appendMask(out, s, m, name, keep, tail)
		last = m[1]
	}
	return append(out, s[last:]...)
}

func appendMask(out, s []byte, m []int, name string, keep int, tail bool) []byte {
	for g := 1; g <= keep && 2*g+1 < len(m); g++ {
		if m[2*g] >= 0 {
			out = append(out, s[m[2*g]:m[2*g+1]]...)
		}
	}
	out = append(out, "[REDACTED:"...)
	out = append(out, name...)
	out = append(out, ']')
	if g := len(m)/2 - 1; tail && g > keep && m[2*g] >= 0 {
		out = append(out, s[m[2*g]:m[2*g+1]]...)
	}
	return out
}

// mask is the package mask that also records in r.spans where each
// match's replacement lies in the new text.
func (r *Redactor) mask(s []byte, locs [][]int, name string, keep int, tail bool) []byte {
	out := make([]byte, 0, len(s)+len(locs)*(len(name)+11))
	r.spans = r.spans[:0]
	last := 0
	for _, m := range locs {
		out = append(out, s[last:m[0]]...)
		start := len(out)
		out = appendMask(out, s, m, name, keep, tail)
		r.spans = append(r.spans, [2]int{start, len(out)})
		last = m[1]
	}
	return append(out, s[last:]...)
}

// Anchor checks and window ends of the built-in rules.

const (
	pemBegin   = "-----BEGIN "
	pemEnd     = "-----END "
	pemTail    = "PRIVATE KEY-----"
	slackHooks = "hooks.slack.com/"
)

func isWordByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_'
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

func isGitlabByte(c byte) bool  { return isAlnum(c) || c == '_' || c == '-' }
func isSlackByte(c byte) bool   { return isAlnum(c) || c == '-' }
func isWebhookByte(c byte) bool { return isAlnum(c) || c == '_' || c == '/' || c == '-' }

// isSpaceRE is regexp's \s: [\t\n\f\r ].
func isSpaceRE(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

func prefixAt(lit string) func(s []byte, p int) bool {
	b := []byte(lit)
	return func(s []byte, p int) bool { return bytes.HasPrefix(s[p:], b) }
}

func awsKeyIDAt(s []byte, p int) bool {
	if len(s)-p < 4 {
		return false
	}
	switch string(s[p : p+4]) {
	case "AKIA", "ASIA", "ABIA", "ACCA", "AIDA", "AROA":
		return true
	}
	return false
}

func githubTokenAt(s []byte, p int) bool {
	if len(s)-p < 4 || s[p+1] != 'h' || s[p+3] != '_' {
		return false
	}
	switch s[p+2] {
	case 'p', 'o', 'u', 's', 'r':
		return true
	}
	return false
}

func slackAt(s []byte, p int) bool {
	if len(s)-p < 5 || s[p+1] != 'o' || s[p+2] != 'x' || s[p+4] != '-' {
		return false
	}
	switch s[p+3] {
	case 'a', 'b', 'p', 'o', 's', 'r', 'e':
		return true
	}
	return false
}

func stripeAt(s []byte, p int) bool {
	if len(s)-p < 8 || s[p+1] != 'k' || s[p+2] != '_' || s[p+7] != '_' {
		return false
	}
	switch string(s[p+3 : p+7]) {
	case "live", "test":
		return true
	}
	return false
}

// foldPrefix reports whether s[p:] starts with word (lower-case ASCII),
// ASCII letters compared case-insensitively.
func foldPrefix(s []byte, p int, word string) bool {
	if len(s)-p < len(word) {
		return false
	}
	for i := 0; i < len(word); i++ {
		c, w := s[p+i], word[i]
		if c != w && !(w >= 'a' && w <= 'z' && c == w-0x20) {
			return false
		}
	}
	return true
}

func awsSecretAt(s []byte, p int) bool {
	return foldPrefix(s, p, "aws") || foldPrefix(s, p, "secret")
}

// awsSecretMatch is the aws-secret-access-key regexp by backtracking in
// its priority order: the label's lazy .{0,20}? (any character but a
// newline) widened one character at a time, secret before private, the
// separator run longest first, then 40 key characters and \b.
func awsSecretMatch(r *Redactor, s []byte, p int) []int {
	if foldPrefix(s, p, "aws") {
		q := p + 3
		for i := 0; i <= 20; i++ {
			for _, w := range [...]string{"secret", "private"} {
				if !foldPrefix(s, q, w) {
					if len(s)-q < len(w) {
						r.clip = true
					}
					continue
				}
				t := q + len(w)
				for j := 0; j <= 20; j++ {
					if m := r.awsTail(s, p, t); m != nil {
						return m
					}
					n := r.charLen(s, t)
					if n == 0 {
						break
					}
					t += n
				}
			}
			n := r.charLen(s, q)
			if n == 0 {
				break
			}
			q += n
		}
	}
	if !foldPrefix(s, p, "secret") {
		return nil
	}
	q := p + 6
	if q < len(s) && s[q] == '_' {
		q++
	}
	if !foldPrefix(s, q, "access") {
		r.clip = r.clip || len(s)-q < 6
		return nil
	}
	q += 6
	if q < len(s) && s[q] == '_' {
		q++
	}
	if !foldPrefix(s, q, "key") {
		r.clip = r.clip || len(s)-q < 3
		return nil
	}
	return r.awsTail(s, p, q+3)
}

// charLen is the width of the character regexp's "." matches at s[i] (an
// invalid byte counts as one), or 0 at a newline or the end.
func (r *Redactor) charLen(s []byte, i int) int {
	if i >= len(s) {
		r.clip = true
		return 0
	}
	if s[i] == '\n' {
		return 0
	}
	if s[i] < utf8.RuneSelf {
		return 1
	}
	_, n := utf8.DecodeRune(s[i:])
	return n
}

// awsTail matches ([\s"':=]+)[A-Za-z0-9/+=]{40}\b at s[t], the separator
// run longest first ('=' is in both classes), for a label from p.
func (r *Redactor) awsTail(s []byte, p, t int) []int {
	e := r.run(s, t, clsAWSSep)
	for k := e; k > t; k-- {
		if k+40 > len(s) {
			r.clip = true
			continue
		}
		ok := true
		for _, c := range s[k : k+40] {
			if !isAWSKeyByte(c) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		next := false
		if k+40 < len(s) {
			next = isWordByte(s[k+40])
		} else {
			r.clip = true
		}
		if isWordByte(s[k+39]) == next {
			continue // no \b after the key
		}
		return []int{p, k + 40, p, t, t, k}
	}
	return nil
}

func isAWSKeyByte(c byte) bool { return isAlnum(c) || c == '/' || c == '+' || c == '=' }

func isAWSSep(c byte) bool {
	return isSpaceRE(c) || c == '"' || c == '\'' || c == ':' || c == '='
}

func bearerAt(s []byte, p int) bool { return foldPrefix(s, p, "bearer") }

func pairAt(s []byte, p int) bool {
	return foldPrefix(s, p, "pass") || foldPrefix(s, p, "secret") || foldPrefix(s, p, "token") || foldPrefix(s, p, "api")
}

// byteClass is a set of bytes as a table: a guest pays for every call, so
// runs test bytes by lookup, never through a function value.
type byteClass [256]bool

func classOf(in func(byte) bool) *byteClass {
	var c byteClass
	for i := range c {
		c[i] = in(byte(i))
	}
	return &c
}

var (
	clsAlnum     = classOf(isAlnum)
	clsWord      = classOf(isWordByte)
	clsGitlab    = classOf(isGitlabByte)
	clsSlack     = classOf(isSlackByte)
	clsWebhook   = classOf(isWebhookByte)
	clsSpace     = classOf(isSpaceRE)
	clsAWSSep    = classOf(isAWSSep)
	clsJWT       = classOf(isJWTByte)
	clsBearer    = classOf(isBearerByte)
	clsURLUser   = classOf(isURLUserByte)
	clsURLPass   = classOf(isURLPassByte)
	clsPairValue = classOf(isPairValueByte)
	clsEq        = classOf(func(c byte) bool { return c == '=' })
	clsPEMLabel  = classOf(func(c byte) bool { return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ' ' })
)

// run returns the end of the run of class bytes starting at s[i], setting
// r.clip when it reaches the end of s.
func (r *Redactor) run(s []byte, i int, class *byteClass) int {
	for i < len(s) && class[s[i]] {
		i++
	}
	if i == len(s) {
		r.clip = true
	}
	return i
}

// awsKeyIDMatch: the prefix (checked by awsKeyIDAt), 16 of [0-9A-Z], and
// \b after the last (a word character): the next byte is not one.
func awsKeyIDMatch(r *Redactor, s []byte, p int) []int {
	e := p + 20
	if e >= len(s) {
		r.clip = true
	}
	if e > len(s) {
		return nil
	}
	for _, c := range s[p+4 : e] {
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z') {
			return nil
		}
	}
	if e < len(s) && isWordByte(s[e]) {
		return nil
	}
	return []int{p, e}
}

// wordRunMatch: k literal bytes, then class{lo,hi} and \b, where class
// holds only word characters. Greedy then backtracking: the run of class
// bytes (n long) matches whole when lo <= n <= hi and the byte after it is
// not a word character; any shorter take ends between two word
// characters, where \b fails.
func wordRunMatch(k int, class *byteClass, lo, hi int) func(r *Redactor, s []byte, p int) []int {
	return func(r *Redactor, s []byte, p int) []int {
		i := r.run(s, p+k, class)
		if n := i - p - k; n < lo || n > hi || i < len(s) && isWordByte(s[i]) {
			return nil
		}
		return []int{p, i}
	}
}

// runMatch: k literal bytes, then class{lo,} (greedy, nothing after it).
func runMatch(k int, class *byteClass, lo int) func(r *Redactor, s []byte, p int) []int {
	return func(r *Redactor, s []byte, p int) []int {
		i := r.run(s, p+k, class)
		if i-p-k < lo {
			return nil
		}
		return []int{p, i}
	}
}

// googleKeyMatch: "AIza" and exactly 35 of [0-9A-Za-z_-] (the class run
// may go on; the match stops at 35).
func googleKeyMatch(r *Redactor, s []byte, p int) []int {
	e := p + 4 + 35
	i := p + 4
	for i < len(s) && i < e && (isWordByte(s[i]) || s[i] == '-') {
		i++
	}
	if i == len(s) && i < e {
		r.clip = true
	}
	if i < e {
		return nil
	}
	return []int{p, e}
}

// webhookMatch: "hooks.slack.com/", one of services|workflows|triggers,
// '/', then at least 8 of [A-Za-z0-9_/-].
func webhookMatch(r *Redactor, s []byte, p int) []int {
	i := p + len(slackHooks)
	for _, w := range []string{"services/", "workflows/", "triggers/"} {
		if bytes.HasPrefix(s[i:], []byte(w)) {
			j := r.run(s, i+len(w), clsWebhook)
			if j-i-len(w) < 8 {
				return nil
			}
			return []int{p, j}
		}
		if len(s)-i < len(w) && bytes.HasPrefix([]byte(w), s[i:]) {
			r.clip = true
		}
	}
	return nil
}

func isJWTByte(c byte) bool { return isWordByte(c) || c == '-' }

// jwtMatch: "eyJ" and 8+ of [A-Za-z0-9_-], '.', "eyJ" and 8+ more, '.',
// and any run of them (the class holds no '.', so every run is whole).
func jwtMatch(r *Redactor, s []byte, p int) []int {
	i := r.run(s, p+3, clsJWT)
	if i-p-3 < 8 || i >= len(s) || s[i] != '.' {
		return nil
	}
	i++
	if len(s)-i < 3 {
		r.clip = true
	}
	if !bytes.HasPrefix(s[i:], []byte("eyJ")) {
		return nil
	}
	j := r.run(s, i+3, clsJWT)
	if j-i-3 < 8 || j >= len(s) || s[j] != '.' {
		return nil
	}
	return []int{p, r.run(s, j+1, clsJWT)}
}

// bearerMatch: (bearer)(\s+) then at least 8 token characters and "=*".
// The token class holds no space and no '=', so every run is taken whole.
func bearerMatch(r *Redactor, s []byte, p int) []int {
	ws := p + 6
	i := r.run(s, ws, clsSpace)
	if i == ws {
		return nil
	}
	tok := i
	i = r.run(s, i, clsBearer)
	if i-tok < 8 {
		return nil
	}
	i = r.run(s, i, clsEq)
	return []int{p, i, p, ws, ws, tok}
}

func isBearerByte(c byte) bool {
	return isAlnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/'
}

func isURLUserByte(c byte) bool { return isURLPassByte(c) && c != ':' }
func isURLPassByte(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\f', '\r', '/', '?', '#', '@', '"', '\'', '<', '>':
		return false
	}
	return true
}

// urlCredsMatch: "://", a user run without ':' (the class excludes it, so
// the run must end at the ':'), ':', a password run (whole: '@' is not in
// its class) and '@', which is kept after the mask.
func urlCredsMatch(r *Redactor, s []byte, p int) []int {
	u := r.run(s, p+3, clsURLUser)
	if u >= len(s) || s[u] != ':' {
		return nil
	}
	w := r.run(s, u+1, clsURLPass)
	if w == u+1 || w >= len(s) || s[w] != '@' {
		return nil
	}
	return []int{p, w + 1, p, u + 1, w, w + 1}
}

// pairMatch: a label (pass(word|wd|phrase), secret, token, api[_-]?key),
// an optional quote, spaces, ':' or '=', spaces, an optional quote, then at
// least 6 value bytes; label and separators are kept. Each part's class
// excludes what follows it, so the greedy reading is the only one.
func pairMatch(r *Redactor, s []byte, p int) []int {
	i := -1
	switch {
	case foldPrefix(s, p, "pass"):
		for _, w := range []string{"word", "wd", "phrase"} {
			if foldPrefix(s, p+4, w) {
				i = p + 4 + len(w)
				break
			}
		}
	case foldPrefix(s, p, "secret"):
		i = p + 6
	case foldPrefix(s, p, "token"):
		i = p + 5
	case foldPrefix(s, p, "api"):
		j := p + 3
		if j < len(s) && (s[j] == '_' || s[j] == '-') {
			j++
		}
		if foldPrefix(s, j, "key") {
			i = j + 3
		}
	}
	if i < 0 {
		return nil
	}
	if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		i++
	}
	i = r.run(s, i, clsSpace)
	if i >= len(s) || s[i] != ':' && s[i] != '=' {
		return nil
	}
	i = r.run(s, i+1, clsSpace)
	if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		i++
	}
	v := i
	i = r.run(s, i, clsPairValue)
	// {6,} counts characters: a run of 6 to 23 bytes may hold fewer
	// (an invalid byte counts as one, as the regexp reads it).
	if i-v < 6 || i-v < 24 && utf8.RuneCount(s[v:i]) < 6 {
		return nil
	}
	return []int{p, i, p, v}
}

func isPairValueByte(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\f', '\r', '"', '\'', '&', ',', ';', '<', '>':
		return false
	}
	return true
}

// pemMarkerEnd matches `[A-Z0-9 ]*PRIVATE KEY-----` at s[i:]. The class run
// is greedy and "PRIVATE KEY" lies inside it, followed by '-' (outside it),
// so the only possible split puts "PRIVATE KEY" at the run's end.
func (r *Redactor) pemMarkerEnd(s []byte, i int) (int, bool) {
	j := r.run(s, i, clsPEMLabel)
	k := j - len("PRIVATE KEY")
	if len(s)-k < len(pemTail) {
		r.clip = true
	}
	if k < i || !bytes.HasPrefix(s[k:], []byte(pemTail)) {
		return 0, false
	}
	return k + len(pemTail), true
}

// privateKeyAt matches the private-key rule at s[p]: the BEGIN line, then
// everything up to the first END marker, or (none after it) everything.
func (r *Redactor) privateKeyAt(s []byte, p int) []int {
	h, ok := r.pemMarkerEnd(s, p+len(pemBegin))
	if !ok {
		return nil
	}
	if e := r.nextPEMEnd(s, h); e >= 0 {
		return []int{p, e}
	}
	r.clip = true
	return []int{p, len(s)} // (?s) covers both alternatives: .* runs to the end
}

// nextPEMEnd returns the end of the first END marker starting at or after
// from, or -1. Successive calls (per rule pass) have growing from, so the
// last answer is reused while from has not passed it: the searches cover
// the text once.
func (r *Redactor) nextPEMEnd(s []byte, from int) int {
	if r.endFrom >= 0 && from >= r.endFrom && (r.endAt < 0 || from <= r.endAt) {
		return r.endEnd
	}
	r.endFrom, r.endAt, r.endEnd = from, -1, -1
	for q := from; q < len(s); {
		i := bytes.Index(s[q:], []byte(pemEnd))
		if i < 0 {
			break
		}
		q += i
		if e, ok := r.pemMarkerEnd(s, q+len(pemEnd)); ok {
			r.endAt, r.endEnd = q, e
			break
		}
		q++
	}
	return r.endEnd
}
