package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestRunShortenedResultForPeople: a value over the context budget is
// shown to a person as the shortened answer, the note and the handle
// (not as the MCP result JSON); --json keeps the JSON, and the handle
// reads the full value.
func TestRunShortenedResultForPeople(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	script := `result = {"rows": ["row %d: %s" % (i, "x" * 40) for i in range(1000)]}` + "\n"
	r := sluice(t, script, "run", "-")
	want(t, r, exitOK, "{\n  \"rows\": [\n    \"row 0: xxxx", "stored under handle r-", "[resource link] sluice://results/r-",
		"more of the shortened answer not shown here")
	if strings.Contains(r.stdout, `"type": "text"`) || strings.Contains(r.stdout, `"content": [`) {
		t.Fatalf("a person got the MCP result JSON:\n%.2000s", r.stdout)
	}
	// A screenful of the answer, not the whole shortened text.
	if n := strings.Count(r.stdout, "\n"); n > previewLines+5 || strings.Contains(r.stdout, "row 100:") {
		t.Errorf("the preview has %d lines:\n%.3000s", n, r.stdout)
	}
	i := strings.Index(r.stdout, "stored under handle ")
	handle := strings.TrimRight(strings.Fields(r.stdout[i+len("stored under handle "):])[0], ";.")
	if !strings.Contains(r.stderr, "the whole value: sluice result "+handle+"\n") {
		t.Errorf("stderr does not name the command that shows the whole value:\n%s", r.stderr)
	}
	want(t, sluice(t, "", "result", handle, "--offset", "0", "--length", "100"), exitOK, `row 0: xxxx`)

	r = sluice(t, script, "run", "-", "--json")
	want(t, r, exitOK, `"resultFiltered": true`, `"type": "resource_link"`)
}

func TestIndentJSONPrefix(t *testing.T) {
	cases := map[string]string{
		`{"a":1,"b":[1,2],"c":{},"d":"x,y:{z}"}`: "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n  ],\n  \"c\": {},\n  \"d\": \"x,y:{z}\"\n}",
		`{"rows":["row \"0\"","row 1`:            "{\n  \"rows\": [\n    \"row \\\"0\\\"\",\n    \"row 1",
		`[1] … [9 bytes cut]`:                    "[\n  1\n]\n… [9 bytes cut]",
		"plain text, not JSON {":                 "plain text, not JSON {",
	}
	for in, want := range cases {
		if got := indentJSONPrefix(in); got != want {
			t.Errorf("%q:\n%s\nwant:\n%s", in, got, want)
		}
	}
	// A complete value indents as json.Indent does.
	v := `{"k":[{"x":null,"y":true}],"n":-1.5e3}`
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(v), "", "  "); err != nil {
		t.Fatal(err)
	}
	if got := indentJSONPrefix(v); got != b.String() {
		t.Errorf("indentJSONPrefix:\n%s\njson.Indent:\n%s", got, b.String())
	}
	long := strings.Repeat("line\n", 100)
	shown, more := preview(long)
	if strings.Count(shown, "\n") != previewLines-1 || more != len(strings.TrimRight(long, "\n"))-len(shown) {
		t.Errorf("preview of 100 lines: %d lines shown, %d more", strings.Count(shown, "\n")+1, more)
	}
	wide := strings.Repeat("é", previewBytes)
	if shown, _ := preview(wide); len(shown) > previewBytes || !utf8.ValidString(shown) {
		t.Errorf("a long line is cut to %d bytes (valid UTF-8: %v)", len(shown), utf8.ValidString(shown))
	}
}
