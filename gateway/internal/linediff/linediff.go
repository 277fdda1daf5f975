// Package linediff shows, before a hand-maintained file is rewritten,
// which of its lines change: the declaration file ('sluice add', 'import
// --write'), a client's config ('sluice install', 'uninstall'). It imports
// nothing but the standard library.
//
// # Why the common ends and not a full diff
//
// Every edit sluice makes to such a file is one contiguous splice (an
// entry added, replaced or removed), so leaving out the lines the two
// versions share at the start and at the end shows exactly the edit, in
// linear time, with the line numbers a person would look for.
package linediff

import (
	"fmt"
	"strings"
)

// Changed lists the lines between the common first and last lines of a
// and b: each line of a as "-" and each line of b as "+", with its line
// number, in the form "+  12  text\n". mask, when not nil, rewrites each
// line before it is shown (to hide secrets). A line whose only change is
// its newline is listed too; bytes that are not UTF-8 are shown as U+FFFD.
func Changed(a, b []byte, mask func(string) string) string {
	al, bl := lines(a), lines(b)
	pre := 0
	for pre < len(al) && pre < len(bl) && al[pre] == bl[pre] {
		pre++
	}
	suf := 0
	for suf < len(al)-pre && suf < len(bl)-pre && al[len(al)-1-suf] == bl[len(bl)-1-suf] {
		suf++
	}
	var out strings.Builder
	show := func(sign byte, n int, l string) {
		l = strings.ToValidUTF8(strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r"), "\uFFFD")
		if mask != nil {
			l = mask(l)
		}
		fmt.Fprintf(&out, "%c%4d  %s\n", sign, n, l)
	}
	for i := pre; i < len(al)-suf; i++ {
		show('-', i+1, al[i])
	}
	for i := pre; i < len(bl)-suf; i++ {
		show('+', i+1, bl[i])
	}
	return out.String()
}

// lines splits b after each newline; the last line may lack one.
func lines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	l := strings.SplitAfter(string(b), "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}
