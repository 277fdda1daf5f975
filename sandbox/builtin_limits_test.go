package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"
)

// hangGuard bounds how long a test waits for a run that should end at its
// limit. It is a guard against hangs, not a timing assertion: the runs
// below that hang without the fix have limits of one second, or take a
// fraction of a second to build a deep value (much longer under -race on
// a loaded machine, hence the generous bound).
const hangGuard = 5 * time.Minute

// runGuarded runs src and fails the test if the run does not end within
// hangGuard (the run's goroutine is then abandoned; the test binary ends).
func runGuarded(t *testing.T, ctx context.Context, src string, lim *Limits) (*Result, time.Duration) {
	t.Helper()
	done := make(chan *Result, 1)
	start := time.Now()
	go func() { done <- Run(ctx, newFakeHost(), "b.star", src, lim) }()
	select {
	case r := <-done:
		return r, time.Since(start)
	case <-time.After(hangGuard):
		t.Fatalf("the run did not end within %v (limits %+v)", hangGuard, lim)
		return nil, 0
	}
}

const (
	// the value, a million deep; deepList is enough to be quadratic
	deepMillion = "x = []\nfor i in range(1000000):\n    x = [x]\n"
	deepList    = "x = []\nfor i in range(300000):\n    x = [x]\n"
	deepDict    = "x = {}\nfor i in range(200000):\n    x = {\"k\": x}\n"
	deepTup     = "t = ()\nfor i in range(300000):\n    t = (t,)\n"
	deepStru    = "s = struct(a=1)\nfor i in range(200000):\n    s = struct(a=s)\n"
	// two equal values that share their parts: 10^9 leaves each, but only
	// a few kilobytes of memory
	aliased = "a = [list(range(1000))] * 1000\nb = [list(range(1000))] * 1000\nx = [a] * 1000\ny = [b] * 1000\n"
	// a tuple that shares itself: 2^60 leaves
	aliasedTup = "t = (1,)\nfor i in range(60):\n    t = (t, t)\n"
	// structs that share their parts, 10^10 leaves, 7 levels
	aliasedStr = "s = struct(a=tuple(range(1000)))\nu = struct(a=tuple(range(1000)))\nfor i in range(7):\n    s = struct(a=s, b=s, c=s, d=s, e=s, f=s, g=s, h=s, i=s, j=s)\n    u = struct(a=u, b=u, c=u, d=u, e=u, f=u, g=u, h=u, i=u, j=u)\n"
)

