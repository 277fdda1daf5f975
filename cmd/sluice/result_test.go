package main

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"sluice/gateway"
)

var handleRe = regexp.MustCompile(`r-[0-9a-f]{32}`)
var totalRe = regexp.MustCompile(`this result was (\d+) bytes`)

func TestResultPagesAnOffloadedResult(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))

	// The default shape filter trims a 62 KB result and names a handle.
	r := sluice(t, "", "call", "fx__huge", "bytes=62000", "--json")
	want(t, r, exitOK)
	if len(r.stdout) > gateway.DefaultShapeBudget+1 {
		t.Fatalf("call output is %d bytes, over the budget", len(r.stdout))
	}
	handle := handleRe.FindString(r.stdout)
	m := totalRe.FindStringSubmatch(r.stdout)
	if handle == "" || m == nil {
		t.Fatalf("no handle or size in the shaped result:\n%s", r)
	}
	total, _ := strconv.Atoi(m[1])

	// Without --length: the whole stored result, byte for byte.
	r = sluice(t, "", "result", handle)
	want(t, r, exitOK)
	if len(r.stdout) != total {
		t.Fatalf("result printed %d bytes, want %d", len(r.stdout), total)
	}
	var full struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &full); err != nil || len(full.Content) != 1 || full.Content[0].Text != strings.Repeat("a", 62000) {
		t.Fatalf("stored result is not the original: %v", err)
	}
	whole := r.stdout

	// One page, with where the next starts on stderr.
	r = sluice(t, "", "result", handle, "--offset", "100", "--length", "1000")
	want(t, r, exitOK, "next page: sluice result "+handle+" --offset 1100 --length 1000")
	if r.stdout != whole[100:1100] {
		t.Fatalf("page differs from the stored bytes")
	}

	// --json: one page as an object.
	r = sluice(t, "", "result", handle, "--json", "--offset", strconv.Itoa(total-10))
	want(t, r, exitOK)
	var p gateway.ResultPage
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
		t.Fatal(err)
	}
	if p.Handle != handle || p.Offset != int64(total-10) || p.Data != whole[total-10:] || !p.EOF || p.Next != int64(total) || p.Total != int64(total) {
		t.Fatalf("json page %+v", p)
	}

	// Mistakes.
	want(t, sluice(t, "", "result", "r-"+strings.Repeat("0", 32)), exitUsage, "no stored result", "fix: call the tool again")
	want(t, sluice(t, "", "result", "nope"), exitUsage, "not a result handle")
	want(t, sluice(t, "", "result", handle, "--offset", strconv.Itoa(total)), exitUsage, "past the end")
	want(t, sluice(t, "", "result"), exitUsage, "exactly one HANDLE")
	want(t, sluice(t, "", "result", handle, "--length", "0"), exitUsage, "for --length: out of range; want a whole number from 1 to")
	want(t, sluice(t, "", "result", handle, "--offset", "-1"), exitUsage, "for --offset: out of range; want a whole number from 0 to")

	// The same world's compile cache now holds shape: test it directly.
	r = sluice(t, strings.Repeat("q", 5000), "filter", "test", "builtin:shape", "--config", `{"budgetBytes": 1024}`)
	want(t, r, exitOK, "builtin:shape (mode result-json, stage context)", "replaced", "(text, wrapped as one text item)", "offload:", "in 1 call (counted, not stored)", "--- output", "bytes were omitted")
	r = sluice(t, "", "filter", "list")
	want(t, r, exitOK, "default  builtin:shape  context  fail-open", "active")
}
