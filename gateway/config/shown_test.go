package config

import (
	"fmt"
	"strings"
	"testing"
)

// testShown hides every value holding "s3cret"; an Authorization arg
// keeps its scheme, a url its host.
var testShown = &ShownMask{
	Value: func(_, v string) string {
		if strings.Contains(v, "s3cret") {
			return "(hidden)"
		}
		return v
	},
	Args: func(_ string, args []string) []string {
		out := make([]string, len(args))
		for i, a := range args {
			switch {
			case strings.HasPrefix(a, "Authorization: Bearer ") && strings.Contains(a, "s3cret"):
				out[i] = "Authorization: Bearer (hidden)"
			case strings.Contains(a, "s3cret"):
				out[i] = "(hidden)"
			default:
				out[i] = a
			}
		}
		return out
	},
	URL: func(u string) string {
		if i := strings.Index(u, "@"); i >= 0 && strings.Contains(u[:i], "s3cret") {
			return "https://(hidden)" + u[i:]
		}
		return u
	},
}

// TestDiffHidesValuesHoweverWritten: removing a server shows its lines;
// a hidden value is hidden in every way YAML can write it (quoted with
// escapes, tagged, a block scalar, a plain or quoted scalar over several
// lines, in a flow or a block list), and what is not a hidden value
// stays readable.
func TestDiffHidesValuesHoweverWritten(t *testing.T) {
	for _, tc := range []struct {
		name, server string
		leak         []string // raw text of the hidden values: never shown
		want         string   // the removed lines after "servers:"
	}{
		{"single quoted with a doubled quote",
			"    args: ['--password', 'it''s-s3cret-pw', '-H', 'Authorization: Bearer it''s-s3cret-tok']\n",
			[]string{"s3cret"},
			"    args: ['--password', (hidden), '-H', Authorization: Bearer (hidden)]\n"},
		{"double quoted with a hex escape",
			"    env: {DB_PASSWORD: \"hunter\\x32-s3cret\"}\n",
			[]string{"s3cret", "hunter"},
			"    env: {DB_PASSWORD: (hidden)}\n"},
		{"double quoted with an escaped quote",
			"    args: [\"pa\\\"ss-s3cret\", -v]\n",
			[]string{"s3cret", "pa\\\"ss"},
			"    args: [(hidden), -v]\n"},
		{"an escape inside the word",
			"    env:\n      TOKEN: \"s\\x33cret-x\"   # rotated\n",
			[]string{"x33cret"},
			"    env:\n      TOKEN: (hidden)   # rotated\n"},
		{"a tag and an anchor",
			"    env:\n      TOKEN: &tok !!str 'tag''d-s3cret'\n",
			[]string{"s3cret", "tag''d"},
			"    env:\n      TOKEN: (hidden)\n"},
		{"a literal block",
			"    env:\n      TOKEN: |\n        line-one-s3cret\n        line-two\n      OTHER: plain\n",
			[]string{"s3cret", "line-one", "line-two"},
			"    env:\n      TOKEN: (hidden)\n        (hidden)\n        (hidden)\n      OTHER: plain\n"},
		{"a folded block with blank lines, last in the file",
			"    env:\n      TOKEN: >-\n        fold-a-s3cret\n\n        fold-b\n",
			[]string{"s3cret", "fold-a", "fold-b"},
			"    env:\n      TOKEN: (hidden)\n        (hidden)\n\n        (hidden)\n"},
		{"a block in a block list",
			"    args:\n      - -v\n      - |-\n        blk-s3cret\n        blk-two\n      - -q\n",
			[]string{"s3cret", "blk-two"},
			"    args:\n      - -v\n      - (hidden)\n        (hidden)\n        (hidden)\n      - -q\n"},
		{"a plain scalar over two lines",
			"    env:\n      TOKEN: plain-a-s3cret\n        plain-b\n      OTHER: x\n",
			[]string{"s3cret", "plain-b"},
			"    env:\n      TOKEN: (hidden)\n        (hidden)\n      OTHER: x\n"},
		{"a plain scalar over two lines in a flow list",
			"    args: [--password, flow-a-s3cret\n      flow-b, -v]\n",
			[]string{"s3cret", "flow-b"},
			"    args: [--password, (hidden)\n      (hidden)-v]\n"},
		{"a single-quoted scalar over two lines in a flow list",
			"    args: ['--password', 'q-a-s3cret\n      q-b', '-v']\n",
			[]string{"s3cret", "q-b"},
			"    args: ['--password', (hidden)\n      (hidden), '-v']\n"},
		{"a double-quoted scalar over lines in a block list",
			"    args:\n      - \"dq-a-s3cret\n        dq-b\\\n        dq-c\"\n      - -v\n",
			[]string{"s3cret", "dq-b", "dq-c"},
			"    args:\n      - (hidden)\n        (hidden)\n        (hidden)\n      - -v\n"},
		{"plain with a comment",
			"    env: {A: plain-s3cret, B: ok}   # plain-s3cret\n",
			[]string{"s3cret"},
			"    env: {A: (hidden), B: ok}   # (hidden)\n"},
		{"characters wider than a byte before the value",
			"    args: ['é—ü', 'it''s-s3cret', 'ü']\n",
			[]string{"s3cret"},
			"    args: ['é—ü', (hidden), 'ü']\n"},
		{"a url with an escape",
			"    url: \"https://u:pa\\x73s-s3cret@example.com/mcp\"\n",
			[]string{"s3cret", "pa\\x73s"},
			"    url: https://(hidden)@example.com/mcp\n"},
		{"an alias to a value written in another field",
			"    expose: [&pw 'it''s-s3cret']\n    args: [--password, *pw]\n",
			[]string{"s3cret"},
			"    expose: [(hidden)]\n    args: [--password, *pw]\n"},
		{"a value the same as its key's line elsewhere",
			"    args: [\"a-s3cret\\u0021\"]\n    env: {NOTE: \"a-s3cret\\u0021\"}\n",
			[]string{"s3cret"},
			"    args: [(hidden)]\n    env: {NOTE: (hidden)}\n"},
	} {
		for _, nl := range []string{"\n", "\r\n"} {
			server := "  db:\n    command: psql\n" + tc.server
			body := strings.ReplaceAll("servers:\n"+server+"  keep:\n    command: psql\n", "\n", nl)
			tg := target(t, body)
			tg.Shown = testShown
			ch, err := RemoveServer(tg, "db")
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			for _, l := range tc.leak {
				if strings.Contains(ch.Diff, l) {
					t.Errorf("%s (%q line breaks): the diff shows %q:\n%s", tc.name, nl, l, ch.Diff)
				}
			}
			var want strings.Builder
			for i, l := range strings.SplitAfter("  db:\n    command: psql\n"+tc.want, "\n") {
				if l != "" {
					fmt.Fprintf(&want, "-%4d  %s", i+2, l)
				}
			}
			if ch.Diff != want.String() {
				t.Errorf("%s (%q line breaks): diff\n%s\nwant\n%s", tc.name, nl, ch.Diff, want.String())
			}
		}
	}
}

