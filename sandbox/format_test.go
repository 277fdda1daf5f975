package sandbox

import (
	"context"
	"encoding/json"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// formatTokens are the parts format strings are made of here: every kind
// of field (automatic, numbered, named, with each conversion, with a
// spec), the literal braces, a lone brace, and text.
var formatTokens = []string{
	"{}", "{0}", "{1}", "{2}", "{a}", "{b}", "{!r}", "{0!r}", "{a!s}", "{1!s}", "{!}", "{!x}", "{:d}", "{0:}",
	"{a.b}", "{a[0]}", "{{", "}}", "}", "{", "x", "é\n", "{ }", "{00}", "{-1}", "{99999999999999999999}",
	"{!r:x}", "{!s:}", "{c}", "{a{b}", "{{}}",
}

// formatArgs are the argument lists every format is applied to: strings
// needing quotes, containers (rendered by the sandbox), scalars, and
// values starlark-go prints itself (bytes, a range).
var formatArgs = []string{
	``,
	`"s\n", 1`,
	`"q\"é\x01", [1, "a"], None, a = "A", b = {"k": (1, 2.5)}`,
	`True, 1 << 70, 1.5, a = b"by", b = range(3), c = struct(x = [1])`,
}

// TestFormatMatchesStarlark: str.format through Run (built by planFormat
// in one buffer, or left to starlark-go) gives the same string or the
// same error message as starlark-go's own format, on every format of one
// or two parts of formatTokens and a few hundred longer ones, each over
// every argument list of formatArgs.
func TestFormatMatchesStarlark(t *testing.T) {
	var formats []string
	for _, a := range formatTokens {
		formats = append(formats, a)
		for _, b := range formatTokens {
			formats = append(formats, a+b)
		}
	}
	rng := rand.New(rand.NewSource(1))
	for range 300 {
		var b strings.Builder
		for range 3 + rng.Intn(5) {
			b.WriteString(formatTokens[rng.Intn(len(formatTokens))])
		}
		formats = append(formats, b.String())
	}
	planned := 0
	for _, f := range formats {
		for _, args := range formatArgs {
			src := "x = " + strconv.Quote(f) + ".format(" + args + ")\nresult = x\n"
			want := bareResult(t, src)
			r := Run(context.Background(), newFakeHost(), "format.star", src, nil)
			var got string
			if r.Error != nil {
				got = "error: " + r.Error.Message
			} else if err := json.Unmarshal(r.Result, &got); err != nil {
				t.Fatalf("%s: result %s", src, r.Result)
			}
			if got != want {
				t.Errorf("%s\n bare %q\n  run %q", src, want, got)
			}
			if !strings.HasPrefix(want, "error: ") {
				planned++
			}
		}
	}
	t.Logf("%d formats x %d argument lists, %d formatted", len(formats), len(formatArgs), planned)
	if planned < 800 {
		t.Errorf("only %d of the cases format without an error: the grid tests little but errors", planned)
	}
}

// bareResult runs src on a bare Starlark thread: the string result, or
// "error: " and the message.
func bareResult(t *testing.T, src string) string {
	t.Helper()
	th := &starlark.Thread{}
	th.SetMaxExecutionSteps(1 << 30)
	pre := starlark.StringDict{"struct": starlark.NewBuiltin("struct", starlarkstruct.Make)}
	globals, err := starlark.ExecFileOptions(fileOptions, th, "bare.star", src, pre)
	if err != nil {
		ee, ok := err.(*starlark.EvalError)
		if !ok {
			t.Fatalf("%s: %v", src, err)
		}
		return "error: " + ee.Msg
	}
	return string(globals["result"].(starlark.String))
}

// TestPlanFormatLeavesOnlyWhatItCannotPrint: on arguments it prints
// itself (strings, rendered containers, scalars), planFormat plans every
// format starlark-go formats without an error, and its result is
// starlark-go's; it never plans one starlark-go refuses.
func TestPlanFormatLeavesOnlyWhatItCannotPrint(t *testing.T) {
	args := starlark.Tuple{starlark.String("a\"\n"), rendered{text: `[1, "x"]`, typ: "list"}, starlark.MakeInt(7)}
	kwargs := []starlark.Tuple{{starlark.String("a"), starlark.None}, {starlark.String("b"), starlark.Float(0.25)}, {starlark.String("a"), starlark.True}}
	th := &starlark.Thread{}
	n := 0
	for _, a := range formatTokens {
		for _, b := range formatTokens {
			for _, c := range formatTokens {
				f := a + b + c
				m, _ := starlark.String(f).Attr("format")
				want, err := starlark.Call(th, m, args, kwargs)
				pieces, size, ok := planFormat(f, args, kwargs)
				if err != nil {
					if ok {
						t.Fatalf("%q: planned, starlark-go: %v", f, err)
					}
					continue
				}
				if !ok {
					t.Fatalf("%q: not planned, starlark-go formats %q", f, want)
				}
				got := buildPercent(pieces, size)
				if got != string(want.(starlark.String)) || int64(len(got)) != size {
					t.Fatalf("%q: planned %q (size %d), starlark-go %q", f, got, size, want)
				}
				n++
			}
		}
	}
	t.Logf("%d formats planned", n)
}

// TestFormatChargedItsSize: str.format builds its result in one buffer of
// its size and is charged that: under a 48 MiB cap, results of 16 MB from
// two 8 MB strings, from a thousand 16 KB ones, or quoted, are made,
// allocating (garbage included, counted by the runtime) little more than
// the result. Before, the charge was three times the result (starlark-go's
// growing builder) and all were refused though they fit.
func TestFormatChargedItsSize(t *testing.T) {
	checkChargedItsSize(t, []chargedCase{
		{"two strings", `s = "x" * 8000000`, `"{}|{}".format(s, s)`},
		{"a thousand strings", "s = \"y\" * 16000\nt = [s] * 1000", `("{}" * 1000).format(*t)`},
		{"quoted", `s = "x\n" * 4000000`, `"{!r}".format(s)`},
		{"named", `s = "x" * 8000000`, `"{a}|{a}".format(a = s)`},
		{"numbered", `s = "x" * 8000000`, `"{0}|{0}".format(s)`},
	})
}
