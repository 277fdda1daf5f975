package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// maxDiffLines bounds the lines compared per field; longer fields are shown
// as removed then added in full.
const maxDiffLines = 500

// Diff renders how the listing differs from b for a person: one block per
// changed, renamed, added or removed tool, with a line diff ("- " old,
// "+ " new, "  " same) of every field that changed. It is "" when nothing
// changed.
func Diff(b *Baseline, listed []json.RawMessage) string {
	defs := map[string]json.RawMessage{}
	var sums []Sum
	for _, raw := range listed {
		def, err := Definition(raw)
		if err != nil {
			continue
		}
		s := sumDef(def)
		sums = append(sums, s)
		defs[s.Name] = def
	}
	ch := Compare(b, sums)
	if ch.None() {
		return ""
	}
	old := map[string]json.RawMessage{}
	format := map[string]int{}
	if b != nil {
		for _, t := range b.Tools {
			old[t.Name] = t.Def
			format[t.Name] = b.Format
			if t.Format != 0 {
				format[t.Name] = t.Format
			}
		}
	}
	var w strings.Builder
	for _, name := range ch.Changed {
		fmt.Fprintf(&w, "changed  %s\n", name)
		fieldDiff(&w, old[name], defs[name], format[name])
	}
	for _, r := range ch.Renamed {
		fmt.Fprintf(&w, "renamed  %s -> %s (held; otherwise the same definition)\n", r.From, r.To)
	}
	for _, name := range ch.Added {
		fmt.Fprintf(&w, "added    %s\n", name)
		fieldDiff(&w, nil, defs[name], BaselineFormat)
	}
	for _, name := range ch.Removed {
		fmt.Fprintf(&w, "removed  %s\n", name)
	}
	return w.String()
}

// fieldDiff writes a line diff of every hashed field (but the name) that
// differs between two definitions; nil old shows new in full. format is
// the old definition's baseline format: a field it did not record is
// said to be new to the review rather than changed.
func fieldDiff(w *strings.Builder, oldDef, newDef json.RawMessage, format int) {
	var o, n map[string]json.RawMessage
	_ = json.Unmarshal(oldDef, &o)
	_ = json.Unmarshal(newDef, &n)
	for i, f := range hashedFields[1:] {
		if bytes.Equal(compact(o[f]), compact(n[f])) {
			continue
		}
		if format < 2 && i+1 >= formatOneFields && oldDef != nil {
			fmt.Fprintf(w, "  %s (not recorded by the format-%d baseline; accepting records it):\n", f, format)
		} else {
			fmt.Fprintf(w, "  %s:\n", f)
		}
		for _, l := range lineDiff(fieldLines(o[f]), fieldLines(n[f])) {
			w.WriteString("    " + l + "\n")
		}
	}
}

// fieldLines is a field as lines: a string's own lines, anything else as
// indented JSON.
func fieldLines(v json.RawMessage) []string {
	if len(v) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return strings.Split(s, "\n")
	}
	var b bytes.Buffer
	if json.Indent(&b, v, "", "  ") != nil {
		return []string{string(v)}
	}
	return strings.Split(b.String(), "\n")
}

// lineDiff is a longest-common-subsequence line diff.
func lineDiff(a, b []string) []string {
	var out []string
	if len(a) > maxDiffLines || len(b) > maxDiffLines {
		for _, l := range a {
			out = append(out, "- "+l)
		}
		for _, l := range b {
			out = append(out, "+ "+l)
		}
		return out
	}
	// lcs[i][j]: length of the LCS of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out = append(out, "  "+a[i])
			i++
			j++
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, "- "+a[i])
			i++
		default:
			out = append(out, "+ "+b[j])
			j++
		}
	}
	return out
}

// InstructionsDiff is the review lines of a server's instructions text
// changed from reviewed to now, each text quoted: control and invisible
// characters show as escapes, and a newline cannot forge a diff line.
func InstructionsDiff(reviewed, now string) string {
	return fmt.Sprintf("changed  (server instructions)\n  - %q\n  + %q\n", reviewed, now)
}
