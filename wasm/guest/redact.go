package guest

import (
	"bytes"
	"errors"
	"math/bits"
	"regexp"
	"strconv"
	"sync"
)

// Why the built-in rules are not simply run over the whole text
//
// Each rule's regexp over a whole text costs the regexp engine's per-byte
// price for every byte, eight times over; in a guest, where every loop
// back-edge pays the host's termination check, that was ~10 ms per KiB.
// Instead one pass over the text, eight bytes a step, flags the byte pairs
// a built-in match can start with and keeps the positions where a cheap
// literal check (a rule's fixed anchor: "AKIA", "ghp_", "-----BEGIN ",
// case-folded "bearer" ...) passes; a raw JSON string with none (and no
// \u escape) is not even decoded. Each rule is then matched only at its
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

// builtinRule is one built-in secret rule.
type builtinRule struct {
	name, expr string
	keep       int    // leading submatch groups written back unmasked (a label, "Bearer ")
	lead       bool   // expr starts with \b before a word character
	first      string // the bytes a match can start with
	// at is a cheap necessary condition for a match starting at s[p]
	// (s[p] is one of first). It reads at most atReach bytes from s[p]
	// and nothing before: redactBuiltins relies on it to keep candidates
	// across masks.
	at func(s []byte, p int) bool
	// end, for a rule matched by its regexp, returns an index such that
	// any match starting at p ends strictly before it (or at len(s)); the
	// anchored regexp runs on s[p:end].
	end func(s []byte, p int) int
	// match, when set, replaces the regexp: the leftmost-first match at
	// s[p] (leading \b already checked) as FindSubmatchIndex would report
	// it, or nil. Set for the rules whose regexp is a literal and runs of a
	// class, where the answer follows from run lengths.
	match func(s []byte, p int) []int
}

// builtinRules are the secrets masked by default, in the order they apply.
var builtinRules = []builtinRule{
	{name: "private-key", expr: `-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*)`,
		first: "-", at: prefixAt(pemBegin)},
	{name: "aws-access-key-id", expr: `\b(?:AKIA|ASIA|ABIA|ACCA|AIDA|AROA)[0-9A-Z]{16}\b`,
		lead: true, first: "A", at: awsKeyIDAt, match: awsKeyIDMatch},
	{name: "aws-secret-access-key", expr: `(?i)(aws.{0,20}?(?:secret|private).{0,20}?|secret_?access_?key)([\s"':=]+)[A-Za-z0-9/+=]{40}\b`,
		keep: 2, first: "aAsS\xc5", at: awsSecretAt, end: awsSecretEnd},
	{name: "github-token", expr: `\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b`,
		lead: true, first: "g", at: githubTokenAt, match: wordRunMatch(4, isAlnum, 36, 255)},
	{name: "github-pat", expr: `\bgithub_pat_[A-Za-z0-9_]{22,255}\b`,
		lead: true, first: "g", at: prefixAt("github_pat_"), match: wordRunMatch(11, isWordByte, 22, 255)},
	{name: "gitlab-token", expr: `\bglpat-[A-Za-z0-9_\-]{20,}`,
		lead: true, first: "g", at: prefixAt("glpat-"), match: runMatch(6, isGitlabByte, 20)},
	{name: "slack-token", expr: `\bxox[abposre]-[A-Za-z0-9-]{10,}`,
		lead: true, first: "x", at: slackAt, match: runMatch(5, isSlackByte, 10)},
	{name: "bearer-token", expr: `(?i)(\bbearer)(\s+)[A-Za-z0-9\-._~+/]{8,}=*`,
		keep: 2, lead: true, first: "bB", at: bearerAt, match: bearerMatch},
}

const (
	privateKeyRule = 0
	awsSecretRule  = 2
)

// atReach bounds the bytes builtinRule.at reads ("-----BEGIN " and
// "github_pat_" are the longest anchors).
const atReach = 16

// uEscapeBit is the pseudo-rule raw JSON strings are checked with
// (mayChange): a backslash not followed by one of "\/bfnrt (a \u escape,
// which could spell an anchor, or an invalid escape, which decoding must
// report) means the string must be decoded.
const uEscapeBit = 1 << 15

var (
	// startRules[c] has bit i set when built-in rule i can match from a byte c.
	startRules [256]uint16
	// anchored[i] is builtinRules[i].expr anchored at the text start (nil
	// for the rules with their own matcher).
	anchored []*regexp.Regexp
)

