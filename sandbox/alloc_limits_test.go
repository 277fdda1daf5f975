package sandbox

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.starlark.net/syntax"
)

// allocatedBy returns the bytes the process allocated (garbage included)
// while src ran, and its result.
func allocatedBy(src string, limit int64) (uint64, *Result) {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	before := m.TotalAlloc
	// A long timeout: these measure allocation, not time, and -race on a
	// loaded machine made the large cases pass 30 s.
	r := Run(context.Background(), newFakeHost(), "alloc.star", src, &Limits{MaxMemoryBytes: limit, MaxSteps: 100_000_000, Timeout: 10 * time.Minute})
	runtime.ReadMemStats(&m)
	return m.TotalAlloc - before, r
}

// TestOpsAllocateWithinTheCap: each operation that builds a large string
// from many pieces (about 20 MB here, from a list of 2,000 references to
// one 10 KB string) under a 48 MiB cap is either refused before it
// allocates, with the memory limit named, or allocates (garbage included,
// counted by the runtime, not timed) no more than the cap. Before, the
// charge counted the result once while join, str/repr, json.encode and
// rendering a container for % or format grew their buffers piece by
// piece: 87 to 176 MB allocated for a 20 MB result; and the case methods,
// charged twice the string, grew theirs rune by rune where a rune's case
// is longer than the rune: 58 MB for the upper-case of a 16 MB string.
func TestOpsAllocateWithinTheCap(t *testing.T) {
	const limit = 48 << 20
	setup := "s = \"x\" * 10000\nl = [s] * 2000\n"
	base, r := allocatedBy(setup+"r = \"\"\nresult = len(r)", limit)
	if r.Error != nil {
		t.Fatalf("setup: %v", r.Error)
	}
	for _, c := range []struct{ name, op string }{
		{"join", `"".join(l)`},
		{"join with a separator", `", ".join(l)`},
		{"join of a tuple", `"".join(tuple(l))`},
		{"str of a list", `str(l)`},
		{"repr of a list", `repr(l)`},
		{"repr of escapes", `repr(["\x00" * 3000000])`},
		{"repr of non-ASCII", `repr(["é\x01" * 2000000])`},
		{"str of nested lists", `str([[l[:50]] * 4] * 10)`},
		{"json.encode", `json.encode(l)`},
		{"json.encode of escapes", `json.encode(["\x00" * 2000000])`},
		{"percent of a list", `"%s" % (l,)`},
		{"format of a list", `"{}".format(l)`},
		{"format of many arguments", `("{}" * 2000).format(*l)`},
		{"percent of many arguments", `("%s" * 2000) % tuple(l)`},
		{"repetition", `s * 2000`},
		{"list concatenation", `l * 100 + l * 100`},
		{"replace", `(s * 200).replace("x", "xxxxxxxxxx")`},
		{"upper of non-ASCII", `("\u0250" * 8000000).upper()`},
		{"lower of non-ASCII", `("\u023a" * 8000000).lower()`},
		{"title of non-ASCII", `("\u023a" * 8000000).title()`},
		{"capitalize of non-ASCII", `("\u023a" * 8000000).capitalize()`},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, r := allocatedBy(setup+"r = "+c.op+"\nresult = len(r)", limit)
			op := int64(a) - int64(base)
			switch {
			case r.Error != nil && r.Error.Limit == LimitMemory:
				if !strings.Contains(r.Error.Message, "maxMemoryBytes") {
					t.Errorf("refusal does not name the limit: %s", r.Error.Message)
				}
				t.Logf("refused: %s (allocated %s)", r.Error.Message, fmtBytes(op))
				if op > limit {
					t.Errorf("refused after allocating %s, over the %s cap", fmtBytes(op), fmtBytes(limit))
				}
			case r.Error != nil:
				t.Fatalf("%v", r.Error)
			default:
				t.Logf("allowed: result %s, allocated %s", r.Result, fmtBytes(op))
				if op > limit {
					t.Errorf("allowed, and allocated %s (garbage included), over the %s cap", fmtBytes(op), fmtBytes(limit))
				}
			}
		})
	}
}

