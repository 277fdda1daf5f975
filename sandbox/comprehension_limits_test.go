package sandbox

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.starlark.net/starlark"
)

// TestInterpreterGrowthRefusedByItsCharge: what the interpreter grows by
// its own opcodes (comprehensions, d[k] = v) and group_by's lists and
// dict, setdefault, past a 48 MiB cap, are refused by a charge made
// before the growth ("... would allocate ..."), never left to the heap
// sampler ("the run's heap grew by ...", after the fact), and a list
// comprehension allocates (garbage included, counted by the runtime, not
// timed) no more than the cap. Before, none was charged:
// [i for i in range(3000000)] allocated 105 MiB and the sampler stopped
// it with the heap at 51.6 MiB; {i: i for i in range(1000000)} and the
// loop of r[i] = i with the heap at 85.5 MiB, 1.78 times the cap.
func TestInterpreterGrowthRefusedByItsCharge(t *testing.T) {
	const limit = 48 << 20
	for _, c := range []struct {
		name, src, want string
		within          bool  // allocates no more than the cap
		limit           int64 // the cap, 48 MiB unless given
	}{
		{"list comprehension", `r = [i for i in range(3000000)]`, "a list comprehension", true, 0},
		{"list comprehension in a function", "def f(n):\n    return [i for i in range(n)]\nr = f(3000000)", "a list comprehension", true, 0},
		{"list comprehension of strings", `r = ["" for i in range(3000000)]`, "a list comprehension", true, 0},
		// elements the body makes, not charged themselves: checked every
		// growCheckEvery elements
		{"list comprehension of dicts", `r = [{"a": i} for i in range(1000000)]`, "a list comprehension", false, 0},
		{"list comprehension of tuples", `r = [(i, i) for i in range(3000000)]`, "a list comprehension", false, 0},
		{"list comprehension with a condition", `r = [i for i in range(6000000) if i % 2 == 0]`, "a list comprehension", false, 0},
		{"nested clauses", `r = [i * j for i in range(3000) for j in range(1000)]`, "a list comprehension", false, 0},
		{"comprehension of comprehensions", `r = [[j for j in range(1000)] for i in range(3000)]`, "a list comprehension", false, 0},
		{"dict comprehension", `r = {i: i for i in range(1000000)}`, "a dict growing past", false, 0},
		{"item assignment", "r = {}\nfor i in range(1000000):\n    r[i] = i", "a dict growing past", false, 0},
		{"item assignment in a tuple target", "r = {}\nfor i in range(1000000):\n    n, r[i] = i, i", "a dict growing past", false, 0},
		{"item assignment as a loop target", "r = {}\nfor r[len(r)] in range(1000000):\n    pass", "a dict growing past", false, 0},
		// a method call's garbage (the bound method, its arguments)
		// outgrew the collector's pace under 48 MiB and the sampler
		// stopped the loop first, at times; under 32 MiB the next
		// table (28.5 MiB at 212,992 entries) is refused first
		{"setdefault", "r = {}\nfor i in range(1000000):\n    r.setdefault(i, 0)", "a dict growing past", false, 32 << 20},
		{"group_by of many keys", `r = group_by(range(1000000), lambda x: x)`, "a dict growing past", false, 0},
		{"group_by of one key", `r = group_by(range(3000000), lambda x: 0)`, "group_by()", false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			limit := int64(limit)
			if c.limit != 0 {
				limit = c.limit
			}
			a, r := allocatedBy(c.src+"\nresult = len(r)", limit)
			if r.Error == nil || r.Error.Limit != LimitMemory {
				t.Fatalf("%v (result %s, allocated %s); want the memory limit", r.Error, r.Result, fmtBytes(int64(a)))
			}
			msg := r.Error.Message
			if i := strings.IndexByte(msg, '\n'); i > 0 {
				msg = msg[:i]
			}
			t.Logf("refused: %s (allocated %s, heap peak %s)", msg, fmtBytes(int64(a)), fmtBytes(r.Stats.PeakHeapGrowth))
			if !strings.HasPrefix(msg, c.want) || !strings.Contains(msg, " would allocate ") || !strings.Contains(msg, "maxMemoryBytes") {
				t.Errorf("refused as %q; want %q refused by its charge (would allocate), naming the limit", msg, c.want)
			}
			if c.within && int64(a) > limit {
				t.Errorf("allocated %s (garbage included), over the %s cap", fmtBytes(int64(a)), fmtBytes(limit))
			}
		})
	}
}