// TestLimitsHoldInsideBuiltins: a built-in that walks a deep or
// self-sharing value runs Go code the interpreter's cancellation never
// interrupts. Each case must end with the named limit instead of running
// for minutes (or overflowing the Go stack).
func TestLimitsHoldInsideBuiltins(t *testing.T) {
	second := &Limits{Timeout: time.Second, MaxSteps: 100_000_000}
	// building a deep value is slow under -race: only the value may stop these
	steps := &Limits{MaxSteps: 100_000_000, Timeout: 4 * time.Minute}
	cases := []struct {
		name   string
		src    string
		lim    *Limits
		limits []string // any of these
	}{
		// deep values: bounded depth
		{"str of a deep list", deepMillion + "s = str(x)", steps, []string{LimitValueDepth}},
		{"repr of a deep list", deepList + "s = repr(x)", steps, []string{LimitValueDepth}},
		{"print of a deep list", deepList + "print(x)", steps, []string{LimitValueDepth}},
		{"percent of a deep list", deepList + "s = \"%s\" % (x,)", steps, []string{LimitValueDepth}},
		{"percent of a bare deep list", deepList + "s = \"%r\" % x", steps, []string{LimitValueDepth}},
		{"percent with a dict of a deep list", deepList + "s = \"%(k)s\" % {\"k\": x}", steps, []string{LimitValueDepth}},
		{"format of a deep list", deepList + "s = \"{}\".format(x)", steps, []string{LimitValueDepth}},
		{"format of a deep list by name", deepList + "s = \"{v!r}\".format(v=x)", steps, []string{LimitValueDepth}},
		{"fail with a deep list", deepList + "fail(x)", steps, []string{LimitValueDepth}},
		{"json.encode of a deep list", deepList + "s = json.encode(x)", steps, []string{LimitValueDepth}},
		{"str of a deep dict", deepDict + "s = str(x)", steps, []string{LimitValueDepth}},
		{"str of a deep struct", deepStru + "s = str(s)", steps, []string{LimitValueDepth}},
		{"str of a deep tuple", deepTup + "s = str(t)", steps, []string{LimitValueDepth}},
		{"deep list as a capability", deepList + "result = call(x).error", nil, nil},
		{"== of deep lists", deepList + "r = x == x", steps, []string{LimitValueDepth}},
		{"< of deep lists", deepList + "r = x < x", steps, []string{LimitValueDepth}},
		{"in of a deep list", deepList + "r = x in [x]", steps, []string{LimitValueDepth}},
		{"deep tuple as a dict key", deepTup + "d = {t: 1}", steps, []string{LimitValueDepth}},
		{"deep tuple as an index", deepTup + "d = {}\nd[t] = 1", steps, []string{LimitValueDepth}},
		{"deep tuple looked up", deepTup + "d = {}\nr = d.get(t)", steps, []string{LimitValueDepth}},
		{"deep tuple in a dict", deepTup + "r = t in {}", steps, []string{LimitValueDepth}},
		{"deep tuple through dict()", deepTup + "d = dict([(t, 1)])", steps, []string{LimitValueDepth}},
		{"deep struct as a dict key", deepStru + "d = {s: 1}", steps, []string{LimitValueDepth}},

		// self-sharing values: the wall clock holds inside the built-in
		{"sorted of shared lists", "r = sorted([list(range(10000))] * 20000)", second, []string{LimitTime}},
		{"sorted with a key of shared lists", "l = list(range(10000))\nr = sorted(range(20000), key=lambda i: l)", second, []string{LimitTime}},
		{"min of shared lists", aliased + "r = min([x, y, x, y])", second, []string{LimitTime}},
		{"max of shared lists", aliased + "r = max(x, y)", second, []string{LimitTime}},
		{"== of shared lists", aliased + "r = x == y", second, []string{LimitTime}},
		{"!= of shared lists", aliased + "r = x != y", second, []string{LimitTime}},
		{"< of shared lists", aliased + "r = x < y", second, []string{LimitTime}},
		{"== of shared tuples", aliased + "r = tuple(x) == tuple(y)", second, []string{LimitTime}},
		{"== of dicts of shared lists", aliased + "r = {\"k\": x} == {\"k\": y}", second, []string{LimitTime}},
		{"== of shared structs", aliasedStr + "r = s == u", second, []string{LimitTime}},
		{"in of shared lists", aliased + "r = x in [y]", second, []string{LimitTime}},
		{"not in of shared lists", aliased + "r = x not in [y]", second, []string{LimitTime}},
		{"list.index of shared lists", aliased + "r = [y].index(x)", second, []string{LimitTime}},
		{"list.remove of shared lists", aliased + "l = [y]\nl.remove(x)", second, []string{LimitTime}},
		{"shared tuple as a dict key", aliasedTup + "d = {t: 1}", second, []string{LimitKeySize}},
		{"shared tuple looked up", aliasedTup + "r = t in {1: 2}", second, []string{LimitKeySize}},
		{"shared tuple as an index", aliasedTup + "d = {}\nd[t] = 1", second, []string{LimitKeySize}},
		{"shared tuple through setdefault", aliasedTup + "d = {}\nd.setdefault(t, 1)", second, []string{LimitKeySize}},
		{"shared tuple through group_by", aliasedTup + "g = group_by([1], lambda v: t)", second, []string{LimitKeySize}},
		{"shared tuple through update", aliasedTup + "d = {}\nd.update([(t, 1)])", second, []string{LimitKeySize}},
		{"shared struct as a dict key", aliasedStr + "d = {s: 1}", second, []string{LimitKeySize}},
		{"str of shared lists", aliased + "z = [x] * 1000\ns = str(z)", second, []string{LimitTime, LimitMemory}},
		{"percent of shared lists", aliased + "s = \"%s %s\" % (x, y)", second, []string{LimitTime, LimitMemory}},
		{"json.encode of shared lists", aliased + "s = json.encode(x)", second, []string{LimitTime, LimitMemory}},
		{"all over a huge range", "r = all(range(1, 1 << 62))", second, []string{LimitTime}},
		{"max over a huge range", "r = max(range(1 << 62))", second, []string{LimitTime}},

		{"dict() of keys that share a hash", "p = [(i << 32, 1) for i in range(20000)]\nd = dict(p)", second, []string{LimitTime}},
		{"dict.update of keys that share a hash", "p = [(i << 32, 1) for i in range(20000)]\nd = {}\nd.update(p)", second, []string{LimitTime}},
		{"group_by of keys that share a hash", "p = [i << 32 for i in range(20000)]\ng = group_by(p, int)", second, []string{LimitTime}},
		{"int of a huge digit string", "s = \"9\" * 3000000\nn = int(s)", second, []string{LimitMemory}},
		{"json.decode of a huge integer", "s = \"9\" * 3000000\nn = json.decode(s)\nif type(n) != \"dict\":\n    fail(\"not a literal\")\nresult = n[\"$literal\"] == s", steps, nil},

		// materializing built-ins: sized before they allocate
		{"reversed of a huge range", "r = reversed(range(1 << 40))", nil, []string{LimitMemory}},
		{"enumerate of a huge range", "r = enumerate(range(1 << 40))", nil, []string{LimitMemory}},
		{"zip of huge ranges", "r = zip(range(1 << 40), range(1 << 40))", nil, []string{LimitMemory}},
		{"sorted of a huge range", "r = sorted(range(1 << 40))", nil, []string{LimitMemory}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, took := runGuarded(t, context.Background(), tc.src, tc.lim)
			if tc.limits == nil {
				// a case that must simply work
				if r.Error != nil {
					t.Fatalf("unexpected error %v", r.Error)
				}
				t.Logf("%s: result %s after %v", tc.name, r.Result, took.Round(time.Millisecond))
				return
			}
			if r.Error == nil {
				t.Fatalf("no error after %v; result %.200s", took, r.Result)
			}
			ok := false
			for _, l := range tc.limits {
				ok = ok || (r.Error.Kind == KindLimit && r.Error.Limit == l)
			}
			if !ok {
				t.Fatalf("got %s/%s %q after %v, want limit %v", r.Error.Kind, r.Error.Limit, r.Error.Message, took, tc.limits)
			}
			if r.Error.Remedy == "" || r.Error.Line == 0 {
				t.Errorf("error %+v lacks a remedy or a line", r.Error)
			}
			t.Logf("%s: %s/%s after %v: %s", tc.name, r.Error.Kind, r.Error.Limit, took.Round(time.Millisecond), r.Error.Message)
		})
	}
}

