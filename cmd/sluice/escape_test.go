package main

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCleanEscapesControlBidiAndInvisible(t *testing.T) {
	var unsafe []rune
	for r := rune(0); r < 0x20; r++ {
		if r != '\n' && r != '\t' {
			unsafe = append(unsafe, r)
		}
	}
	for r := rune(0x7f); r <= 0x9f; r++ {
		unsafe = append(unsafe, r)
	}
	unsafe = append(unsafe, 0x061c, 0x200b, 0x200c, 0x200d, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e,
		0x2028, 0x2029, 0x2060, 0x2066, 0x2067, 0x2068, 0x2069, 0xfeff, 0x00ad, 0xe0041, 0xe000)
	for _, r := range unsafe {
		in := "a" + string(r) + "b"
		got := clean(in)
		if strings.ContainsRune(got, r) || !strings.HasPrefix(got, "a\\") || !strings.HasSuffix(got, "b") {
			t.Errorf("clean(%U) = %q", r, got)
		}
	}
	for _, s := range []string{"plain", "line\nnext\tcol", "é 日本 😀 Ω", "${env:AWS_SECRET_ACCESS_KEY}"} {
		if got := clean(s); got != s {
			t.Errorf("clean(%q) = %q, want it unchanged", s, got)
		}
	}
	if got := cleanLine("a\nb\tc"); got != `a\x0ab\x09c` {
		t.Errorf("cleanLine = %q", got)
	}
	if got := clean("ok\xffx\xe2\x80"); got != `ok\xffx\xe2\x80` {
		t.Errorf("invalid UTF-8: %q", got)
	}
	if got := clean("\uFFFD"); got != "\uFFFD" {
		t.Errorf("a real U+FFFD is kept: %q", got)
	}
	if got := clean("\u202e\u0085\u009b"); got != `\u202e\u0085\u009b` {
		t.Errorf("got %q", got)
	}
}

func TestEscapeJSONKeepsTheValue(t *testing.T) {
	v := map[string]string{"k": "x\u202ey\u0085z\u009b\u200b\U000e0041\u2028 é"}
	b, _ := json.MarshalIndent(v, "", "  ")
	out := escapeJSON(string(b))
	for _, r := range "\u202e\u0085\u009b\u200b\U000e0041\u2028" {
		if strings.ContainsRune(out, r) {
			t.Fatalf("raw %U in %q", r, out)
		}
	}
	var back map[string]string
	if err := json.Unmarshal([]byte(out), &back); err != nil || back["k"] != v["k"] {
		t.Fatalf("escaped JSON means something else: %v %q", err, back)
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "a\u202eb", "\x1b[2J", "\xff\xfe", "\U000e0041", "ok\n\t", "\uFFFD"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, got := range []string{clean(s), cleanLine(s)} {
			if !utf8.ValidString(got) {
				t.Fatalf("invalid UTF-8 out of %q: %q", s, got)
			}
			for _, r := range got {
				if unsafeRune(r, true) {
					t.Fatalf("unsafe %U left in %q", r, got)
				}
			}
		}
		if utf8.ValidString(s) {
			b, _ := json.Marshal(s)
			var back string
			if err := json.Unmarshal([]byte(escapeJSON(string(b))), &back); err != nil || back != s {
				t.Fatalf("escapeJSON changed %q: %v %q", s, err, back)
			}
		}
	})
}