// TestJoinAsStarlark: the sandbox's join gives starlark-go's results and
// errors.
func TestJoinAsStarlark(t *testing.T) {
	for _, c := range []struct{ src, want, err string }{
		{`result = "-".join(["a", "b", "c"])`, `"a-b-c"`, ""},
		{`result = "-".join([])`, `""`, ""},
		{`result = ", ".join(("x",))`, `"x"`, ""},
		{`result = "".join({"k": 1, "j": 2})`, `"kj"`, ""},
		{`result = "+".join("abc".elems())`, `"a+b+c"`, ""},
		{`result = "-".join(["a", 1])`, "", "join: in list, want string, got int"},
		{`result = "-".join(1)`, "", "join"},
		{`result = "-".join(["a"], ["b"])`, "", "join"},
	} {
		r := Run(context.Background(), newFakeHost(), "join.star", c.src, nil)
		if c.err != "" {
			if r.Error == nil || !strings.Contains(r.Error.Message, c.err) {
				t.Errorf("%s: %v; want an error saying %q", c.src, r.Error, c.err)
			}
			continue
		}
		if r.Error != nil || string(r.Result) != c.want {
			t.Errorf("%s: %s, %v; want %s", c.src, r.Result, r.Error, c.want)
		}
	}
}

// TestQuoteToAsSyntaxQuote: quoteTo writes what syntax.Quote returns
// (every kind of escape, long strings, runes and invalid bytes in a row),
// and quotedLen never underestimates it.
func TestQuoteToAsSyntaxQuote(t *testing.T) {
	long := func(unit string) string { return strings.Repeat(unit, 40000/len(unit)+3) }
	for _, s := range []string{
		"", "plain", `q"b\`, "\x00\x01\n\t\x7f\a\b\f\r\v\x1b", "\u0085\u00ad\ufeff\U000e0001\U0001f600", "é€😀", "\xff\xfe", "\xe2\x82", "\u200b\U0010ffff",
		long("a"), long("é"), long("😀x"), long("\xe2\x82A"), long("\x00"), "x" + long("€"), long("a") + "\xff" + long("😀"),
	} {
		var b strings.Builder
		quoteTo(&b, s)
		want := syntax.Quote(s, false)
		if b.String() != want {
			t.Errorf("quoteTo(%.40q...) differs from syntax.Quote (len %d vs %d)", s, b.Len(), len(want))
		}
		if n := quotedLen(s); n < int64(len(want)) {
			t.Errorf("quotedLen(%.40q) = %d, under the %d bytes quoted", s, n, len(want))
		}
	}
	if !utf8.ValidString(long("😀x")) {
		t.Fatal("bad fixture")
	}
}

// TestCopiesRefusedBeforeAllocating: a copy of a 30 MB string (upper,
// lower, title, capitalize, bytes) under a 48 MiB cap is refused before
// it allocates, naming the limit (before, it was not charged at all: the
// copy was made, past the cap, and only the heap sampler could notice).
func TestCopiesRefusedBeforeAllocating(t *testing.T) {
	const limit = 48 << 20
	setup := "s = \"x\" * 30000000\n"
	base, r := allocatedBy(setup+"r = \"\"\nresult = len(r)", limit)
	if r.Error != nil {
		t.Fatalf("setup: %v", r.Error)
	}
	for _, op := range []string{"s.upper()", "s.lower()", "s.title()", "s.capitalize()", "bytes(s)"} {
		a, r := allocatedBy(setup+"r = "+op+"\nresult = len(r)", limit)
		if r.Error == nil || r.Error.Limit != LimitMemory || !strings.Contains(r.Error.Message, "maxMemoryBytes") {
			t.Errorf("%s: %v (result %s); want the memory limit named", op, r.Error, r.Result)
			continue
		}
		if n := int64(a) - int64(base); n > 1<<20 {
			t.Errorf("%s: refused after allocating %s", op, fmtBytes(n))
		}
	}
	// Within the cap they run as before.
	r = Run(context.Background(), newFakeHost(), "case.star", `result = ["ab\u0250".upper(), "AB".lower(), "a b".title(), "ab".capitalize(), len(bytes("ab"))]`, nil)
	if r.Error != nil || string(r.Result) != `["ABⱯ","ab","A B","Ab",2]` {
		t.Errorf("case methods: %s, %v", r.Result, r.Error)
	}
}

// TestPercentChargedItsSize: `%` builds its result in one buffer of its
// size and is charged that: under a 48 MiB cap, results of 16 MB from two
// 8 MB strings or from a thousand 16 KB ones are made, allocating (garbage
// included, counted by the runtime) little more than the result. Before,
// the charge was three times the result for starlark-go's growing
// builder, and both were refused though they fit.
func TestPercentChargedItsSize(t *testing.T) {
	checkChargedItsSize(t, []chargedCase{
		{"two strings", `s = "x" * 8000000`, `"%s|%s" % (s, s)`},
		{"a thousand strings", "s = \"y\" * 16000\nt = tuple([s] * 1000)", `("%s" * 1000) % t`},
		{"quoted", `s = "x\n" * 4000000`, `"%r" % (s,)`},
		{"named", `s = "x" * 8000000`, `"%(a)s|%(a)s" % {"a": s}`},
	})
}

// chargedCase is an operation op, after setup, whose string result is
// built in one buffer of its size.
type chargedCase struct{ name, setup, op string }

// checkChargedItsSize runs each case under a 48 MiB cap: it must succeed
// having allocated (garbage included, counted by the runtime) little more
// than its result.
func checkChargedItsSize(t *testing.T, cases []chargedCase) {
	t.Helper()
	const limit = 48 << 20
	for _, c := range cases {
		base, r := allocatedBy(c.setup+"\nresult = 1", limit)
		if r.Error != nil {
			t.Fatalf("%s: setup: %v", c.name, r.Error)
		}
		a, r := allocatedBy(c.setup+"\nr = "+c.op+"\nresult = len(r)", limit)
		if r.Error != nil {
			t.Errorf("%s: %v", c.name, r.Error)
			continue
		}
		var n int64
		if err := json.Unmarshal(r.Result, &n); err != nil {
			t.Fatal(err)
		}
		op := int64(a) - int64(base)
		t.Logf("%s: result %s, allocated %s", c.name, fmtBytes(n), fmtBytes(op))
		if op > n+n/4+(1<<20) {
			t.Errorf("%s: allocated %s for a result of %s", c.name, fmtBytes(op), fmtBytes(n))
		}
	}
}

// checkRefusedUpFront runs op after setup under limit: it must be refused
// by the memory limit, with want in the message, having allocated
// (garbage included, counted by the runtime) no more than 1 MiB.
func checkRefusedUpFront(t *testing.T, setup, op string, limit int64, want string) {
	t.Helper()
	base, r := allocatedBy(setup+"result = 1", limit)
	if r.Error != nil {
		t.Fatalf("setup: %v", r.Error)
	}
	a, r := allocatedBy(setup+op+"\nresult = 1", limit)
	if r.Error == nil || r.Error.Limit != LimitMemory || !strings.Contains(r.Error.Message, want) {
		t.Fatalf("%s: %v (result %s); want %q refused by the memory limit", op, r.Error, r.Result, want)
	}
	n := int64(a) - int64(base)
	t.Logf("%s refused: %s (allocated %s)", op, r.Error.Message, fmtBytes(n))
	if n > 1<<20 {
		t.Errorf("%s: refused after allocating %s", op, fmtBytes(n))
	}
}
