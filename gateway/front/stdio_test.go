//go:build unix

package front

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const childEnv = "SLUICE_FRONT_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "stdio":
		os.Exit(runStdioChild())
	case "http":
		os.Exit(runHTTPChild())
	default:
		fmt.Fprintln(os.Stderr, "unknown child mode")
		os.Exit(2)
	}
}

// nastyBackend misbehaves on purpose: it panics, fails with errors that
// carry newlines and JSON-looking text, writes to stderr like a chatty
// upstream, and returns a large result.
func nastyBackend() *fakeBackend {
	b := newFake()
	b.features = Features{ReadResult: true, Execute: true}
	var tools []Item
	for _, n := range []string{"echo", "panic", "error", "toolerr", "big", "slow", "progress"} {
		tools = append(tools, toolItem("up", n, "Misbehaves: "+n+"."))
	}
	b.setItems(KindTools, tools...)
	b.call = func(ctx context.Context, r CallRequest, p Peer) (json.RawMessage, error) {
		fmt.Fprintf(os.Stderr, "upstream stderr: {\"jsonrpc\":\"2.0\"} noise for %s\n", r.Capability)
		// A stray print to the process's stdout must not reach the stream.
		fmt.Println("stray stdout write from", r.Capability)
		switch r.Capability {
		case "up__panic":
			panic("boom\n{\"not\":\"a frame\"}")
		case "up__error":
			return nil, errors.New("line one\nline two {\"jsonrpc\":\"2.0\",\"id\":1}")
		case "up__toolerr":
			return nil, &ToolError{Message: "bad\nthing", Remedy: "do\nbetter"}
		case "up__big":
			return textResult(strings.Repeat("x\n", 300_000)), nil
		case "up__slow":
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(300 * time.Millisecond):
				return textResult("slow done"), nil
			}
		case "up__progress":
			_ = p.Progress(ctx, 1, 2, "half\nway")
			_ = p.Log(ctx, "error", "up", json.RawMessage(`"log\nline"`))
			return textResult("progressed"), nil
		}
		return textResult("echo " + string(r.Arguments)), nil
	}
	b.find = func(context.Context, FindRequest, Peer) (json.RawMessage, error) {
		panic("find panics too")
	}
	return b
}

func runStdioChild() int {
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	mode := ModeGateway
	if os.Getenv("SLUICE_FRONT_TEST_MODE") == "flat" {
		mode = ModeFlat
	}
	err := ServeStdio(context.Background(), nastyBackend(), &Options{Mode: mode, Logger: log}, os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	return 0
}

// TestStdioStdoutPurity runs ServeStdio in a child process, drives it
// through every error path, and checks that every byte on stdout belongs
// to a JSON-RPC frame, and that the child exits 0 on stdin EOF.
func TestStdioStdoutPurity(t *testing.T) {
	for _, tc := range []struct{ mode, version string }{
		{"gateway", "2025-11-25"}, {"gateway", ""}, {"flat", "2025-11-25"},
	} {
		t.Run(tc.mode+"/"+tc.version, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"=stdio", "SLUICE_FRONT_TEST_MODE="+tc.mode)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr syncBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
			var seen syncBuffer
			tee := io.TeeReader(stdout, &seen)

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := mcp.NewClient(&mcp.Implementation{Name: "purity", Version: "1"}, &mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{},
				ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
				},
			})
			cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: io.NopCloser(tee), Writer: stdin}, &mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.Bytes())
			}
			if tc.version != "" {
				_ = cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"})
			}
			tool := func(capability string) (string, map[string]any) {
				if tc.mode == "flat" {
					return capability, map[string]any{"a": 1}
				}
				return "call", map[string]any{"capability": capability, "arguments": map[string]any{"a": 1}}
			}
			for _, capability := range []string{"up__echo", "up__panic", "up__error", "up__toolerr", "up__big", "up__progress"} {
				name, args := tool(capability)
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: mcp.Meta{"progressToken": capability}})
				if err != nil {
					t.Fatalf("%s: %v", capability, err)
				}
			}
			if tc.mode == "gateway" {
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "find", Arguments: map[string]any{"query": "x"}}); err != nil {
					t.Fatalf("find: %v", err)
				}
			}
			_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool"})
			// Leave a call in flight across stdin EOF.
			name, args := tool("up__slow")
			go cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
			time.Sleep(50 * time.Millisecond)
			_ = stdin.Close() // EOF: the child must exit on its own.
			done := make(chan error, 1)
			go func() { _, _ = io.Copy(io.Discard, tee); done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("child exit: %v\nstderr:\n%s", err, stderr.Bytes())
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("child did not exit on stdin EOF\nstderr:\n%s", stderr.Bytes())
			}
			cs.Close()

			out := seen.Bytes()
			if len(out) == 0 || out[len(out)-1] != '\n' {
				t.Fatalf("stdout does not end with a complete frame (%d bytes)", len(out))
			}
			sc := bufio.NewScanner(bytes.NewReader(out))
			sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
			frames := 0
			for sc.Scan() {
				line := sc.Bytes()
				var msg struct {
					JSONRPC string          `json:"jsonrpc"`
					ID      json.RawMessage `json:"id"`
					Method  string          `json:"method"`
					Result  json.RawMessage `json:"result"`
					Error   json.RawMessage `json:"error"`
				}
				if err := json.Unmarshal(line, &msg); err != nil || msg.JSONRPC != "2.0" || (msg.Method == "" && msg.Result == nil && msg.Error == nil) {
					t.Fatalf("stdout line %d is not a JSON-RPC message: %.200q", frames+1, line)
				}
				frames++
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			if frames < 8 {
				t.Fatalf("only %d frames on stdout", frames)
			}
			errText := string(stderr.Bytes())
			for _, want := range []string{"upstream stderr", `"request_id"`, "stray stdout write from"} {
				if !strings.Contains(errText, want) {
					t.Errorf("stderr lacks %q", want)
				}
			}
			if !strings.Contains(errText, "panic") {
				t.Error("panics were not logged to stderr")
			}
		})
	}
}

// TestServeStdioEndings: EOF and cancellation both end ServeStdio cleanly
// and close the backend exactly once.
func TestServeStdioEndings(t *testing.T) {
	for _, how := range []string{"eof", "cancel"} {
		t.Run(how, func(t *testing.T) {
			b := newFake()
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			go io.Copy(io.Discard, outR)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- ServeStdio(ctx, b, &Options{Logger: quietLogger(), NoSignals: true}, inR, outW)
			}()
			if how == "eof" {
				inW.Close()
			} else {
				cancel()
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("ServeStdio = %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("ServeStdio did not return")
			}
			if n := b.closed.Load(); n != 1 {
				t.Fatalf("backend closed %d times", n)
			}
			inW.Close()
			outW.Close()
		})
	}
}
