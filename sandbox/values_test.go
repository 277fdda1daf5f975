package sandbox

import (
	"encoding/json"
	"strings"
	"testing"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// tuplify turns every list of v into a tuple (hashable, and compared by
// the tuple path).
func tuplify(v starlark.Value) starlark.Value {
	switch x := v.(type) {
	case *starlark.List:
		t := make(starlark.Tuple, x.Len())
		for i := range t {
			t[i] = tuplify(x.Index(i))
		}
		return t
	case *starlark.Dict:
		d := starlark.NewDict(x.Len())
		for k, e := range x.Entries() {
			_ = d.SetKey(k, tuplify(e))
		}
		return d
	}
	return v
}

func valueDepth(v starlark.Value) int {
	switch x := v.(type) {
	case starlark.Indexable:
		if _, ok := v.(starlark.String); ok {
			return 0
		}
		d := 0
		for i := 0; i < x.Len(); i++ {
			d = max(d, valueDepth(x.Index(i)))
		}
		return d + 1
	case *starlark.Dict:
		d := 0
		for _, e := range x.Entries() {
			d = max(d, valueDepth(e))
		}
		return d + 1
	}
	return 0
}

var compareOps = []syntax.Token{syntax.EQL, syntax.NEQ, syntax.LT, syntax.LE, syntax.GT, syntax.GE}

// checkWalks compares the sandbox's walks with starlark-go's own on a and
// b: printing, the six comparisons and membership give the same results
// and the same errors (within starlark-go's comparison depth of 10).
func checkWalks(t *testing.T, a, b starlark.Value) {
	w := &walker{}
	for _, v := range []starlark.Value{a, b} {
		got, err := w.render(v, true, 1<<30)
		if valueDepth(v) > MaxValueDepth {
			if err == nil {
				t.Fatalf("repr of a value %d deep: no error", valueDepth(v))
			}
			continue
		}
		if err != nil || got != v.String() {
			t.Fatalf("repr differs:\n got %q (%v)\nwant %q", got, err, v.String())
		}
		if err := w.checkKey(v); err != nil && valueDepth(v) <= MaxValueDepth && !strings.Contains(err.Error(), "large") {
			t.Fatalf("checkKey(%s): %v", v, err)
		}
	}
	if valueDepth(a) >= starlark.CompareLimit || valueDepth(b) >= starlark.CompareLimit {
		return
	}
	for _, op := range compareOps {
		want, werr := starlark.Compare(op, a, b)
		got, gerr := w.compare(op, a, b, 0)
		if want != got || (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			t.Fatalf("%s %s %s:\n got %v (%v)\nwant %v (%v)", a, op, b, got, gerr, want, werr)
		}
	}
	want, werr := starlark.Binary(syntax.IN, a, b)
	got, gerr := w.contains(a, b)
	if (werr == nil) != (gerr == nil) || (werr == nil && bool(want.Truth()) != got) || (werr != nil && werr.Error() != gerr.Error()) {
		t.Fatalf("%s in %s:\n got %v (%v)\nwant %v (%v)", a, b, got, gerr, want, werr)
	}
}

// TestWalksMatchStarlark: the walks agree with starlark-go on values of
// every shape the JSON conversion and scripts build.
func TestWalksMatchStarlark(t *testing.T) {
	docs := []string{`1`, `1.5`, `"a\"\n\u00e9"`, `null`, `true`, `[]`, `{}`, `[1, [2, "x"]]`, `[1, [2, "y"]]`, `[1, [2]]`,
		`{"a": [1, {"b": null}], "c": 2}`, `{"c": 2, "a": [1, {"b": null}]}`, `{"a": 1}`, `[[[[[[[[[1]]]]]]]]]`, `[1.0, 2]`, `[1, 2.5]`,
		`{"$literal": "1e400"}`, `["a", ["b"], [["c"]]]`, `[null, null]`, `[true, 1]`}
	var vals []starlark.Value
	for _, d := range docs {
		v, err := fromJSON([]byte(d))
		if err != nil {
			t.Fatal(err)
		}
		vals = append(vals, v, tuplify(v))
	}
	l := starlark.NewList(nil)
	_ = l.Append(l) // a list holding itself
	vals = append(vals, l)
	for _, a := range vals {
		for _, b := range vals {
			if a == l || b == l {
				if got, err := (&walker{}).render(a, true, 1<<20); err != nil || got != a.String() {
					t.Fatalf("repr %q (%v), want %q", got, err, a.String())
				}
				continue
			}
			checkWalks(t, a, b)
		}
	}
}

// FuzzValueWalks checks the walks against starlark-go on two JSON values,
// as decoded and with their lists turned into tuples.
func FuzzValueWalks(f *testing.F) {
	for _, s := range [][2]string{
		{`[1, [2, "x"]]`, `[1, [2, "y"]]`}, {`{"a": [1]}`, `{"a": [1]}`}, {`[1.5, 2]`, `[1.5]`}, {`"a"`, `["a", "b"]`},
		{`[[[[]]]]`, `[[[[]]]]`}, {`{"k": 1}`, `"k"`}, {`[{"$literal": "1e400"}]`, `[1e400]`}, {`[null]`, `[true]`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, x, y []byte) {
		if !json.Valid(x) || !json.Valid(y) {
			return
		}
		a, err1 := fromJSON(x)
		b, err2 := fromJSON(y)
		if err1 != nil || err2 != nil {
			return
		}
		checkWalks(t, a, b)
		checkWalks(t, tuplify(a), tuplify(b))
		checkWalks(t, a, tuplify(b))
	})
}
