package main

import (
	"strings"
	"testing"
)

// TestCallHonoursTimeoutMsOnListing: `sluice call` on a server that stops
// reading after initialize fails within the declared timeoutMs (the
// listing it needs first included), and says which timeout ran out.
func TestCallHonoursTimeoutMsOnListing(t *testing.T) {
	w := newWorld(t)
	name := uniqueName(t)
	w.writeUser("servers:\n" + fixture(t, "fx", "-name", name, "-mode", "stop-reading") + "    timeoutMs: 800\n")
	r := sluiceProc(t, "", "call", "fx__echo", "text=x")
	if r.code == exitOK || !strings.Contains(r.stderr, "800ms") || !strings.Contains(r.stderr, "timeout") {
		t.Fatalf("want a failure naming the 800ms timeout, got %s", r)
	}
	noneLeft(t, name)
}

// TestTruncatedListingThroughTheCLI: a server listing 600 tools is cut at
// 500; call, describe and find of a tool past the cut say so.
func TestTruncatedListingThroughTheCLI(t *testing.T) {
	w := newWorld(t)
	name := uniqueName(t)
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx", "-name", name, "-tools", "600"))
	const note = "truncated at 500 tools"
	r := sluiceProc(t, "", "call", "fx__tool_0600", "x=a")
	if r.code == exitOK || !strings.Contains(r.stderr, note) {
		t.Fatalf("call past the cut: %s", r)
	}
	r = sluiceProc(t, "", "describe", "fx__tool_0600")
	if r.code == exitOK || !strings.Contains(r.stdout+r.stderr, note) {
		t.Fatalf("describe past the cut: %s", r)
	}
	r = sluiceProc(t, "", "find", "tool_0600")
	if !strings.Contains(r.stdout+r.stderr, note) {
		t.Fatalf("find: %s", r)
	}
	noneLeft(t, name)
}