// redactTables fills startRules and anchored, once, on the first
// NewRedactor (not at package init: the shape filter links this package
// too and must not pay for compiling regexps it never runs).
var redactTables = sync.OnceFunc(func() {
	for i, b := range builtinRules {
		for j := 0; j < len(b.first); j++ {
			startRules[b.first[j]] |= 1 << i
		}
		var re *regexp.Regexp
		if b.match == nil && i != privateKeyRule {
			re = regexp.MustCompile(`\A(?:` + b.expr + `)`)
		}
		anchored = append(anchored, re)
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

// Redactor masks secrets in the model-facing strings of MCP tool results.
// Its buffers are reused across calls, so a Redactor is not safe for
// concurrent use.
type Redactor struct {
	// Skip, if set, returns the index just past the JSON string starting
	// at index i of the result being redacted (in a guest: InputSkip, the
	// host's native scanner; only valid when RedactResult is given the
	// call's whole input). nil = SkipString.
	Skip func(i int) (int, error)

	builtins uint16       // bit i: builtinRules[i] is enabled
	extra    []redactRule // configured patterns, run over the whole text
	cands    [16][]int    // per built-in rule: candidate match starts
	spare    []int        // carry's other candidate buffer
	spans    [][2]int     // mask: where each replacement went
	locs     [][]int
	str      []byte
	out      []byte
	// private-key END-marker search memo (see nextPEMEnd)
	endFrom, endAt, endEnd int
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
		s = mask(s, locs, rule.name, rule.keep)
	}
	return s, changed
}

// redactBuiltins applies the enabled built-in rules in order.
func (r *Redactor) redactBuiltins(s []byte) ([]byte, bool) {
	changed := false
	todo := r.builtins
	r.scan(s, todo)
	for i := range builtinRules {
		bit := uint16(1) << i
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
		ns := r.mask(s, locs, builtinRules[i].name, builtinRules[i].keep)
		// The masks moved the text after them and replaced some of it:
		// carry the later rules' candidates over.
		for m := todo; m != 0; m &= m - 1 {
			r.carry(bits.TrailingZeros16(m), s, ns, locs)
		}
		s = ns
	}
	return s, changed
}

// carry maps rule k's candidates in s to the text ns that masking locs of s
// produced (r.spans: where each mask went). A candidate's check reads at
// most atReach bytes, so one further than that before a match keeps its
// verdict and only moves; the bytes just before each mask and the mask
// itself are checked again.
func (r *Redactor) carry(k int, s, ns []byte, locs [][]int) {
	old, nw := r.cands[k], r.spare[:0]
	b := &builtinRules[k]
	bit := uint16(1) << k
	oi, oldEnd, newEnd := 0, 0, 0
	for j, m := range locs {
		for ; oi < len(old) && old[oi] < m[0]-atReach; oi++ {
			if old[oi] >= oldEnd {
				nw = append(nw, old[oi]-oldEnd+newEnd)
			}
		}
		for oi < len(old) && old[oi] < m[1] {
			oi++
		}
		sp := r.spans[j]
		for p := max(newEnd, sp[0]-atReach); p < sp[1]; p++ {
			if startRules[ns[p]]&bit != 0 && b.at(ns, p) {
				nw = append(nw, p)
			}
		}
		oldEnd, newEnd = m[1], sp[1]
	}
	for ; oi < len(old); oi++ {
		if old[oi] >= oldEnd {
			nw = append(nw, old[oi]-oldEnd+newEnd)
		}
	}
	r.cands[k], r.spare = nw, old
}

// scan records, for each rule in mask, every position of s where a match of
// it could start. It reads s eight bytes at a time (SWAR) and flags the
// positions whose byte pair can begin some rule's anchor ("--", "A", "aw",
// "se", "ſ", "gh"/"gi"/"gl", "xo", "be", letters case-folded); only those go
// through the per-rule checks. A guest pays for every loop iteration, so one
// iteration per eight bytes is what makes the pass cheap.
func (r *Redactor) scan(s []byte, mask uint16) {
	for m := mask &^ uEscapeBit; m != 0; m &= m - 1 {
		i := bits.TrailingZeros16(m)
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
		eqMask(fx, 'a')&eqMask(fy, 'w') |
		eqMask(fx, 's')&eqMask(fy, 'e') |
		eqMask(x, 0xc5) |
		eqMask(x, 'g')&(eqMask(y, 'h')|eqMask(y, 'i')|eqMask(y, 'l')) |
		eqMask(x, 'x')&eqMask(y, 'o') |
		eqMask(fx, 'b')&eqMask(fy, 'e')
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
func (r *Redactor) candidates(s []byte, i int, hit uint64, mask uint16) {
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
func (r *Redactor) candidate(s []byte, p int, mask uint16) {
	m := startRules[s[p]] & mask &^ uEscapeBit
	for m != 0 {
		k := bits.TrailingZeros16(m)
		m &= m - 1
		if builtinRules[k].at(s, p) {
			r.cands[k] = append(r.cands[k], p)
		}
	}
}

// matches returns what FindAllSubmatchIndex(s, -1) of built-in rule i
// returns, looking only at its candidates.
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
			if b.lead && p > 0 && isWordByte(s[p-1]) {
				continue // no \b before s[p]
			}
			if b.match != nil {
				loc = b.match(s, p)
			} else {
				e := b.end(s, p)
				if i == awsSecretRule && !hasKeyRun(s[p:e]) {
					continue // no 40-character key in reach: skip the regexp
				}
				loc = anchored[i].FindSubmatchIndex(s[p:e])
				for k := range loc {
					if loc[k] >= 0 {
						loc[k] += p
					}
				}
			}
		}
		if loc == nil {
			continue
		}
		r.locs = append(r.locs, loc)
		pos = loc[1]
	}
	return r.locs
}

// mask replaces each match in locs with [REDACTED:name], keeping the first
// keep submatch groups.
func mask(s []byte, locs [][]int, name string, keep int) []byte {
	var out []byte
	last := 0
	for _, m := range locs {
		out = append(out, s[last:m[0]]...)
		for g := 1; g <= keep && 2*g+1 < len(m); g++ {
			if m[2*g] >= 0 {
				out = append(out, s[m[2*g]:m[2*g+1]]...)
			}
		}
		out = append(out, "[REDACTED:"...)
		out = append(out, name...)
		out = append(out, ']')
		last = m[1]
	}
	return append(out, s[last:]...)
}

// mask is the package mask that also records in r.spans where each
// match's replacement lies in the new text.
func (r *Redactor) mask(s []byte, locs [][]int, name string, keep int) []byte {
	out := make([]byte, 0, len(s)+len(locs)*(len(name)+11))
	r.spans = r.spans[:0]
	last := 0
	for _, m := range locs {
		out = append(out, s[last:m[0]]...)
		start := len(out)
		for g := 1; g <= keep && 2*g+1 < len(m); g++ {
			if m[2*g] >= 0 {
				out = append(out, s[m[2*g]:m[2*g+1]]...)
			}
		}
		out = append(out, "[REDACTED:"...)
		out = append(out, name...)
		out = append(out, ']')
		r.spans = append(r.spans, [2]int{start, len(out)})
		last = m[1]
	}
	return append(out, s[last:]...)
}

// Anchor checks and window ends of the built-in rules.

const (
	pemBegin = "-----BEGIN "
	pemEnd   = "-----END "
	pemTail  = "PRIVATE KEY-----"
)

func isWordByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_'
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

func isGitlabByte(c byte) bool { return isAlnum(c) || c == '_' || c == '-' }
func isSlackByte(c byte) bool  { return isAlnum(c) || c == '-' }

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

// foldPrefix reports whether s[p:] starts with word (lower-case ASCII) under
// regexp's (?i) folding, which also matches "ſ" (U+017F) for s and "K"
// (U+212A) for k.
func foldPrefix(s []byte, p int, word string) bool {
	for i := 0; i < len(word); i++ {
		if p >= len(s) {
			return false
		}
		c, w := s[p], word[i]
		switch {
		case c|0x20 == w && (w >= 'a' && w <= 'z'):
			p++
		case w == 's' && c == 0xc5 && p+1 < len(s) && s[p+1] == 0xbf:
			p += 2
		case w == 'k' && c == 0xe2 && p+2 < len(s) && s[p+1] == 0x84 && s[p+2] == 0xaa:
			p += 3
		default:
			return false
		}
	}
	return true
}

func awsSecretAt(s []byte, p int) bool {
	return foldPrefix(s, p, "aws") || foldPrefix(s, p, "secret")
}

// awsSecretLabelMax bounds the bytes of the label group: "aws" (4 bytes
// with ſ), .{0,20} (4 bytes a character), secret|private (7), .{0,20}.
const awsSecretLabelMax = 4 + 80 + 7 + 80

// awsSecretEnd: the label ends within awsSecretLabelMax bytes; the
// separator run ([\s"':=]+) that follows may be longer, but past that bound
// it is a run of separator bytes; then 40 key characters (up to 3 bytes
// each: (?i) adds K and ſ to the class) and the byte \b looks at.
func awsSecretEnd(s []byte, p int) int {
	w := min(len(s), p+awsSecretLabelMax)
	for w < len(s) && isAWSSep(s[w]) {
		w++
	}
	return min(len(s), w+40*3+1)
}

// hasKeyRun reports whether w holds 40 bytes in a row that may be key
// characters ([A-Za-z0-9/+=], or any non-ASCII byte: (?i) adds K and ſ).
// Every aws-secret-access-key match has one, so without it the (costly)
// regexp cannot match.
func hasKeyRun(w []byte) bool {
	run := 0
	for _, c := range w {
		if isAlnum(c) || c == '/' || c == '+' || c == '=' || c >= 0x80 {
			if run++; run >= 40 {
				return true
			}
			continue
		}
		run = 0
	}
	return false
}

func isAWSSep(c byte) bool {
	return isSpaceRE(c) || c == '"' || c == '\'' || c == ':' || c == '='
}

func bearerAt(s []byte, p int) bool { return foldPrefix(s, p, "bearer") }

// awsKeyIDMatch: the prefix (checked by awsKeyIDAt), 16 of [0-9A-Z], and
// \b after the last (a word character): the next byte is not one.
func awsKeyIDMatch(s []byte, p int) []int {
	e := p + 20
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
func wordRunMatch(k int, class func(byte) bool, lo, hi int) func(s []byte, p int) []int {
	return func(s []byte, p int) []int {
		i := p + k
		for i < len(s) && class(s[i]) {
			i++
		}
		if n := i - p - k; n < lo || n > hi || i < len(s) && isWordByte(s[i]) {
			return nil
		}
		return []int{p, i}
	}
}

// runMatch: k literal bytes, then class{lo,} (greedy, nothing after it).
func runMatch(k int, class func(byte) bool, lo int) func(s []byte, p int) []int {
	return func(s []byte, p int) []int {
		i := p + k
		for i < len(s) && class(s[i]) {
			i++
		}
		if i-p-k < lo {
			return nil
		}
		return []int{p, i}
	}
}

// bearerMatch: (bearer)(\s+) then at least 8 token characters ((?i) adds ſ
// and K to the class, one character each) and "=*". The token class holds
// no space and no '=', so every run is taken whole.
func bearerMatch(s []byte, p int) []int {
	ws := p + 6
	i := ws
	for i < len(s) && isSpaceRE(s[i]) {
		i++
	}
	if i == ws {
		return nil
	}
	tok, n := i, 0
	for i < len(s) {
		c := s[i]
		switch {
		case isAlnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/':
			i++
		case c == 0xc5 && i+1 < len(s) && s[i+1] == 0xbf: // ſ
			i += 2
		case c == 0xe2 && i+2 < len(s) && s[i+1] == 0x84 && s[i+2] == 0xaa: // K
			i += 3
		default:
			goto done
		}
		n++
	}
done:
	if n < 8 {
		return nil
	}
	for i < len(s) && s[i] == '=' {
		i++
	}
	return []int{p, i, p, ws, ws, tok}
}

// pemMarkerEnd matches `[A-Z0-9 ]*PRIVATE KEY-----` at s[i:]. The class run
// is greedy and "PRIVATE KEY" lies inside it, followed by '-' (outside it),
// so the only possible split puts "PRIVATE KEY" at the run's end.
func pemMarkerEnd(s []byte, i int) (int, bool) {
	j := i
	for j < len(s) && (s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9' || s[j] == ' ') {
		j++
	}
	k := j - len("PRIVATE KEY")
	if k < i || !bytes.HasPrefix(s[k:], []byte(pemTail)) {
		return 0, false
	}
	return k + len(pemTail), true
}

// privateKeyAt matches the private-key rule at s[p]: the BEGIN line, then
// everything up to the first END marker, or (none after it) everything.
func (r *Redactor) privateKeyAt(s []byte, p int) []int {
	h, ok := pemMarkerEnd(s, p+len(pemBegin))
	if !ok {
		return nil
	}
	if e := r.nextPEMEnd(s, h); e >= 0 {
		return []int{p, e}
	}
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
		if e, ok := pemMarkerEnd(s, q+len(pemEnd)); ok {
			r.endAt, r.endEnd = q, e
			break
		}
		q++
	}
	return r.endEnd
}

// The JSON walk: each level is walked once (Object/Array hand the value's
// start to the callback, which returns its end), so the cost is linear in
// the input whatever the nesting. It accepts exactly what Members/skipValue
// accept (same grammar, same depth limit, counted from 1 at a top-level
// member's value), so malformed input fails as it always did.

// skipStr returns the index past the string at b[i]. Short strings are
// skipped here; for a long one the host's native skip is used when set.
func (r *Redactor) skipStr(b []byte, i int) (int, error) {
	if r.Skip == nil {
		return SkipString(b, i)
	}
	// The first unescaped quote within a prefix is the string's end (the
	// backslash count looks backwards only).
	if e, err := SkipString(b[:min(len(b), i+longString)], i); err == nil {
		return e, nil
	}
	return r.Skip(i)
}

// longString: strings longer than this are skipped by Redactor.Skip.
const longString = 256

// skip returns the index past the value at b[i], at nesting depth depth.
func (r *Redactor) skip(b []byte, i, depth int) (int, error) {
	if depth > maxDepth {
		return 0, ErrSyntax
	}
	if b[i] == '"' {
		return r.skipStr(b, i)
	}
	return skipValue(b, i, depth)
}

// mayChange reports whether RedactText could change the string whose raw
// JSON form is raw, without decoding it. Anchors are made of characters
// JSON never escapes except as \uXXXX, so unless raw has a \u escape, every
// anchor of the decoded text appears as is in raw (and the checks only get
// more permissive on the longer raw form). Decoding and re-encoding a long
// string costs more in a guest than this scan.
func (r *Redactor) mayChange(raw []byte) bool {
	if len(r.extra) > 0 {
		return true
	}
	mask := r.builtins | uEscapeBit
	i := 0
	for ; i+33 <= len(raw); i += 32 {
		h0, h1, h2, h3 := anchorHits(raw, i), anchorHits(raw, i+8), anchorHits(raw, i+16), anchorHits(raw, i+24)
		if h0|h1|h2|h3 == 0 {
			continue
		}
		if anyAnchor(raw, i, h0, mask) || anyAnchor(raw, i+8, h1, mask) || anyAnchor(raw, i+16, h2, mask) || anyAnchor(raw, i+24, h3, mask) {
			return true
		}
	}
	for ; i+9 <= len(raw); i += 8 {
		if anyAnchor(raw, i, anchorHits(raw, i), mask) {
			return true
		}
	}
	for ; i < len(raw); i++ {
		if isAnchor(raw, i, mask) {
			return true
		}
	}
	return false
}

// anyAnchor reports whether a byte of s[i:i+8] flagged in hit passes an
// anchor check of a rule in mask (or is a backslash uEscapeBit flags).
func anyAnchor(s []byte, i int, hit uint64, mask uint16) bool {
	for hit != 0 {
		p := i + bits.TrailingZeros64(hit)>>3
		hit &= hit - 1
		if isAnchor(s, p, mask) {
			return true
		}
	}
	return false
}

// isAnchor is candidate's test without the bookkeeping.
func isAnchor(s []byte, p int, mask uint16) bool {
	m := startRules[s[p]] & mask
	if m&uEscapeBit != 0 {
		m &^= uEscapeBit
		if p+1 < len(s) {
			switch s[p+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			default:
				return true
			}
		}
	}
	for m != 0 {
		k := bits.TrailingZeros16(m)
		m &= m - 1
		if builtinRules[k].at(s, p) {
			return true
		}
	}
	return false
}

// redactString rewrites the raw JSON string value raw onto out.
func (r *Redactor) redactString(out, raw []byte) ([]byte, bool, error) {
	if !r.mayChange(raw) {
		return append(out, raw...), false, nil
	}
	var err error
	r.str, err = AppendUnquote(r.str[:0], raw)
	if err != nil {
		return out, false, err
	}
	text, changed := r.RedactText(r.str)
	if !changed {
		return append(out, raw...), false, nil
	}
	return AppendQuote(out, text), true, nil
}

// redactValue copies the JSON value starting at b[s] onto out, redacting
// every string value (object keys are kept); it returns the index past the
// value.
func (r *Redactor) redactValue(out, b []byte, s, depth int) ([]byte, int, bool, error) {
	if depth > maxDepth {
		return out, 0, false, ErrSyntax
	}
	switch b[s] {
	case '"':
		e, err := r.skipStr(b, s)
		if err != nil {
			return out, 0, false, err
		}
		out, ch, err := r.redactString(out, b[s:e])
		return out, e, ch, err
	case '{':
		out = append(out, '{')
		any, n := false, 0
		e, err := Object(b, s, func(k []byte, vs int) (int, error) {
			if n > 0 {
				out = append(out, ',')
			}
			n++
			out = append(out, k...)
			out = append(out, ':')
			var ch bool
			var ve int
			var err error
			out, ve, ch, err = r.redactValue(out, b, vs, depth+1)
			any = any || ch
			return ve, err
		})
		return append(out, '}'), e, any, err
	case '[':
		out = append(out, '[')
		any, n := false, 0
		e, err := Array(b, s, func(vs int) (int, error) {
			if n > 0 {
				out = append(out, ',')
			}
			n++
			var ch bool
			var ve int
			var err error
			out, ve, ch, err = r.redactValue(out, b, vs, depth+1)
			any = any || ch
			return ve, err
		})
		return append(out, ']'), e, any, err
	}
	e, err := skipValue(b, s, depth)
	if err != nil {
		return out, 0, false, err
	}
	return append(out, b[s:e]...), e, false, nil
}

// redactItem copies the content item starting at b[s], redacting its text
// (and an embedded resource's text); it returns the index past the item.
func (r *Redactor) redactItem(out, b []byte, s, depth int) ([]byte, int, bool, error) {
	if b[s] != '{' || depth > maxDepth {
		e, err := r.skip(b, s, depth)
		if err != nil {
			return out, 0, false, err
		}
		return append(out, b[s:e]...), e, false, nil
	}
	out = append(out, '{')
	any, n := false, 0
	e, err := Object(b, s, func(k []byte, vs int) (int, error) {
		if n > 0 {
			out = append(out, ',')
		}
		n++
		out = append(out, k...)
		out = append(out, ':')
		var ch bool
		var ve int
		var err error
		switch {
		case KeyIs(k, "text") && b[vs] == '"':
			if ve, err = r.skip(b, vs, depth+1); err == nil {
				out, ch, err = r.redactString(out, b[vs:ve])
			}
		case KeyIs(k, "resource") && b[vs] == '{':
			out, ve, ch, err = r.redactItem(out, b, vs, depth+1)
		default:
			if ve, err = r.skip(b, vs, depth+1); err == nil {
				out = append(out, b[vs:ve]...)
			}
		}
		any = any || ch
		return ve, err
	})
	return append(out, '}'), e, any, err
}

// RedactResult masks secrets in the text of content items, the text of
// embedded resources and every string value inside structuredContent. It
// returns (nil, false, nil) when nothing had to change. The returned slice
// is reused by the next call.
func (r *Redactor) RedactResult(result []byte) ([]byte, bool, error) {
	out := append(r.out[:0], '{')
	any, n := false, 0
	_, err := Object(result, 0, func(k []byte, vs int) (int, error) {
		if n > 0 {
			out = append(out, ',')
		}
		n++
		out = append(out, k...)
		out = append(out, ':')
		var ch bool
		var ve int
		var err error
		switch {
		case KeyIs(k, "content") && result[vs] == '[':
			out = append(out, '[')
			m := 0
			ve, err = Array(result, vs, func(is int) (int, error) {
				if m > 0 {
					out = append(out, ',')
				}
				m++
				var c bool
				var ie int
				var err error
				out, ie, c, err = r.redactItem(out, result, is, 2)
				ch = ch || c
				return ie, err
			})
			out = append(out, ']')
		case KeyIs(k, "structuredContent"):
			out, ve, ch, err = r.redactValue(out, result, vs, 1)
		default:
			if ve, err = r.skip(result, vs, 1); err == nil {
				out = append(out, result[vs:ve]...)
			}
		}
		any = any || ch
		return ve, err
	})
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
