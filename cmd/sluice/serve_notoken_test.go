package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeHTTPWithoutTokenWarns: loopback is every user and process on
// the machine, so HTTP without a token says at start, in one line, who can
// call the tools and how to require a token; with one it says nothing.
func TestServeHTTPWithoutTokenWarns(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	_, log, stop := serveWithLog(t)
	stop()
	out := log()
	if n := strings.Count(out, "HTTP without a token"); n != 1 {
		t.Fatalf("the warning is there %d times, want once:\n%s", n, out)
	}
	for _, f := range []string{"every user and process on this machine", "call every tool", "--token-file FILE"} {
		if !strings.Contains(out, f) {
			t.Errorf("the warning lacks %q:\n%s", f, out)
		}
	}
	tok := filepath.Join(w.root, "token")
	if err := os.WriteFile(tok, []byte("s3cr3t-token-for-test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, log, stop = serveWithLog(t, "--token-file", tok)
	stop()
	if out := log(); strings.Contains(out, "without a token") {
		t.Errorf("serve with a token warns of none:\n%s", out)
	}
}
