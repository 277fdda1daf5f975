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
	return score(terms, func() string { return strings.ToLower(capability) }, &t)
}

// ScoreIn is Score for the capability SERVER__TOOL of server id (lower
// case, as every server id is): the capability is only built when a term
// is not found in the tool's name, and then into scratch, which the caller
// reuses from entry to entry.
func ScoreIn(terms []string, id string, t *Entry, scratch *[]byte) int {
	return score(terms, func() string {
		*scratch = append(append(append((*scratch)[:0], id...), "__"...), t.Name...)
		b := *scratch
		for i, c := range b {
			if 'A' <= c && c <= 'Z' {
				b[i] = c + 'a' - 'A'
			} else if c >= 0x80 {
				return strings.ToLower(string(b))
			}
		}
		return unsafe.String(unsafe.SliceData(b), len(b))
	}, t)
}

func score(terms []string, capability func() string, t *Entry) int {
	if !t.lowered {
		t.lower()
	}
	name, title, desc := t.lname, t.ltitle, t.ldesc
	full, built := "", false
	total := 0
	for _, term := range terms {
		s := 0
		switch {
		case name == term:
			s = 100
		case strings.Contains(name, term):
			s = 40
		default:
			if !built {
				full, built = capability(), true
			}
			if strings.Contains(full, term) {
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
			return 0
		}
		total += s
	}
	return total
}
