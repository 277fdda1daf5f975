package catalog

import "strings"

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
	if !t.lowered {
		t.lower()
	}
	name, title, desc := t.lname, t.ltitle, t.ldesc
	full := strings.ToLower(capability)
	total := 0
	for _, term := range terms {
		s := 0
		switch {
		case name == term:
			s = 100
		case strings.Contains(name, term):
			s = 40
		case strings.Contains(full, term):
			s = 25
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