// TestErrorMessagesBounded: an error message quoting a huge value (fail()
// of many large strings, a missing 10 MB key) is clipped, and fail() does
// not render a huge list at all.
func TestErrorMessagesBounded(t *testing.T) {
	for _, src := range []string{
		"s = \"x\" * 1000000\nfail(*([s] * 100))",
		"l = [\"x\" * 1000] * 100000\nfail(l, l, l)",
		"k = \"k\" * 10000000\nd = {}\nr = d[k]",
	} {
		r, _ := runGuarded(t, context.Background(), src, nil)
		if r.Error == nil || r.Error.Kind != KindRuntime {
			t.Fatalf("%q: got %+v, want a runtime error", src, r.Error)
		}
		if n := len(r.Error.Message); n > maxMessageBytes+100 {
			t.Errorf("%q: message of %d bytes, want at most about %d", src, n, maxMessageBytes)
		}
	}
}

// TestCancelInsideBuiltin: the caller's cancellation (SIGTERM in sluice
// run) ends a run whose time is spent inside one built-in.
func TestCancelInsideBuiltin(t *testing.T) {
	for name, src := range map[string]string{
		"sorted": "r = sorted([list(range(10000))] * 20000)",
		"equal":  aliased + "r = x == y",
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() { time.Sleep(300 * time.Millisecond); cancel() }()
			r, took := runGuarded(t, ctx, src, &Limits{Timeout: time.Hour, MaxSteps: 100_000_000})
			if r.Error == nil || r.Error.Kind != KindCancelled {
				t.Fatalf("got %+v after %v, want a cancelled run", r.Error, took)
			}
			if !strings.Contains(r.Error.Message, "cancelled") {
				t.Errorf("message %q", r.Error.Message)
			}
			t.Logf("cancelled after %v (cancel sent at 300ms)", took.Round(time.Millisecond))
		})
	}
}
