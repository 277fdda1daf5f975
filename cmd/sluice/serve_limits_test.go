//go:build unix

package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// openFDs counts the descriptors process pid holds (Linux).
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("cannot count descriptors: %v", err)
	}
	return len(ents)
}

// slowPOSTs opens n connections, each sending a POST to path whose
// headers announce 1,000 body bytes of which one is sent.
func slowPOSTs(t *testing.T, addr, path string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{", path, addr)
		conns = append(conns, c)
	}
	return conns
}

// answers reads one response status from each connection (0: closed
// without one), within a hang guard.
func answers(conns []net.Conn) map[int]int {
	codes := map[int]int{}
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			codes[0]++
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes[resp.StatusCode]++
		c.Close()
	}
	return codes
}

// waitFDs waits (bounded) until pid holds at most max descriptors and
// returns the last count.
func waitFDs(t *testing.T, pid, max int) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	n := openFDs(t, pid)
	for n > max && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		n = openFDs(t, pid)
	}
	return n
}

// TestServeHTTPSlowloris: 300 clients on loopback each trickle a request
// body. Without a token, sluice serve holds at most
// --max-conns-per-client of them (the rest are answered 503 at once) and
// answers those 408 after --read-timeout; with a token, every
// unauthenticated one is answered at once. Either way the descriptors go
// back to where they were, and an idle keep-alive is closed.
func TestServeHTTPSlowloris(t *testing.T) {
	newWorld(t)
	const clients, cap = 300, 16

	t.Run("open", func(t *testing.T) {
		addr, pid, stop := startHTTPServeProc(t, nil, "--read-timeout", "1s", "--max-conns-per-client", fmt.Sprint(cap), "--idle-timeout", "1s")
		defer stop()
		base := openFDs(t, pid)
		conns := slowPOSTs(t, addr, "/mcp", clients)
		held := waitFDs(t, pid, base+cap+4)
		if held > base+cap+4 {
			t.Errorf("serve holds %d descriptors with %d slow clients (%d before; cap %d per client)", held, clients, base, cap)
		}
		codes := answers(conns)
		if codes[503] != clients-cap || codes[408] != cap {
			t.Errorf("answers by status = %v; want %d x 503 and %d x 408", codes, clients-cap, cap)
		}
		if n := waitFDs(t, pid, base+2); n > base+2 {
			t.Errorf("serve still holds %d descriptors (%d before the slow clients)", n, base)
		}
		// An idle keep-alive is closed by serve.
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		br := bufio.NewReader(c)
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("healthz: %v %v", resp, err)
		}
		io.Copy(io.Discard, resp.Body)
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("idle keep-alive: read = %v, want EOF (closed by serve)", err)
		}
		resp, err = http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, want := range []string{
			fmt.Sprintf(`sluice_http_limit_events_total{event="connection_refused"} %d`, clients-cap),
			fmt.Sprintf(`sluice_http_limit_events_total{event="read_timeout"} %d`, cap),
		} {
			if !strings.Contains(string(body), want) {
				t.Errorf("/metrics lacks %q", want)
			}
		}
	})

	t.Run("token", func(t *testing.T) {
		addr, pid, stop := startHTTPServeProc(t, []string{"SLUICE_TOKEN=tok-" + uniqueName(t)})
		defer stop()
		base := openFDs(t, pid)
		// In waves under the default per-client cap (64): every one is
		// answered 401 at once, its body never awaited.
		codes := map[int]int{}
		for i := 0; i < clients; i += 50 {
			for code, n := range answers(slowPOSTs(t, addr, "/mcp", 50)) {
				codes[code] += n
			}
		}
		if codes[401] != clients {
			t.Errorf("answers by status = %v; want %d x 401", codes, clients)
		}
		if n := waitFDs(t, pid, base+2); n > base+2 {
			t.Errorf("serve still holds %d descriptors (%d before the slow clients)", n, base)
		}
	})
}

func TestServeHTTPLimitFlags(t *testing.T) {
	newWorld(t)
	want(t, sluice(t, "", "serve", "--read-timeout", "5s"), exitUsage, "--read-timeout applies to --http only")
	want(t, sluice(t, "", "serve", "--http", "127.0.0.1:0", "--max-sessions", "-1"), exitUsage, `invalid value "-1" for --max-sessions: out of range; want a whole number from 0 to`)
	want(t, sluice(t, "", "serve", "--http", "127.0.0.1:0", "--idle-timeout", "-1s"), exitUsage, "--idle-timeout must be a positive duration")
	want(t, sluice(t, "", "help", "serve"), exitOK, "--max-conns-per-client N", "sluice_http_limit_events_total")
}
