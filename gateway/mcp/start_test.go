package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"sluice/gateway/proc"
)

const fixtureEnv = "SLUICE_MCP_FIXTURE"

// TestMain turns the test binary into a tiny MCP server when re-executed
// with SLUICE_MCP_FIXTURE set, so Start is tested against real processes.
func TestMain(m *testing.M) {
	if mode := os.Getenv(fixtureEnv); mode != "" {
		os.Exit(runFixture(mode, os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

func runFixture(mode string, in io.Reader, out io.Writer) int {
	w := bufio.NewWriter(out)
	send := func(s string) { w.WriteString(s + "\n"); w.Flush() }
	switch mode {
	case "die":
		fmt.Fprintln(os.Stderr, "fatal: bad config in fixture")
		return 3
	case "banner":
		send("fixture server starting")
	}
	fr := NewFramer(in, 0)
	for {
		m, err := fr.Next()
		if err != nil {
			if err == io.EOF {
				return 0
			}
			continue
		}
		if m.Kind != KindRequest {
			continue
		}
		id := string(m.ID)
		switch m.Method {
		case "initialize":
			send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fixture","version":"0"}}}`)
		case "tools/list":
			send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}}`)
		case "tools/call":
			args := member(m.Params, "arguments")
			send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[],"structuredContent":` + string(args) + `}}`)
		default:
			send(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"Method not found"}}`)
		}
	}
}

func fixtureSpec(t *testing.T, mode string) proc.Spec {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return proc.Spec{Server: "fx", Command: exe, Args: []string{"-test.run=^$"}, Env: map[string]string{fixtureEnv: mode},
		Dir: t.TempDir(), KillGrace: time.Second, KillBound: time.Second}
}

func TestStartRealProcess(t *testing.T) {
	for _, mode := range []string{"plain", "banner"} {
		t.Run(mode, func(t *testing.T) {
			c, err := Start(ctx10(t), fixtureSpec(t, mode), nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.Era() != EraLegacy || c.ProtocolVersion() != "2025-06-18" || c.ServerInfo().Name != "fixture" {
				t.Errorf("era %q version %q info %+v", c.Era(), c.ProtocolVersion(), c.ServerInfo())
			}
			tl, err := c.ListTools(ctx10(t))
			if err != nil || len(tl.Tools) != 1 {
				t.Fatalf("%v %+v", err, tl)
			}
			res, err := c.CallTool(ctx10(t), "echo", json.RawMessage(`{"big":123456789012345678901234567890}`), nil)
			if err != nil || string(member(res, "structuredContent")) != `{"big":123456789012345678901234567890}` {
				t.Fatalf("%s %v", res, err)
			}
			if n, _ := c.Noise(); (mode == "banner") != (n == 1) {
				t.Errorf("noise %d", n)
			}
			out := c.Close()
			if !out.Complete || out.Pgid == 0 {
				t.Errorf("outcome %+v", out)
			}
			if proc.GroupAlive(out.Pgid) {
				t.Errorf("group %d still alive", out.Pgid)
			}
		})
	}
}

func TestStartFailures(t *testing.T) {
	_, err := Start(ctx10(t), proc.Spec{Server: "fx", Command: "/nonexistent/sluice-no-such-server"}, nil)
	if CodeOf(err) != CodeSpawn || !strings.Contains(err.Error(), `"fx"`) {
		t.Errorf("spawn: %v", err)
	}

	_, err = Start(ctx10(t), fixtureSpec(t, "die"), nil)
	if CodeOf(err) != CodeClosed || !strings.Contains(err.Error(), `"fx"`) || !strings.Contains(err.Error(), "status 3") {
		t.Errorf("die: %v", err)
	}
	var e *Error
	if !asError(err, &e) || !strings.Contains(e.StderrTail, "bad config") {
		t.Errorf("stderr tail missing: %#v", err)
	}
	if strings.Contains(err.Error(), "bad config") {
		t.Error("stderr tail leaked into the error text")
	}
}

func TestStartHandshakeCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Start(ctx, fixtureSpec(t, "plain"), nil)
	if c := CodeOf(err); c != CodeAborted {
		t.Errorf("code %q: %v", c, err)
	}
}
