//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"sluice/gateway/mcp/mcptest"
)

// TestServeDebugLogRedactsServerOutput: with the README's redaction
// config and --log-level debug, the key a hostile server puts in its
// errors, notifications, results and stderr reaches no line of serve's
// log: the lines that carry those texts (the upstream call's error, the
// relayed stderr line) carry them redacted.
func TestServeDebugLogRedactsServerOutput(t *testing.T) {
	w := newWorld(t)
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx", "-mode", "leaky") + readmeFilters)
	frames := []string{
		call(10, "fx__leak_error", ""),
		call(11, "fx__leak_big_error", ""),
		call(12, "fx__leak_notify", `{"progressToken":"p1"}`),
		call(13, "fx__leak_fields", ""),
		call(14, "fx__leak_structured", ""),
		// the server prints the key on its stderr
		fmt.Sprintf(`{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"call","arguments":{"capability":"fx__stderr","arguments":{"text":"printed %s"}}}}`, mcptest.LeakKey),
		tool(20, "find", `{"query":"leak"}`),
	}
	_, stderr := serveLog(t, []string{"--log-level", "debug"}, frames)
	relayed, upstreamErr := false, false
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, mcptest.LeakKey) {
			t.Errorf("the key reached the log: %.600s", l)
		}
		if strings.HasPrefix(l, "[fx] printed [REDACTED:") {
			relayed = true
		}
		if strings.Contains(l, `"msg":"upstream call"`) && strings.Contains(l, `upstream failure near [REDACTED:`) {
			upstreamErr = true
		}
	}
	if !relayed || !upstreamErr {
		t.Errorf("the log lacks the redacted stderr line (%v) or the redacted upstream error (%v):\n%.3000s", relayed, upstreamErr, stderr)
	}
}

// serveLog runs 'sluice serve' over stdio with args, sends an initialize
// handshake and the frames, waits for an answer to each request, closes
// stdin and returns what serve wrote to stdout and to stderr.
func serveLog(t *testing.T, args []string, frames []string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(sluiceBin, append([]string{"serve"}, args...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out, errb syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killGroup(cmd) })
	waitFor := func(id string) {
		deadline := time.Now().Add(3 * time.Minute) // a loaded machine starts serve slowly
		for !strings.Contains(out.String(), `"id":`+id+`,`) && !strings.Contains(out.String(), `"id":`+id+`}`) {
			if time.Now().After(deadline) {
				t.Fatalf("no answer to request %s:\nstdout:\n%.4000s\nstderr:\n%.4000s", id, out.String(), errb.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"+`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	waitFor(`"init"`)
	for _, f := range frames {
		io.WriteString(stdin, f+"\n")
		var m struct{ ID json.RawMessage }
		if json.Unmarshal([]byte(f), &m) == nil && len(m.ID) > 0 {
			waitFor(string(m.ID))
		}
	}
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("serve did not exit after stdin EOF")
	}
	return out.String(), errb.String()
}
