// Package suggest picks the "did you mean" word for a mistyped name: a
// command, a client, a server id, a tool, a configuration key. It owns the
// edit distance and the policy of what is close enough to be a likely
// typo, so every message that offers a correction offers the same one.
//
// It imports nothing but the standard library. The sandbox keeps its own
// copy of the distance because it is a leaf and may import nothing of
// ours.
//
// # Why a length cap instead of an exact distance for every input
//
// Names reach this package from the command line, from declarations and
// from upstream servers' tool listings, and the distance costs
// len(a)·len(b) steps. A typo of a name longer than MaxLen bytes is not
// worth a quadratic walk over every candidate, so such a name (or
// candidate) simply gets no suggestion. MCP tool names are at most 128
// characters, so every real name is still compared.
package suggest

import "strings"

// MaxLen is the longest name, in bytes, that is compared at all.
const MaxLen = 128

// Closest returns the candidate most like s, compared without regard to
// case, when it is close enough to be a likely typo; "" otherwise.
// Close enough: at most two edits (three for a word longer than eight
// bytes), and fewer edits than s has bytes (so "x" does not become "y").
// Among equally close candidates the lexically first wins, so the answer
// does not depend on the order of candidates.
func Closest(s string, candidates []string) string {
	limit := 2
	if len(s) > 8 {
		limit = 3
	}
	ls := strings.ToLower(s)
	best, bestD := "", limit+1
	for _, c := range candidates {
		d := Distance(ls, strings.ToLower(c), limit)
		if d < bestD || d == bestD && c < best {
			best, bestD = c, d
		}
	}
	if bestD > limit || bestD >= len(s) {
		return ""
	}
	return best
}

// Distance is the Levenshtein distance of a and b, counted in bytes, when
// it is at most limit; otherwise (and when either is longer than MaxLen
// bytes) it is limit+1.
func Distance(a, b string, limit int) int {
	if limit < 0 {
		limit = 0
	}
	if len(a) > MaxLen || len(b) > MaxLen || abs(len(a)-len(b)) > limit {
		return limit + 1
	}
	var rows [2][MaxLen + 1]int
	prev, cur := rows[0][:len(b)+1], rows[1][:len(b)+1]
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		low := i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			low = min(low, cur[j])
		}
		if low > limit { // every later row is at least as far
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit+1)
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
