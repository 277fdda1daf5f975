package sandbox

import (
	"context"
	"encoding/json"
	"testing"

	"go.starlark.net/starlark"
)

// TestRewritePreservesSemantics evaluates expressions and statements on a
// bare Starlark thread and through Run (with the memory rewrite) and
// requires the same value or the same error message.
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
	}
	for _, p := range progs {
		src := p + "\nresult = repr(x)\n"
		// bare Starlark
		th := &starlark.Thread{}
		th.SetMaxExecutionSteps(1 << 30)
		var want string
		globals, err := starlark.ExecFileOptions(fileOptions, th, "bare.star", src, nil)
		if err != nil {
			want = "error: " + err.(*starlark.EvalError).Msg
		} else {
			want = string(globals["result"].(starlark.String))
		}
		// through Run
		r := Run(context.Background(), newFakeHost(), "rw.star", src, nil)
		var got string
		if r.Error != nil {
			got = "error: " + r.Error.Message
		} else if err := json.Unmarshal(r.Result, &got); err != nil {
			t.Fatalf("%q: result %s", p, r.Result)
		}
		if got != want {
			t.Errorf("%q:\n bare %s\n  run %s", p, want, got)
		}
	}
}