// TestDiffHidesEveryValueWhenLinesAreOdd: a file with a line break YAML
// counts and a diff does not (U+2028) gives no position to trust: the
// value part of every shown line is hidden.
func TestDiffHidesEveryValueWhenLinesAreOdd(t *testing.T) {
	body := "servers:\n  db:\n    command: psql\n    env: {NOTE: \"a\u2028b\"}\n    args: ['--password', 'it''s-s3cret']\n  keep:\n    command: psql\n"
	tg := target(t, body)
	tg.Shown = testShown
	ch, err := RemoveServer(tg, "db")
	if err != nil {
		t.Fatal(err)
	}
	want := "-   2    db:\n-   3      command: (hidden)\n-   4      env: (hidden)\n-   5      args: (hidden)\n"
	if ch.Diff != want {
		t.Fatalf("diff\n%s\nwant\n%s", ch.Diff, want)
	}
}

// TestDiffHidesOAuthLiterals: a literal oauth clientSecret or privateKey
// (a user file may hold one) is hidden in a diff whatever it looks like;
// a reference is shown.
func TestDiffHidesOAuthLiterals(t *testing.T) {
	body := "servers:\n  api:\n    url: https://api.example.com/mcp\n    oauth:\n      clientId: app\n" +
		"      clientSecret: 'cs-it''s-plain'\n      privateKey: |\n        -----BEGIN PRIVATE KEY-----\n        MIIEvQIBADANBgkq\n        -----END PRIVATE KEY-----\n" +
		"  ref:\n    url: https://ref.example.com/mcp\n    oauth:\n      clientId: app\n      clientSecret: ${env:REF_SECRET}\n  keep:\n    command: psql\n"
	tg := target(t, body)
	tg.Shown = testShown
	ch, err := RemoveServer(tg, "api")
	if err != nil {
		t.Fatal(err)
	}
	want := "-   2    api:\n-   3      url: https://api.example.com/mcp\n-   4      oauth:\n-   5        clientId: app\n" +
		"-   6        clientSecret: (hidden)\n-   7        privateKey: (hidden)\n-   8          (hidden)\n-   9          (hidden)\n-  10          (hidden)\n"
	if ch.Diff != want {
		t.Fatalf("diff\n%s\nwant\n%s", ch.Diff, want)
	}
	tg2 := target(t, body)
	tg2.Shown = testShown
	ch, err = RemoveServer(tg2, "ref")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ch.Diff, "clientSecret: ${env:REF_SECRET}") {
		t.Fatalf("the reference is not shown:\n%s", ch.Diff)
	}
}

