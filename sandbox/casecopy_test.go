package sandbox

import (
	"strings"
	"testing"

	"go.starlark.net/starlark"
)

// TestCaseCopyAsStarlark: the sandbox's upper, lower, title and
// capitalize give starlark-go's results (longer and shorter cases, title
// case, uncased and invalid bytes), and caseSize is their exact length.
func TestCaseCopyAsStarlark(t *testing.T) {
	for _, s := range []string{
		"", "abc", "ABC", "hello wORLD", "\u0250\u023a\u2c6f", "ǆemal ǅ Ǆ", "straße", "ﬃ ﬃx", "\xff\xfea", "\xe2\x82", "a\ufffdb",
		"İstanbul ı", "ΣΑΣ σας", "x1y 2z", "é" + strings.Repeat("\u0250b", 300),
	} {
		for _, name := range []string{"upper", "lower", "title", "capitalize"} {
			m, err := starlark.String(s).Attr(name)
			if err != nil {
				t.Fatal(err)
			}
			want, err := starlark.Call(new(starlark.Thread), m, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := caseCopy(name, s); got != string(want.(starlark.String)) {
				t.Errorf("%q.%s() = %q, starlark-go %q", s, name, got, want)
			}
			if n := caseSize(name, s); n != int64(len(want.(starlark.String))) {
				t.Errorf("caseSize(%s, %q) = %d, want %d", name, s, n, len(want.(starlark.String)))
			}
		}
	}
}
