package catalog

import (
	"slices"
	"testing"
)

func TestQueryTerms(t *testing.T) {
	for _, c := range []struct {
		q    string
		want []string
	}{
		{"Read FILE", []string{"read", "file"}},
		{"read_text-file.v2, grep!", []string{"read_text-file.v2", "grep"}},
		{"  ", nil},
		{"ünïcode", []string{"ünïcode"}},
	} {
		if got := QueryTerms(c.q); !slices.Equal(got, c.want) {
			t.Errorf("QueryTerms(%q) = %q, want %q", c.q, got, c.want)
		}
	}
}

func TestScore(t *testing.T) {
	read := Entry{Name: "read", Title: "Read a file", Description: "Reads a file. The file must exist."}
	for _, c := range []struct {
		name  string
		terms []string
		cap   string
		e     Entry
		want  int
	}{
		{"exact name", []string{"read"}, "fs__read", read, 100 + 15 + 5},
		{"name contains", []string{"rea"}, "fs__read", read, 40 + 15 + 5},
		{"server part of the capability", []string{"fs"}, "fs__read", read, 25},
		{"description only, counted up to 3", []string{"file"}, "fs__read", read, 15 + 5*2},
		{"every term must match", []string{"read", "absent"}, "fs__read", read, 0},
		{"no match", []string{"zzz"}, "fs__read", read, 0},
		{"case folded", []string{"read"}, "fs__READ", Entry{Name: "READ"}, 100},
	} {
		if got := Score(c.terms, c.cap, c.e); got != c.want {
			t.Errorf("%s: Score = %d, want %d", c.name, got, c.want)
		}
	}
}

// TestScoreInIsScore: ScoreIn, which builds the capability only when it
// must and first asks of the term that rejected the entry before, ranks
// every entry as Score does with the capability built.
func TestScoreInIsScore(t *testing.T) {
	entries := []Entry{
		{Name: "read", Title: "Read a file", Description: "Reads a file. The file must exist."},
		{Name: "READ_Dir", Title: "Directory", Description: "Lists a directory"},
		{Name: "x.y/z-w", Description: "FS access via fs__"},
		{Name: "dir_file", Title: "File in a directory", Description: "file file file file"},
		{Name: "zzz", Title: "Reads", Description: "write a file in a dir"},
		EntryOf([]byte(`{"name":"Write","title":"Écrire","description":"WRITE a file"}`)),
	}
	for _, q := range []string{"read", "fs", "fs__re", "s__read_d", "file", "écrire", "write file", "dir fs", "zzz", "_", "x.y/z",
		// Several terms, each rejecting some entries, so the term tried
		// first changes from entry to entry.
		"read zzz", "zzz read", "file dir", "dir file", "fs write file", "a file directory", "reads fs__ écrire",
		// A term that rejects one entry and is found only in the next one's
		// capability.
		"s__z file", "s__d zzz"} {
		terms := QueryTerms(q)
		var scratch Scratch // one per query, as find keeps it
		for _, e := range entries {
			cp := "fs__" + e.Name
			want := Score(terms, cp, e)
			e := e
			if got := ScoreIn(terms, "fs", &e, &scratch); got != want {
				t.Errorf("%q on %s: ScoreIn = %d, Score = %d", q, e.Name, got, want)
			}
		}
	}
}
