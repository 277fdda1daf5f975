package sandbox

import (
	"strings"
	"testing"
)

// TestGrowingBuiltinsWithinTheCap: built-ins that build a value of a size
// not known before they run are charged as they build. Under a 48 MiB
// cap each either is refused naming the limit, or succeeds, having
// allocated (garbage included, counted by the runtime, not timed) no
// more than the cap (dict(), made at its length, no more than it is
// charged). Before, starlark-go grew the result one element at
// a time, uncharged: list() of the codepoints of 1.4 million characters
// allocated 142 MB, "".join of them iterated them three times (67 MB),
// dict() of 200,000 pairs 39 MB, growing its table one doubling at a time.
func TestGrowingBuiltinsWithinTheCap(t *testing.T) {
	const limit = 48 << 20
	cp := `s = "a" * 1400000`
	pairs := func(n string) string { return "p = [(i, i) for i in range(" + n + ")]" }
	for _, c := range []struct {
		name, setup, op string
		within          int64 // bytes it may allocate, the cap unless given
	}{
		{"list of codepoints", cp, `r = list(s.codepoints())`, 0},
		{"tuple of codepoints", cp, `r = tuple(s.codepoints())`, 0},
		{"sorted codepoints", cp, `r = sorted(s.codepoints())`, 0},
		{"enumerated codepoints", cp, `r = enumerate(s.codepoints())`, 0},
		{"reversed codepoints", cp, `r = reversed(s.codepoint_ords())`, 0},
		{"zipped codepoints", cp, `r = zip(s.codepoints(), s.codepoints())`, 0},
		{"extend by codepoints", cp, "r = []\nr.extend(s.codepoints())", 0},
		{"join of codepoints", `s = "ab" * 700000`, `r = "".join(s.codepoints())`, 0},
		// a doubling buffer: the result, up to twice it in buffers
		// outgrown, and the strings the iteration makes (16 MB)
		{"join of codepoints with a separator", `s = "ab" * 500000`, `r = ("-" * 20).join(s.codepoints())`, 4 * 21000000},
		{"dict of pairs", pairs("200000"), `r = dict(p)`, 200000 * dictTableCost},
		{"dict updated by pairs", pairs("250000"), "r = {}\nr.update(p)", 0},
		// a method taken as a value is the same method, charged alike
		{"bound extend by codepoints", cp, "r = []\ne = r.extend\ne(s.codepoints())", 0},
		{"extend by codepoints through getattr", cp, "r = []\ngetattr(r, 'extend')(s.codepoints())", 0},
		{"bound update by pairs", pairs("250000"), "r = {}\nu = r.update\nu(p)", 0},
		{"bound format", `s = "x" * 4000000`, "fm = ('{0}' * 14).format\nr = fm(s)", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, r := allocatedBy(c.setup+"\nresult = 1", limit)
			if r.Error != nil {
				t.Fatalf("setup: %v", r.Error)
			}
			a, r := allocatedBy(c.setup+"\n"+c.op+"\nresult = len(r)", limit)
			n := int64(a) - int64(base)
			if r.Error != nil {
				if r.Error.Limit != LimitMemory || !strings.Contains(r.Error.Message, "maxMemoryBytes") {
					t.Fatalf("%v; want the memory limit named", r.Error)
				}
				t.Logf("refused: %s (allocated %s)", r.Error.Message, fmtBytes(n))
			} else {
				t.Logf("allowed: result %s, allocated %s", r.Result, fmtBytes(n))
			}
			within := c.within
			if within == 0 {
				within = limit
			}
			if n > within {
				t.Errorf("allocated %s (garbage included), over %s", fmtBytes(n), fmtBytes(within))
			}
		})
	}
}

// TestAppendRefusedBeforeTheListGrows: under a 48 MiB cap, a list of
// 1.5 million elements (24 MB) cannot grow by a quarter (30 MB more,
// beside the old slots): the append that would grow it is refused by
// the charge of that growth, before it allocates. Before, the append
// grew the list uncharged, and only the heap sampler, a millisecond
// later, could stop the run (an append loop to three million: the heap
// at 97.5 MiB, twice the cap, after 423 MiB allocated).
func TestAppendRefusedBeforeTheListGrows(t *testing.T) {
	// 367 x growCheckEvery
	checkRefusedUpFront(t, "l = [0] * 1503232\n", "l.append(1)", 48<<20, "list.append()")
	// the same method taken as a value, or found by getattr; and insert,
	// which grows the list as append does
	checkRefusedUpFront(t, "l = [0] * 1503232\nf = l.append\n", "f(1)", 48<<20, "list.append()")
	checkRefusedUpFront(t, "l = [0] * 1503232\nf = getattr(l, 'append')\n", "f(1)", 48<<20, "list.append()")
	checkRefusedUpFront(t, "l = [0] * 1503232\n", "l.insert(0, 1)", 48<<20, "list.insert()")
	checkRefusedUpFront(t, "l = [0] * 1503232\nf = l.insert\n", "f(0, 1)", 48<<20, "list.insert()")
}
