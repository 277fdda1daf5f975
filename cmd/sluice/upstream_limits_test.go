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
