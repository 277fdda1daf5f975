package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestAuthWaitProgress: at a terminal, the wait for the browser is a line
// on stderr that counts the time and is erased when the browser returns;
// the URL is printed before it and the answer goes to stdout.
func TestAuthWaitProgress(t *testing.T) {
	w := newWorld(t)
	p := newProtectedServer(t)
	w.writeUser("servers:\n" + remoteDecl("prot", p.srv.URL+"/mcp", "allowPrivate: true", "actionClass: read", "transport: streamable-http"))
	t.Setenv("TERM", "xterm")
	fakeTerminal(t)

	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"auth", "prot", "--no-browser", "--timeout", "1m"}, strings.NewReader(""), &out, &errb)
	}()
	re := regexp.MustCompile(`(http://127\.0\.0\.1:\d+/authorize\?\S+)`)
	const waiting = "waiting for the browser to return (up to 1m0s; Ctrl-C cancels)"
	var authURL string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		s := errb.String()
		if m := re.FindStringSubmatch(s); m != nil && strings.Contains(s, waiting) {
			authURL = m[1]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sluice auth printed no URL and no wait:\n%q", s)
		}
	}
	resp, err := http.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if code := <-done; code != exitOK || !strings.Contains(out.String(), "Authorized: prot") {
		t.Fatalf("sluice auth: exit %d\n%s\n%q", code, out.String(), errb.String())
	}
	s := errb.String()
	if !strings.Contains(s, "\r\x1b[K| "+waiting+" ") || !strings.HasSuffix(s, "\r\x1b[K") {
		t.Errorf("the wait is not a line drawn in place and erased at the end:\n%q", s)
	}
	if strings.Contains(s, "Waiting for the browser to return") {
		t.Errorf("at a terminal the plain wait line is printed as well:\n%q", s)
	}
	if strings.Contains(out.String(), "waiting") {
		t.Errorf("the wait reached stdout:\n%s", out.String())
	}
}
