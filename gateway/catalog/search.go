package catalog

import (
	"strings"
	"unsafe"
)

// Search ranking over index entries: find (in the gateway) splits its query
// with QueryTerms and keeps the entries Score ranks above zero.

// QueryTerms splits a find query into lower-case search terms: runs of
// letters, digits, '_', '-', '.' and any non-ASCII rune.
func QueryTerms(q string) []string {
	f := strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
		return !(r == '_' || r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127)
	})
	return f
}

// Score ranks an entry for the query terms (QueryTerms): every term must
// match somewhere, or the score is 0; name matches weigh most, then the
// capability name (SERVER__TOOL, which find passes as capability), then the
// title, then the description.
func Score(terms []string, capability string, t Entry) int {
	full, built := "", false
	return score(terms, func(term string) bool {
		if !built {
			full, built = strings.ToLower(capability), true
		}
		return strings.Contains(full, term)
	}, &t, nil)
}

// Scratch is what ScoreIn keeps from one entry to the next; its zero
// value is ready. One Scratch serves one query.
type Scratch struct {
	capability []byte // the capability being built
	// reject is the term that rejected the last entry: most entries of a
	// query fail on the same term, which is then tried first.
	reject int
}

// ScoreIn is Score for the capability SERVER__TOOL of server id (lower
// case, as every server id is), without building the capability for a
// term with no '_' (only such a term can span the "__": any other is in
// the capability exactly when it is in id or in the tool's lower-case
// name); when it must be built, it is built into sc, which the caller
// reuses from entry to entry.
func ScoreIn(terms []string, id string, t *Entry, sc *Scratch) int {
	full, built := "", false
	return score(terms, func(term string) bool {
		if strings.IndexByte(term, '_') < 0 {
			return strings.Contains(id, term) || strings.Contains(t.lname, term)
		}
		if !built {
			full, built = sc.build(id, t.Name), true
		}
		return strings.Contains(full, term)
	}, t, sc)
}

// build returns id + "__" + name in lower case, in sc's memory when it is
// ASCII.
func (sc *Scratch) build(id, name string) string {
	sc.capability = append(append(append(sc.capability[:0], id...), "__"...), name...)
	b := sc.capability
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		} else if c >= 0x80 {
			return strings.ToLower(string(b))
		}
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// score ranks t; inCapability reports whether a term is in the entry's
// lower-case capability name.
func score(terms []string, inCapability func(term string) bool, t *Entry, sc *Scratch) int {
	if !t.lowered {
		t.lower()
	}
	name, title, desc := t.lname, t.ltitle, t.ldesc
	if sc != nil && len(terms) > 1 && sc.reject < len(terms) {
		// A term found nowhere scores the entry 0 whatever the others
		// score: ask first of the term that rejected the last entry.
		if term := terms[sc.reject]; !strings.Contains(name, term) && !strings.Contains(title, term) &&
			!strings.Contains(desc, term) && !inCapability(term) {
			return 0
		}
	}
	total := 0
	for i, term := range terms {
		s := 0
		switch {
		case name == term:
			s = 100
		case strings.Contains(name, term):
			s = 40
		default:
			if inCapability(term) {
				s = 25
			}
		}
		if strings.Contains(title, term) {
			s += 15
		}
		if n := strings.Count(desc, term); n > 0 {
			if n > 3 {
				n = 3
			}
			s += 5 * n
		}
		if s == 0 {
			if sc != nil {
				sc.reject = i
			}
			return 0
		}
		total += s
	}
	return total
}