// TestDiffHidesCLIArgvLiterals: a literal credential in a cli tool's argv
// template (in a flow or block list, in an optional group, written with
// {{ }} for a brace, repeated in a comment) is hidden in a diff as the
// listings hide it; an element with a placeholder and the program stay
// as written.
func TestDiffHidesCLIArgvLiterals(t *testing.T) {
	body := "servers:\n  api:\n    cli:\n      tools:\n" +
		"        get:\n          argv: [curl, ['{user}', \"Authorization: Bearer tok-s3cret\"], '{{br-s3cret}}', \"--s3cret-name={path}\"]\n" +
		"          input: {path: {type: string, required: true}, user: {type: string}}\n" +
		"        put:\n          argv:\n            - curl\n            - 'it''s-s3cret'   # it's-s3cret\n            - -v\n" +
		"  keep:\n    command: psql\n"
	tg := target(t, body)
	tg.Shown = testShown
	ch, err := RemoveServer(tg, "api")
	if err != nil {
		t.Fatal(err)
	}
	want := "-   2    api:\n-   3      cli:\n-   4        tools:\n" +
		"-   5          get:\n-   6            argv: [curl, ['{user}', Authorization: Bearer (hidden)], (hidden), \"--s3cret-name={path}\"]\n" +
		"-   7            input: {path: {type: string, required: true}, user: {type: string}}\n" +
		"-   8          put:\n-   9            argv:\n-  10              - curl\n-  11              - (hidden)   # (hidden)\n-  12              - -v\n"
	if ch.Diff != want {
		t.Fatalf("diff\n%s\nwant\n%s", ch.Diff, want)
	}
}

// TestDiffHidesACommentRepeatingARefusedValue: a value the file does not
// load (a url with a password, an alias) is hidden by its node; a
// comment repeating it is hidden too, though no loaded server holds it.
func TestDiffHidesACommentRepeatingARefusedValue(t *testing.T) {
	for _, tc := range []struct{ name, server string }{
		{"a url with a password", "    # was: https://u:pw-s3cret-x@example.com/mcp\n    url: https://u:pw-s3cret-x@example.com/mcp\n"},
		{"an alias", "    # was: al-s3cret-x\n    expose: [&pw al-s3cret-x]\n    command: psql\n    env: {TOKEN: *pw}\n"},
	} {
		tg := target(t, "servers:\n  db:\n"+tc.server+"  keep:\n    command: psql\n")
		tg.Shown = testShown
		ch, err := RemoveServer(tg, "db")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if strings.Contains(ch.Diff, "s3cret") || !strings.Contains(ch.Diff, "# was: ") {
			t.Errorf("%s: diff\n%s", tc.name, ch.Diff)
		}
	}
}

// TestDiffHidesAQuotedValuesLaterLineWhenLinesAreOdd: in a file whose
// positions cannot be trusted, the later line of a quoted value that
// holds a ": " further on is hidden from its indentation, not only after
// that ": ".
func TestDiffHidesAQuotedValuesLaterLineWhenLinesAreOdd(t *testing.T) {
	body := "servers:\n  db:\n    command: psql\n    env: {TOKEN: \"ab-s3cret\\\n      cd-s3cret\\\"\", LAST: x}\n  keep:\n    command: psql\n    env: {NOTE: \"a\u2028b\"}\n"
	tg := target(t, body)
	tg.Shown = testShown
	ch, err := RemoveServer(tg, "db")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ch.Diff, "s3cret") {
		t.Fatalf("diff\n%s", ch.Diff)
	}
}
