package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// callLines checks that log holds exactly n "call finished" lines and
// that each is byte for byte the line slog's JSON handler writes for the
// same values.
func callLines(t *testing.T, log string, n int) {
	t.Helper()
	got := 0
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `"msg":"call finished"`) {
			continue
		}
		got++
		var v struct {
			Time                           string
			Level                          string
			RequestID                      string `json:"request_id"`
			Tool, Capability, Outcome, Err string
			DurationMS                     int64 `json:"duration_ms"`
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		when, err := time.Parse(time.RFC3339Nano, v.Time)
		if err != nil {
			t.Fatalf("log line %q: time: %v", line, err)
		}
		var want bytes.Buffer
		r := slog.NewRecord(when, slog.LevelInfo, "call finished", 0)
		r.AddAttrs(slog.String("request_id", v.RequestID), slog.String("tool", v.Tool), slog.String("capability", v.Capability),
			slog.String("outcome", v.Outcome), slog.Int64("duration_ms", v.DurationMS))
		_ = slog.NewJSONHandler(&want, nil).Handle(context.Background(), r)
		if line+"\n" != want.String() {
			t.Errorf("log line\n%s\nis not slog's\n%s", line, want.String())
		}
	}
	if got != n {
		t.Fatalf("%d call lines in the log, want %d:\n%s", got, n, log)
	}
	// The last line serve writes, just before it returns.
	if sum := logLines(t, log, "summary"); len(sum) != 1 || sum[0]["calls"] != float64(n) {
		t.Fatalf("want one summary line counting %d calls:\n%s", n, log)
	}
}

// TestServeLogsEveryCallBeforeItExits: the per-call log lines, which serve
// holds back for a moment to write several at once, are all written when
// serve ends right after the calls, and so is its summary, the line it
// writes just before it returns: at stdin EOF (stdio) and at SIGTERM
// (HTTP); and each is the line slog writes.
func TestServeLogsEveryCallBeforeItExits(t *testing.T) {
	const calls = 40
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))

	t.Run("stdio", func(t *testing.T) {
		var in strings.Builder
		in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
		in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
		for i := 1; i <= calls; i++ {
			fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"c%d"}}}`+"\n", i, i)
		}
		cmd := exec.Command(sluiceBin, "serve", "--mode", "flat")
		stdin, out, errb := startPiped(t, cmd)
		io.WriteString(stdin, in.String())
		deadline := time.Now().Add(60 * time.Second)
		for strings.Count(out.String(), `"result"`) < calls+1 {
			if time.Now().After(deadline) {
				t.Fatalf("not every call was answered:\nstdout:\n%s\nstderr:\n%s", out.String(), errb.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
		stdin.Close() // at once: the last lines are still held back
		if err := waitExit(t, cmd, "stdin's end"); err != nil {
			t.Fatalf("serve exited with %v\n%s", err, errb.String())
		}
		callLines(t, errb.String(), calls)
	})

	t.Run("http", func(t *testing.T) {
		base, log, stop := serveWithLog(t, "--mode", "flat")
		resp, _ := rpc(t, base, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
		session := resp.Header.Get("Mcp-Session-Id")
		if session == "" {
			t.Fatalf("initialize: %v", resp.Header)
		}
		rpc(t, base, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
		for i := 1; i <= calls; i++ {
			_, m := rpc(t, base, session, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"c%d"}}}`, i, i), nil)
			if !strings.Contains(string(m["result"]), fmt.Sprintf(`"c%d"`, i)) {
				t.Fatalf("call %d: %s", i, m)
			}
		}
		stop() // SIGTERM at once after the last answer
		callLines(t, log(), calls)
	})
}
