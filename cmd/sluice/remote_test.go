package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startRemotePeer runs a remote MCP server in its own process group and
// waits until its port accepts connections. The group is killed at cleanup.
func startRemotePeer(t *testing.T, port int, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	ownGroup(cmd)
	var log syncBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		killGroup(cmd)
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %d:\n%s", name, port, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// goEverything starts the Go SDK's conformance everything-server over
// streamable HTTP and returns its MCP URL.
func goEverything(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(root, ".cache", "bin", "everything-server")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("SLUICE_REQUIRE_PEERS") == "1" {
			t.Fatalf("everything-server is missing and SLUICE_REQUIRE_PEERS=1; run scripts/install-peers.sh")
		}
		t.Skip("everything-server is missing; run scripts/install-peers.sh")
	}
	port := freePort(t)
	startRemotePeer(t, port, nil, bin, "-http", fmt.Sprintf("127.0.0.1:%d", port))
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// npmEverythingSSE starts the npm reference server-everything on the
// legacy HTTP+SSE transport and returns its SSE URL.
func npmEverythingSSE(t *testing.T, root string) string {
	t.Helper()
	node, script := peer(t, root, "server-everything")
	port := freePort(t)
	startRemotePeer(t, port, []string{fmt.Sprintf("PORT=%d", port)}, node, script, "sse")
	return fmt.Sprintf("http://127.0.0.1:%d/sse", port)
}

func remoteDecl(id, url string, extra ...string) string {
	s := fmt.Sprintf("  %s:\n    url: %q\n", id, url)
	for _, e := range extra {
		s += "    " + e + "\n"
	}
	return s
}

// TestRemoteUpstreams: a remote server on each transport behind the whole
// pipeline: find with a refresh, a direct call, code mode, and sluice
// serve (flat mode, over HTTP) to a third-party client.
func TestRemoteUpstreams(t *testing.T) {
	w, root := peersWorld(t)
	goURL := goEverything(t, root)
	sseURL := npmEverythingSSE(t, root)
	w.writeUser("servers:\n" +
		remoteDecl("ev", goURL, "allowPrivate: true", "actionClass: read", "headers: {X-Team: platform}") +
		remoteDecl("legacy", sseURL, "allowPrivate: true", "actionClass: read", "transport: auto"))

	want(t, sluice(t, "", "find", "--server", "ev", "--refresh"), exitOK, "live", "ev__test_simple_text")
	want(t, sluice(t, "", "find", "--server", "legacy", "--refresh"), exitOK, "live", "legacy__echo")
	want(t, sluice(t, "", "call", "ev__test_simple_text"), exitOK, "This is a simple text response for testing.")
	want(t, sluice(t, "", "call", "legacy__echo", "message=over legacy sse"), exitOK, "Echo: over legacy sse")
	want(t, sluice(t, "", "servers"), exitOK, "ev", "legacy")

	// Code mode: one script joins both remote servers.
	r := sluice(t, "a = ev.test_simple_text()\nb = legacy.echo(message='from a script')\nresult = {'a': a, 'b': b}\n", "run", "-")
	want(t, r, exitOK, "simple text response", "Echo: from a script", "calls: 2")

	// sluice serve with both remotes, to the Inspector as the agent.
	url, stop := startHTTPServe(t, "--mode", "flat")
	out, code := inspector(t, root, "--protocol-era", "legacy", url, "--method", "tools/call", "--tool-name", "ev__test_simple_text")
	if code != 0 || !strings.Contains(out, "simple text response") {
		t.Errorf("serve -> ev: exit %d: %s", code, out)
	}
	out, code = inspector(t, root, "--protocol-era", "modern", url, "--method", "tools/call", "--tool-name", "legacy__echo", "--tool-arg", "message=through serve")
	if code != 0 || !strings.Contains(out, "Echo: through serve") {
		t.Errorf("serve -> legacy: exit %d: %s", code, out)
	}
	stop()
}

// TestRemoteSSRFGuard: without allowPrivate a loopback server is refused
// at connect time; a project declaration cannot opt out, and even trusted
// it is refused.
func TestRemoteSSRFGuard(t *testing.T) {
	w, root := peersWorld(t)
	goURL := goEverything(t, root)
	w.writeUser("servers:\n" + remoteDecl("ev", goURL, "actionClass: read"))
	want(t, sluice(t, "", "call", "ev__test_simple_text"), exitFailure, "SSRF guard", "loopback", "allowPrivate")

	w.writeUser("servers: {}\n")
	w.writeProject("servers:\n" + remoteDecl("proj", goURL, "allowPrivate: true"))
	want(t, sluice(t, "", "check"), exitFailure, "allowPrivate is only allowed in user config")
	w.writeProject("servers:\n" + remoteDecl("proj", goURL))
	want(t, sluice(t, "", "call", "proj__test_simple_text"), exitRefused, "untrusted", "sluice trust proj")
	want(t, sluice(t, "", "trust", "proj", "--action-class", "read", "--yes"), exitOK, "Recorded", "url:", goURL)
	want(t, sluice(t, "", "call", "proj__test_simple_text"), exitFailure, "SSRF guard")
}