// TestDictAssignmentRefusedBeforeItGrows: a dict of 212,992 entries (52
// x growCheckEvery, 32,768 buckets: its table doubles at the next new
// key) whose next table (28.5 MiB) does not fit in what is left of a 48
// MiB cap beside a list of 9.2 MiB refuses the assignment of one more
// key before the table grows.
func TestDictAssignmentRefusedBeforeItGrows(t *testing.T) {
	setup := "d = {i: i for i in range(212992)}\nl = [0] * 600000\n"
	checkRefusedUpFront(t, setup, "d[-1] = 0", 48<<20, "a dict growing past 212992 entries")
	checkRefusedUpFront(t, setup, "d.setdefault(-1, 0)", 48<<20, "a dict growing past 212992 entries")
	checkRefusedUpFront(t, setup, "d[-1], n = 0, 1", 48<<20, "a dict growing past 212992 entries")
}

// TestRewriteStepsAsStarlark: a script's steps, counted against maxSteps
// and reported in Stats.Steps, are what starlark-go counts for the same
// script: the steps the comprehension and item-assignment rewrites add
// are left out (rewriteSteps). Without, a list comprehension's element
// counted 13 steps instead of 9, a dict comprehension's entry 17 instead
// of 10, so a million-element comprehension passed the default maxSteps.
// (A key that is not a literal is sized by <key>(k), a call counted as
// before: the programs here index by literals.)
func TestRewriteStepsAsStarlark(t *testing.T) {
	for _, c := range []struct {
		p     string
		slack uint64 // steps fewer than starlark-go's allowed
	}{
		{"x = [i for i in range(0)]", 0}, {"x = [i for i in range(1)]", 0}, {"x = [i for i in range(100)]", 0},
		{"x = [i for i in range(100) if i]", 0}, {"x = [i for i in range(100) if False]", 0},
		{"x = [j for i in range(10) for j in range(i)]", 0}, {"x = {1: [i] for i in range(100)}", 0},
		{"x = {'k': i for i in range(0)}", 0}, {"x = {'k': i for i in range(100) if i}", 0}, {"x = [i for i in range(70000)]", 0},
		{"d = {}\nfor i in range(100):\n    d['k'] = i", 0}, {"d = {}\nl = [0]\nfor i in range(100):\n    d[1], l[0] = i, i", 0},
		// a comprehension in a comprehension's element: starlark-go
		// lays out the jumps of the nested form with one or two fewer
		// steps an evaluation (measured), left out all the same
		{"x = [[j for j in range(i)] for i in range(10)]", 3 * 10}, {"x = [{'k': i for i in range(3)} for j in range(5)]", 3 * 5},
		{"def f(n):\n    return [i for i in range(n)]\nx = [f(i) for i in range(20)]", 0},
	} {
		src := c.p + "\nresult = 1\n"
		th := &starlark.Thread{}
		if _, err := starlark.ExecFileOptions(fileOptions, th, "bare.star", src, nil); err != nil {
			t.Fatalf("%q: %v", c.p, err)
		}
		r := Run(context.Background(), newFakeHost(), "steps.star", src, nil)
		if r.Error != nil {
			t.Fatalf("%q: %v", c.p, r.Error)
		}
		if bare := th.ExecutionSteps(); r.Stats.Steps > bare || r.Stats.Steps+c.slack < bare {
			t.Errorf("%q: %d steps, starlark-go counts %d (%d fewer allowed)", c.p, r.Stats.Steps, bare, c.slack)
		}
	}
	// 9,000,018 steps for starlark-go: within a maxSteps of 9,100,000
	src := "x = [i for i in range(1000000)]\nresult = len(x)\n"
	r := Run(context.Background(), newFakeHost(), "steps.star", src, &Limits{MaxSteps: 9_100_000, MaxMemoryBytes: 256 << 20})
	if r.Error != nil || string(r.Result) != "1000000" {
		t.Errorf("a million-element comprehension under maxSteps 9,100,000: %s, %v", r.Result, r.Error)
	}
}

