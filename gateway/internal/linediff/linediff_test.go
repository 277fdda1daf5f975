package linediff

import (
	"strings"
	"testing"
)

func TestChanged(t *testing.T) {
	for _, tc := range []struct {
		name, a, b, want string
	}{
		{"same", "a\nb\n", "a\nb\n", ""},
		{"both empty", "", "", ""},
		{"created", "", "a\nb\n", "+   1  a\n+   2  b\n"},
		{"deleted", "a\nb\n", "", "-   1  a\n-   2  b\n"},
		{"inserted in the middle", "a\nb\nc\n", "a\nb\nx\ny\nc\n", "+   3  x\n+   4  y\n"},
		{"replaced", "a\nb\nc\n", "a\nB\nc\n", "-   2  b\n+   2  B\n"},
		{"removed at the end", "a\nb\nc\n", "a\n", "-   2  b\n-   3  c\n"},
		{"a final newline added", "a\nb", "a\nb\n", "-   2  b\n+   2  b\n"},
		{"appended without a final newline", "a", "a\nb", "-   1  a\n+   1  a\n+   2  b\n"},
		{"crlf shown without the cr", "a\r\nb\r\n", "a\r\nc\r\n", "-   2  b\n+   2  c\n"},
		{"invalid utf-8", "a\n", "a\n\xff\n", "+   2  \uFFFD\n"},
		{"repeated lines", "x\nx\n", "x\nx\nx\n", "+   3  x\n"},
	} {
		if got := Changed([]byte(tc.a), []byte(tc.b), nil); got != tc.want {
			t.Errorf("%s: got\n%q\nwant\n%q", tc.name, got, tc.want)
		}
	}
}

func TestChangedMasks(t *testing.T) {
	mask := func(l string) string { return strings.ReplaceAll(l, "s3cret", "(hidden)") }
	got := Changed([]byte("token: s3cret\nkeep: s3cret\n"), []byte("token: other\nkeep: s3cret\n"), mask)
	if want := "-   1  token: (hidden)\n+   1  token: other\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
