package sandbox

import (
	"strings"
	"testing"
)

// TestSlicesAndAugmentedTargetsWithinTheCap: under a 48 MiB cap, a slice
// with a step and an augmented assignment to a target that is not a
// plain name or index are refused before they allocate, naming the
// limit, or allocate (garbage included, counted by the runtime, not
// timed) no more than the cap. Before, starlark-go grew a stepped slice
// element by element, uncharged (s[::-1] of a 30 MB string: 180 MB
// allocated before the heap sampler stopped the run; l[::-1] of a list
// of a million: 84 MB), and d[k()] *= 200 was not checked at all: a
// 200 MB string was made and the run succeeded.
func TestSlicesAndAugmentedTargetsWithinTheCap(t *testing.T) {
	const limit = 48 << 20
	for _, c := range []struct {
		name, setup, op string
		refused         bool
	}{
		{"string reversed", `s = "x" * 30000000`, `s[::-1]`, true},
		{"string by two", `s = "x" * 30000000`, `s[1::2]`, false},
		{"bytes reversed", `s = bytes("x" * 20000000)`, `s[::-1]`, false},
		{"list reversed", `s = [1] * 1000000`, `s[::-1]`, false},
		{"list copied", `s = [1] * 1000000`, `s[:]`, false},
		{"tuple by three", `s = tuple([1] * 1000000)`, `s[::3]`, false},
		{"index by a call", "d = {\"a\": \"x\" * 1000000}\ndef k():\n    return \"a\"", "d[k()] *= 200\nr = d[\"a\"]", true},
		{"index by arithmetic", `l = ["x" * 1000000]`, "l[len(l) - 1] *= 200\nr = l[0]", true},
		{"field of a call", "l = [[\"x\" * 1000000]]\ndef f():\n    return l", "f()[0][0] *= 200\nr = l[0][0]", true},
		{"percent assignment", "f = \"%s\" * 200\nt = tuple([\"x\" * 1000000] * 200)", "f %= t\nr = f", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, r := allocatedBy(c.setup+"\nr = \"\"\nresult = len(r)", limit)
			if r.Error != nil {
				t.Fatalf("setup: %v", r.Error)
			}
			op := c.op
			if !strings.Contains(op, "\n") {
				op = "r = " + op
			}
			a, r := allocatedBy(c.setup+"\n"+op+"\nresult = len(r)", limit)
			n := int64(a) - int64(base)
			if c.refused {
				if r.Error == nil || r.Error.Limit != LimitMemory || !strings.Contains(r.Error.Message, "maxMemoryBytes") {
					t.Fatalf("%v (result %s); want the memory limit named", r.Error, r.Result)
				}
				t.Logf("refused: %s (allocated %s)", r.Error.Message, fmtBytes(n))
				if n > 1<<20 {
					t.Errorf("refused after allocating %s", fmtBytes(n))
				}
				return
			}
			if r.Error != nil {
				t.Fatalf("%v", r.Error)
			}
			t.Logf("allowed: result %s, allocated %s", r.Result, fmtBytes(n))
			if n > limit {
				t.Errorf("allocated %s (garbage included), over the %s cap", fmtBytes(n), fmtBytes(limit))
			}
		})
	}
}

// TestViewsAndSortedWithinTheirCharge: sorted() and a dict's items(),
// keys() and values() allocate (garbage included, counted by the
// runtime) no more than they are charged, and under a cap they do not
// fit are refused before they allocate. Before, sorted appended one by
// one (84 MB for a list of a million, charged 32 MB) and the views were
// not charged at all (items of a million entries: 92 MB). Here 300,000.
func TestViewsAndSortedWithinTheirCharge(t *testing.T) {
	for _, c := range []struct {
		setup, op string
		charge    int64 // bytes an element
	}{
		{"l = [1] * 300000", "sorted(l)", elemCost},
		{"l = [1] * 300000", "sorted(l, key=lambda x: x)", 3 * elemCost},
		{"l = {i: i for i in range(300000)}", "l.items()", 4 * elemCost},
		{"l = {i: i for i in range(300000)}", "l.keys()", elemCost},
		{"l = {i: i for i in range(300000)}", "l.values()", 3 * elemCost},
	} {
		const big = 512 << 20
		base, r := allocatedBy(c.setup+"\nresult = len(l)", big)
		if r.Error != nil {
			t.Fatalf("setup: %v", r.Error)
		}
		a, r := allocatedBy(c.setup+"\nr = "+c.op+"\nresult = len(r)", big)
		if r.Error != nil {
			t.Fatalf("%s: %v", c.op, r.Error)
		}
		n, charge := int64(a)-int64(base), 300000*c.charge
		t.Logf("%s: allocated %s, charged %s", c.op, fmtBytes(n), fmtBytes(charge))
		if n > charge {
			t.Errorf("%s: allocated %s, over its charge %s", c.op, fmtBytes(n), fmtBytes(charge))
		}
	}
	// A cap the view does not fit: refused before it allocates.
	checkRefusedUpFront(t, "d = {i: i for i in range(300000)}\n", "r = d.items()", 48<<20, "maxMemoryBytes")
}