// TestDictGrowthChargedWhenItGrows: a dict of 300,000 entries (65,536
// buckets, 28.5 MiB, the last doubling at 212,992) fits a 48 MiB cap,
// built by a comprehension or d[k] = v: the charge is the
// table starlark-go makes next, when it makes it. Charged 140 bytes an
// entry at every 4,096, the comprehension was refused at 217,088 entries.
func TestDictGrowthChargedWhenItGrows(t *testing.T) {
	for _, src := range []string{
		"r = {i: i for i in range(300000)}",
		"r = {}\nfor i in range(300000):\n    r[i] = i",
	} {
		_, r := allocatedBy(src+"\nresult = len(r)", 48<<20)
		if r.Error != nil || string(r.Result) != "300000" {
			t.Errorf("%q: %s, %v; want 300000 under a 48 MiB cap", src, r.Result, r.Error)
		}
	}
}

// FuzzGrowRewrite runs a script with the comprehension and item
// assignment rewrites and without (starlark-go's own opcodes), and
// requires the same result, prints and error (message, line and column),
// unless a limit stopped either run (their steps and charges differ by
// design).
func FuzzGrowRewrite(f *testing.F) {
	for _, s := range []string{
		"x = [i * 2 for i in range(5) if i % 2]", "x = {k: [j for j in range(k)] for k in range(3)}", "y = [1]\nx = [y for y in y]",
		"d = {}\nfor k, d[k] in [(1, 2), (3, 4)]:\n    pass\nx = d", "x = {[i]: 1 for i in range(2)}", "x = [1 // i for i in range(3)]",
		"l = [1]\nx = [l.append(2) for i in l]", "def f(v):\n    print(v)\n    return v\nx = {f(i): f(-i) for i in range(3) if f(i * 10)}",
		"x = [j for i in range(3) if i for j in range(i)]", "d = {}\nd[1], d[2] = 3, 4\nx = d", "x = [lambda: i for i in range(3)][1]()",
		"x = [i for i in 5]", "x = {k: v for k, v in [(1, 2, 3)]}", "y = 3\nx = [y for _ in range(2) for y in [y]]",
	} {
		f.Add(s)
	}
	lim := &Limits{MaxSteps: 200_000, MaxMemoryBytes: 64 << 20, Timeout: 10 * time.Second}
	f.Fuzz(func(t *testing.T, src string) {
		if _, err := fileOptions.Parse("fuzz.star", src, 0); err != nil {
			return
		}
		src = "x = None\n" + src + "\nresult = repr(x)\n"
		run := func() *Result { return Run(context.Background(), newFakeHost(), "fuzz.star", src, lim) }
		with := run()
		noGrowRewrite.Store(true)
		without := run()
		noGrowRewrite.Store(false)
		limited := func(r *Result) bool { return r.Error != nil && r.Error.Limit != "" }
		if limited(with) || limited(without) {
			return
		}
		show := func(r *Result) string {
			s := fmt.Sprintf("result %s logs %q", r.Result, r.Logs)
			if r.Error != nil {
				s += fmt.Sprintf(" error %d:%d %s", r.Error.Line, r.Error.Column, r.Error.Message)
			}
			return s
		}
		if a, b := show(with), show(without); a != b {
			t.Errorf("%q:\n rewritten %s\n starlark  %s", src, a, b)
		}
	})
}
