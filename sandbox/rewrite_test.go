package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"go.starlark.net/starlark"
)

// sliceGrid takes every slice of short sequences of each sliceable type,
// with every kind of bound (missing, None, negative, past either end).
const sliceGrid = `x = []
vals = [None, -9, -7, -5, -3, -1, 0, 1, 2, 3, 5, 7, 9]
for s in ["abcdefg", b"abcdefg", [1, 2, 3, 4, 5, 6, 7], (1, 2, 3, 4, 5, 6, 7), range(7), range(1, 20, 3), "", [], (), "é"]:
    x.append((s[:], s[::-1], s[::2], s[::-2]))
    for lo in vals:
        x.append((s[lo:], s[:lo], s[lo::-1], s[:lo:-1], s[lo::2], s[:lo:-3]))
        for hi in vals:
            x.append(s[lo:hi])
            for st in [None, -4, -3, -2, -1, 1, 2, 3, 4]:
                x.append(s[lo:hi:st])
`

// TestRewritePreservesSemantics evaluates expressions and statements on a
// bare Starlark thread and through Run (with the memory rewrite) and
// requires the same value or the same error message, at the same line
// and column (a comprehension built by the sandbox included).
func TestRewritePreservesSemantics(t *testing.T) {
	progs := []string{
		`x = "a" + "b"`, `x = [1] + [2]`, `x = (1,) + (2, 3)`, `x = 1 + 2`, `x = 1.5 + 2`, `x = b"a" + b"b"`,
		`x = "ab" * 3`, `x = 3 * "ab"`, `x = [0] * 4`, `x = (1, 2) * 2`, `x = 2 * 3`, `x = "a" * -1`, `x = [1] * 0`,
		`x = 7 % 3`, `x = -7 % 3`, `x = "%s=%d" % ("a", 1)`, `x = "%r" % ([1],)`, `x = "%d%%" % 5`,
		`x = {"a": 1} | {"b": 2}`, `x = 10 // 3`, `x = 2 - 5`,
		`x = 1 + "a"`, `x = "a" * "b"`, `x = [1] + (2,)`, `x = "%d" % "s"`, `x = "%s %s" % (1,)`, `x = None + 1`,
		"l = [1]\nl += [2, 3]\nx = l", "s = 'a'\ns += 'b'\nx = s", "t = (1,)\nt += (2,)\nx = t",
		"l = [1, 2]\nl *= 2\nx = l", "n = 5\nn += 1\nx = n", "d = {'k': [1]}\nd['k'] += [2]\nx = d",
		"l = [1]\nl += (2, 3)\nx = l", "l = [1]\nl += 'ab'.elems()\nx = l", "s = 'a'\ns += 1\nx = s",
		`x = ",".join(["a", "b", "c"])`, `x = "-".join([])`, `x = ",".join([1])`, `x = "aXbX".replace("X", "yy")`,
		`x = "aaa".replace("a", "b", 2)`, `x = "{} {x}".format(1, x=2)`, `x = "{0}{0}".format("ab")`, `x = "{}".format()`,
		`x = "a b".split()`, `x = "a,b,,c".split(",")`, `x = "a,b".rsplit(",", 1)`, `x = "a\nb\n".splitlines()`,
		"l = [1]\nl.extend([2])\nx = l", "d = {}\nd.update([('a', 1)], b=2)\nx = d", `x = list("abc".elems())`,
		`x = list("héllo".codepoints())`, `x = list("ab".elem_ords())`, `x = list("é".codepoint_ords())`,
		`x = str([1, "a", None, True, 1.5, {"k": (1,)}])`, `x = repr("q\"")`, `x = list((1, 2))`, `x = tuple([1])`,
		`x = sorted([3, 1, 2], reverse=True)`, `x = list(reversed("abc".elems()))`, `x = enumerate("ab".elems(), 5)`,
		`x = [a + b for a in "ab".elems() for b in "xy".elems()]`, `x = {k: k * 2 for k in "ab".elems()}`,
		"def f(a, b=\"x\" * 2):\n    return a + b\nx = f(\"y\")", "x = (lambda s: s * 2)(\"ab\")",
		`x = ("a" + "b") * 2`, `x = -(3 * 4)`, `x = [1, 2][0:1] + [3]`, `x = "abc"[::-1] + "d"`,
		"x = 0\nfor i in range(3):\n    x += i * 2", `x = 1 if "a" + "b" == "ab" else 2`, `x = getattr("a,b", "split")(",")`,
		`x = 1.5 * 1000000000000`, `x = 1000000000000 * 2.5`, `x = 2.0 * 123456789012345678901234567890`, `x = 10000000000 * 10000000000`,
		`x = True * 3`,
		`x = (1).join([])`, `x = "a".nope()`, `x = "ab".replace("a")`,
		// comparisons, membership, keys and the built-ins that compare
		"a = [1, [2, 3]]\nb = [1, [2, 3]]\nx = (a == b, a != b, a < b, a <= b, a > b, a >= b)",
		"a = [1, [2, 3]]\nb = [1, [2, 4]]\nx = (a == b, a != b, a < b, a <= b, a > b, a >= b)",
		"a = (1, 'a')\nb = (1, 'b', 0)\nx = (a == b, a < b, b > a, a == a)", "a = [1]\nb = (1,)\nx = (a == b, a != b)",
		"a = [1]\nb = (1,)\nx = a < b", "a = {'k': [1]}\nb = {'k': [1]}\nx = (a == b, a != b)", "a = {'k': 1}\nb = {'k': 1}\nx = a < b",
		"a = 1\nb = 1.0\nx = (a == b, a < b, a >= b)", "a = None\nb = None\nx = (a == b, a != b)", "a = None\nb = 1\nx = a < b",
		"a = float('nan')\nx = ([a] == [a], a == a, [a] != [a])", "a = 'abc'\nb = 'abd'\nx = (a < b, a == b)",
		"l = [1]\nl.append(l)\nx = str(l)", "d = {}\nd['d'] = d\nx = repr(d)",
		"a = [1, [2]]\nx = ([2] in a, [3] in a, [2] not in a, (1,) in [(1,)], 'b' in {'b': 1}, 2 in (1, 2), 'bc' in 'abc')",
		"a = [1]\nx = a in 'abc'", "a = [1]\nx = a in {}", "a = [1]\nx = a in 5", "x = [1] in range(3)",
		"k = (1, (2, 'x'))\nd = {k: 1}\nd[k] += 1\nx = (d[k], k in d, d.get(k), d.get((9,), 'no'), d.pop(k), d)",
		"d = {}\nk = [1]\nd[k] = 1", "d = {}\nk = [1]\nx = d.get(k)", "d = {'a': 1}\nk = 'b'\nx = d[k]", "l = [1, 2]\ni = 5\nx = l[i]",
		"l = [10, 20]\ni = -1\nx = l[i]", "d = {}\nd.setdefault((1, 2), []).append(3)\nx = d", "x = dict([((1, 2), 3)], a=4)", "x = dict([[1]])",
		"x = {(i, i): i for i in range(3)}", "k = (1,)\nx = {k: 1, (2,): 2}",
		"a = [[3], [1, 2], [1]]\nx = (sorted(a), sorted(a, reverse=True), sorted(a, key=len), min(a), max(a), max(a, key=len), min(1, 2), max('ab'.elems()))",
		"x = sorted([2, 'a'])", "x = sorted([[1], ['a']])", "x = min([])", "x = max(1)", "x = min([1], key=1)", "x = max([[1], [1.5], [0]])",
		"x = sorted([(1, 'b'), (1, 'a'), (0, 'z')], key=lambda p: p[0])", "x = sorted({'b': 1, 'a': 2})",
		"l = [[1], [2], [1]]\nx = (l.index([1]), l.index([1], 1), l.index([1], -1), l.index([2], 0, 2))", "l = [[1]]\nx = l.index([2])",
		"l = [[1], [2], [1]]\nl.remove([1])\nx = l", "l = [[1]]\nl.remove([3])", "x = 'abc'.index('c')", "x = [1].index(1, 'a')",
		"x = (all([]), all([1, 0]), any([]), any([0, [1]]), all('ab'.elems()))", "x = all(1)",
		"x = '%s and %r' % ([1, 'a'], {'k': (1,)})", "x = '%s' % [1]", "x = '%d' % [1]", "x = '%(a)s %(b)r' % {'a': [1], 'b': 'q'}",
		"x = '{} {!r} {k}'.format([1], ('a',), k={'x': None})", "x = '{0}'.format([[]])",
		"fail([1, 'a'], 'b', 3)", "fail('x', [1], sep='-')",
		"x = (str([]), str(()), str((1,)), repr({}), str({1: 2, 'a': [True, None]}), str('s'), repr('s\\n'), str(1e100), str(b'q'))",
		"x = (zip([1, 2], 'ab'.elems()), list(enumerate([[1]])), list(reversed([1, 2])))",
		"k = 'a'\nd = {'a': [1]}\nd[k] += [2]\nl = [1, 2]\ni = 0\nl[i] += 5\nl[i + 1] *= 3\nx = (d, l)",
		"x = [int('12'), int('ff', 16), int(' 7 '), int(True)]", "x = int('9' * 20)", "x = int('x')",
		// slices (every bound in sliceGrid below), their errors
		`x = "abc"[::0]`, `x = "abc"["a":]`, `x = "abc"[:"b"]`, `x = "abc"[::"c"]`, `x = (1)[1:]`, `x = [1][1 << 40:]`,
		`x = {}[1:]`, `x = "abc"[:2:99999999999]`, `x = [1, 2, 3][::-1][1:]`, "l = [1, 2, 3]\nm = l[:]\nm.append(4)\nx = (l, m)",
		// augmented assignments to targets that are not pure, %= and |=
		"d = {'a': 'x'}\ndef k():\n    return 'a'\nd[k()] *= 3\nx = d", "l = [[1]]\ndef f():\n    return l\nf()[0] += [2]\nx = l",
		"l = [1, 2]\nl[len(l) - 1] += 5\nx = l", "s = '%s-%s'\ns %= (1, [2])\nx = s", "d = {'a': 1}\nd |= {'b': 2}\nx = d",
		"d = {'a': 1}\nx = d | {'b': 2}", "x = 5 | 3", "l = [1]\nl |= [2]", "d = {'k': 's'}\ndef k():\n    return 'k'\nd[k()] %= ()\nx = d",
		"log = []\ndef k(n):\n    log.append(n)\n    return n\nl = [[0, 0], [0, 0]]\nl[k(0)][k(1)] += k(5)\nx = (l, log)",
		"a = [[1], [2]]\ndef i():\n    a[0] = [9]\n    return 0\na[0][i()] += 5\nx = a",
		"def g():\n    l = [[1], [2]]\n    for i in range(2):\n        l[i * 1][0] *= 3\n        l[-1 + i + 1] += [i]\n    return l\nx = g()",
		"l = [1]\ndef f():\n    return 5\nl[f()] += 1", "d = {}\ndef f():\n    return [1]\nd[f()] += 1",
		sliceGrid,
		// % formatting, every conversion and its errors
		`x = "%s|%r|%d|%i|%o|%x|%X|%e|%f|%g|%E|%F|%G|%c|%c|%%" % ("a\n", "q\"\x01é", 42, -7, 8, 255, 255, 1.5, 1e300, 0.1, 2.5, 3.0, 1e-7, 65, "é")`,
		`x = "%s %r" % (None, True)`, `x = "%s" % 5`, `x = "%r" % "s"`, `x = "%s" % b"by"`, `x = "%r" % (b"\x00",)`, `x = "%x" % (1 << 200,)`,
		`x = "%d" % 3.9`, `x = "%s %s" % ([1, "a"], {"k": (1,)})`, `x = "%r" % ([1, "a"],)`, `x = "%(a)s-%(b)r-%(a)d" % {"a": 1, "b": "z"}`,
		`x = "%(a)%" % {"a": 1}`, `x = "%s" % {"a": [1]}`, `x = "%s" % ()`, `x = "no directives" % ()`, `x = "%c" % [1]`,
		`x = "%z" % 1`, `x = "%" % 1`, `x = "%(a" % {"a": 1}`, `x = "%(a)s" % (1,)`, `x = "%(b)s" % {"a": 1}`, `x = "%s %s" % (1, 2, 3)`,
		// built-ins charged as they build (grow.go), and their errors
		"l = []\nl.append(1)\nl.append([2])\nx = l", "l = [1]\nl.append()", "l = [1]\nl.append(1, 2)", "l = []\nl.append(x=1)",
		"l = [1]\nfor e in l:\n    l.append(2)", "l = []\nfor i in range(10000):\n    l.append(i)\nx = (len(l), l[4095], l[4096], l[-1])",
		"t = (1,)\nt.append(2)", "l = [1]\nl.append(*[2])\nx = l",
		`x = list("aé\x01".codepoints())`, `x = tuple("aé".codepoints())`, `x = list("".codepoints())`, `x = tuple("".codepoint_ords())`,
		`x = sorted("cab".codepoints())`, `x = sorted("cab".codepoints(), reverse=True)`, `x = sorted("cab".codepoints(), key=lambda c: -ord(c))`,
		`x = enumerate("ab".codepoints())`, `x = enumerate("ab".codepoints(), 1)`, `x = enumerate("ab".codepoints(), start=2)`,
		`x = zip("ab".codepoints(), [1, 2, 3])`, `x = zip("abc".codepoint_ords(), "xy".codepoints())`, `x = reversed("abc".codepoint_ords())`,
		`x = list("ab".codepoints(), 1)`, `x = list(x="ab".codepoints())`, `x = tuple("ab".codepoints(), y=1)`, `x = list(1)`,
		`x = len(list(("é" * 200000).codepoints()))`, `x = "".join(list(("aé" * 70000).codepoints())) == "aé" * 70000`,
		`x = tuple(("ab" * 300).codepoints())[-3:]`,
		"l = [0]\nl.extend(\"ab\".codepoints())\nx = l", "l = [0]\nl.extend((1, 2))\nx = l", "l = [0]\nl.extend(l)\nx = l",
		"l = [0]\nl.extend(\"ab\".codepoints(), 1)", "l = [0]\nl.extend(1)", "l = [0]\nl.extend(())\nx = l",
		`x = "-".join("abc".codepoints())`, `x = "".join("".codepoints())`, `x = ",".join({"a": 1, "b": 2})`, `x = "-".join(range(3))`,
		`x = "-".join("ab".codepoint_ords())`, `x = "-".join(("a", "b"))`, `x = "-".join([])`, `x = "".join(("ab" * 5000).codepoints()) == "ab" * 5000`,
		`x = dict([(1, 2), (3, 4)])`, `x = dict([(1, 2)], a=1)`, `x = dict({"a": 1})`, `x = dict([(1,)])`, `x = dict("ab".codepoints())`,
		`x = dict([(i, i) for i in range(10000)])[9999]`, `x = dict([(1, 2), (1, 3)])`, `x = dict([], [])`, `x = dict(range(1000000000))`,
		"d = {1: 2}\nd.update([(3, 4)])\nx = d", "d = {}\nd.update([(i % 5000, i) for i in range(20000)])\nx = (len(d), d[4999])",
		// comprehensions built by the sandbox (comprehension.go): clauses,
		// conditions, nesting, scoping, errors, chunks
		`x = [i for i in range(5) if i % 2]`, `x = [i for i in range(9) if i > 1 if i < 7 if i != 4]`, `x = []`, `x = [i for i in []]`,
		`x = [(i, j) for i in range(4) for j in range(i)]`, `x = [j for i in range(4) if i for j in range(i) if j != 1]`,
		`x = [[j * i for j in range(i)] for i in range(4)]`, `x = [[k for k in [j]] for j in [[1], [2]] if [k for k in j]]`,
		`x = {i: [j for j in range(i)] for i in range(3)}`, `x = [{k: k for k in range(i)} for i in range(3)]`,
		"y = [1, 2]\nx = [y for y in y]", "y = 3\nx = [y for _ in range(2) for y in [y]]", "i = 'outer'\nl = [i for i in range(3)]\nx = (i, l)",
		"def f(n):\n    return [i * n for i in range(n)]\nx = f(3)", "def f(l):\n    return {k: len(l) for k in l}\nx = f(['a', 'b'])",
		"def f():\n    c = 2\n    return [lambda: i * c for i in range(3)]\nx = [g() for g in f()]", "x = [lambda: i for i in range(3)][0]()",
		`x = [i for i in 5]`, `x = [c for c in "abc"]`, `x = {k: 1 for k in None}`, `x = [i for i in range(3) for j in 7]`,
		`x = [1 // i for i in range(2)]`, `x = [i for i in range(3) if 1 // (i - 1)]`, `x = {i: 1 // i for i in range(2)}`, `x = {1 // i: i for i in range(2)}`,
		`x = {[i]: 1 for i in range(2)}`, `x = {k: v for k, v in [(1, 2), (1, 3), (2, 4)]}`, `x = {k: v for k, v in [(1, 2, 3)]}`,
		`x = [(a, b) for a, b in {"k": 1, "j": 2}.items()]`, `x = [k for k in {"a": 1, "b": 2}]`, `x = [c for c in "aé".codepoints()]`,
		"l = [1, 2]\nx = [l.append(3) for i in l]", "d = {1: 1}\nx = [d.update({2: 2}) for k in d]", "d = {1: 1}\nx = {d.pop(k): 1 for k in d}",
		"log = []\ndef f(v):\n    log.append(v)\n    return v\nx = ({f('k%d' % i): f('v%d' % i) for i in range(2) if f(i) >= 0}, log)",
		"log = []\ndef f(v):\n    log.append(v)\n    return v\nx = ([f(i) for i in f([1, 2]) if f(-i)], log)",
		`x = len([i for i in range(70000)])`, `x = [i for i in range(140000)][65533:65540]`, `x = [i for i in range(10000)][-1]`,
		`x = {i: i for i in range(10000)}[4096]`, `x = len({i % 5000: i for i in range(20000)})`, `x = [i for i in range(3)] + [9]`,
		"l = [i for i in range(3)]\nl.append(3)\nl += [4]\nx = l", "d = {i: i for i in range(2)}\nd[5] = 5\nx = d",
		`x = [x for x in [1, 2] if x]`, `x = [1 for _ in range(2)] * 2`, `x = {"a": 1 for _ in range(2)}`, `x = [[] for _ in range(2)][0] == []`,
		// item assignment, charged through <grow> (comprehension.go)
		"d = {}\nd[1] = 2\nd[(1, 2)] = 3\nd[1] = 4\nx = d", "l = [0, 1]\nl[0] = 5\nl[-1] = 6\nx = l", "l = [0]\nl[3] = 1", "l = [0]\nl['a'] = 1",
		"s = 'ab'\ns[0] = 'c'", "t = (1,)\nt[0] = 2", "n = 1\nn[0] = 2", "d = {}\na, d['k'] = 1, 2\nx = (a, d)", "d = {}\n[a, (b, d['k'])] = [1, (2, 3)]\nx = (a, b, d)",
		"d = {}\nfor k, d[k] in [(1, 2), (3, 4)]:\n    pass\nx = d", "d = {}\nx = ([0 for d[1] in [5, 6]], d)", "d = {}\nfor i in range(10000):\n    d[i] = i\nx = (len(d), d[4096])",
		"d = {'a': {}}\nd['a']['b'] = 1\nx = d", "def f():\n    d = {}\n    d['k'] = 1\n    return d\nx = f()", "d = {}\nfor i in range(5000):\n    d.setdefault(i, i)\nx = (len(d), d.setdefault(4096, 0))",
		"d = {1: 2}\nfor k in d:\n    d[k] = 3", "d = {1: 2}\nfor k in d:\n    d[2] = 3", "d = {}\nd[[1]] = 2", "d = {}\nd[1] += 1", "x = {}\nx[1] = x",
		`x = "%d" % "1"`, `x = "%f" % "x"`, `x = "%c" % 0x110000`, `x = "%c" % "ab"`, `x = "%s" % ((1, 2),)`, `x = "%s %s" % ((1,), [2])`,
	}
	// An error is reported where starlark-go reports it (line and
	// column), but for these, whose column the method and slice rewrites
	// move: a missing method at the call's parenthesis, not its dot; a
	// slice's bad bound at its bracket, not the bound.
	otherColumn := map[string]bool{"x = (1).join([])": true, "x = [1][1 << 40:]": true, "t = (1,)\nt.append(2)": true}
	for _, p := range progs {
		src := "x = None\n" + p + "\nresult = repr(x)\n"
		// bare Starlark
		th := &starlark.Thread{}
		th.SetMaxExecutionSteps(1 << 30)
		var want string
		globals, err := starlark.ExecFileOptions(fileOptions, th, "bare.star", src, nil)
		if err != nil {
			ee, ok := err.(*starlark.EvalError)
			if !ok {
				t.Fatalf("%q: %v", p, err)
			}
			want = "error: " + ee.Msg
			for _, fr := range slices.Backward(ee.CallStack) {
				if fr.Pos.Line > 0 && fr.Pos.Filename() != "<builtin>" {
					if otherColumn[p] {
						want += fmt.Sprintf(" (%d:", fr.Pos.Line)
					} else {
						want += fmt.Sprintf(" (%d:%d)", fr.Pos.Line, fr.Pos.Col)
					}
					break
				}
			}
		} else {
			want = string(globals["result"].(starlark.String))
		}
		// through Run
		r := Run(context.Background(), newFakeHost(), "rw.star", src, nil)
		var got string
		if r.Error != nil {
			got = "error: " + r.Error.Message
			if r.Error.Line > 0 && otherColumn[p] {
				got += fmt.Sprintf(" (%d:", r.Error.Line)
			} else if r.Error.Line > 0 {
				got += fmt.Sprintf(" (%d:%d)", r.Error.Line, r.Error.Column)
			}
		} else if err := json.Unmarshal(r.Result, &got); err != nil {
			t.Fatalf("%q: result %s", p, r.Result)
		}
		if got != want {
			t.Errorf("%q:\n bare %s\n  run %s", p, want, got)
		}
	}
}
