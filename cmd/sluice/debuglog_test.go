//go:build unix

package main

import (
	"fmt"
	"strings"
	"testing"

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
