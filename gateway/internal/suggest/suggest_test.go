package suggest

import (
	"strings"
	"testing"
)

// reference is the plain quadratic Levenshtein distance, to check the
// bounded one against.
func reference(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
		}
	}
	return d[len(a)][len(b)]
}

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b  string
		limit int
		want  int
	}{
		{"", "", 2, 0},
		{"serve", "serve", 2, 0},
		{"sevre", "serve", 2, 2},
		{"cursr", "cursor", 2, 1},
		{"", "abc", 3, 3},
		{"", "abcd", 3, 4},          // over the limit: limit+1
		{"kitten", "sitting", 3, 3}, // the textbook pair
		{"kitten", "sitting", 2, 3}, // beyond limit 2
		{"abc", "abcdefgh", 2, 3},   // lengths differ by more than the limit
		{"zzzzzz", "cursor", 3, 4},  // far apart
		{"abc", "abc", -1, 0},       // a negative limit is 0
		{"abc", "abd", -1, 1},       // and anything apart is 1
		{"Serve", "serve", 2, 1},    // case counts here; Closest folds it
		{"héllo", "hello", 3, 2},    // bytes, not runes: é is two bytes
	} {
		if got := Distance(c.a, c.b, c.limit); got != c.want {
			t.Errorf("Distance(%q, %q, %d) = %d, want %d", c.a, c.b, c.limit, got, c.want)
		}
	}
}

func TestDistanceMatchesReference(t *testing.T) {
	words := []string{"", "a", "ab", "ba", "abc", "acb", "serve", "server", "servers", "sevre", "review",
		"reviews", "remove", "enable", "disable", "describe", "maxLineBytes", "maxlinebyte", "actionClass",
		"action_class", "passEnv", "pass-env", "onToolChange", "on-tool-change"}
	for _, a := range words {
		for _, b := range words {
			want := reference(a, b)
			for limit := 0; limit <= 4; limit++ {
				got := Distance(a, b, limit)
				if want <= limit && got != want || want > limit && got != limit+1 {
					t.Fatalf("Distance(%q, %q, %d) = %d; the distance is %d", a, b, limit, got, want)
				}
			}
		}
	}
}

func TestDistanceLongNames(t *testing.T) {
	long := strings.Repeat("a", MaxLen)
	if got := Distance(long, long[:MaxLen-1]+"b", 2); got != 1 {
		t.Fatalf("a %d-byte name: got %d, want 1", MaxLen, got)
	}
	longer := long + "a"
	if got := Distance(longer, longer, 2); got != 3 {
		t.Fatalf("a name over MaxLen is not compared: got %d, want 3", got)
	}
}

func TestClosest(t *testing.T) {
	commands := []string{"add", "call", "describe", "find", "remove", "review", "run", "serve", "servers", "status", "trust"}
	for _, c := range []struct {
		s    string
		cand []string
		want string
	}{
		{"sevre", commands, "serve"},
		{"SERVE", commands, "serve"},           // case is ignored
		{"desribe", commands, "describe"},      // one edit
		{"reveiw", commands, "review"},         // two edits
		{"serve", commands, "serve"},           // an exact match is its own answer
		{"zzzzzz", commands, ""},               // nothing close
		{"x", []string{"y"}, ""},               // as many edits as the word has bytes
		{"ab", []string{"ba", "ab_"}, "ab_"},   // the nearest wins
		{"cat", []string{"car", "bat"}, "bat"}, // a tie goes to the lexically first
		{"cat", []string{"bat", "car"}, "bat"}, // whatever the order
		{"maxlinebyts", []string{"maxLineBytes", "cwd"}, "maxLineBytes"},
		{"mxlinbyts", []string{"maxLineBytes"}, "maxLineBytes"}, // three edits: allowed above eight bytes
		{"srvs", []string{"servers"}, ""},                       // three edits: not for a short word
		{"fx__ecoh", []string{"fx__echo", "fx__add"}, "fx__echo"},
		{"", commands, ""},
		{"sevre", nil, ""},
		{strings.Repeat("s", MaxLen+1), []string{strings.Repeat("s", MaxLen)}, ""},
	} {
		if got := Closest(c.s, c.cand); got != c.want {
			t.Errorf("Closest(%q, %q) = %q, want %q", c.s, c.cand, got, c.want)
		}
	}
}

func FuzzDistance(f *testing.F) {
	f.Add("kitten", "sitting", 3)
	f.Add("", "abc", 0)
	f.Fuzz(func(t *testing.T, a, b string, limit int) {
		limit = limit % 8
		if len(a) > MaxLen || len(b) > MaxLen {
			if got := Distance(a, b, limit); got != max(limit, 0)+1 {
				t.Fatalf("over MaxLen: %d", got)
			}
			return
		}
		want := reference(a, b)
		got := Distance(a, b, limit)
		l := max(limit, 0)
		if want <= l && got != want || want > l && got != l+1 {
			t.Fatalf("Distance(%q, %q, %d) = %d; the distance is %d", a, b, limit, got, want)
		}
	})
}
