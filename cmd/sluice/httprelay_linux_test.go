package main

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sluice/gateway/mcp/mcptest"
)

// The whole-process benchmark's HTTP floor must be a working streamable
// HTTP server for the SDK client in every protocol era, or its row
// measures a failure.
func TestBenchHTTPRelay(t *testing.T) {
	exe, argv, err := mcptest.Command()
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, append([]string{benchHTTPRelayArg, exe}, argv...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	addrc := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addrc <- m[1]
			}
		}
	}()
	var endpoint string
	select {
	case a := <-addrc:
		endpoint = "http://" + a + "/mcp"
	case <-time.After(30 * time.Second):
		t.Fatal("the relay did not report its address")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	for _, era := range []string{"", "2025-11-25", "2025-06-18", "2025-03-26"} {
		c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: era})
		if err != nil {
			t.Fatalf("era %q: connect: %v", era, err)
		}
		lt, err := cs.ListTools(ctx, nil)
		if err != nil || len(lt.Tools) == 0 {
			t.Fatalf("era %q: tools/list: %v, %v", era, lt, err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				text := strings.Repeat("x", i+1)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
				if err != nil {
					errs <- err
					return
				}
				if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != text {
					errs <- &relayErr{era, res}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("era %q: tools/call: %v", era, err)
		}
		if sid := cs.ID(); strings.HasPrefix(era, "2025") && sid == "" {
			t.Errorf("era %q: no session id issued", era)
		}
		if err := cs.Close(); err != nil {
			t.Errorf("era %q: close: %v", era, err)
		}
	}

	for _, tc := range []struct {
		method, body, session string
		want                  int
	}{
		{http.MethodGet, "", "", http.StatusMethodNotAllowed},
		{http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "", http.StatusAccepted},
		{http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "not-issued", http.StatusNotFound},
		{http.MethodPost, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, "", http.StatusBadRequest},
		{http.MethodPost, `{"jsonrpc":"2.0","id":1,` + "\n" + `"method":"ping"}`, "", http.StatusBadRequest},
	} {
		req, err := http.NewRequestWithContext(ctx, tc.method, endpoint, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if tc.session != "" {
			req.Header.Set("Mcp-Session-Id", tc.session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s (session %q): status %d, want %d", tc.method, tc.body, tc.session, resp.StatusCode, tc.want)
		}
	}
}

type relayErr struct {
	era string
	res *mcp.CallToolResult
}

func (e *relayErr) Error() string { return "era " + e.era + ": unexpected result" }

func TestRelayMembers(t *testing.T) {
	for _, tc := range []struct {
		line, id, method string
		ok               bool
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"id":9,"method":"x"}}`, `7`, `"tools/call"`, true},
		{` { "method" : "a\"}" , "params":[{"id":[1,"]"]}], "id" : "s\\"}`, `"s\\"`, `"a\"}"`, true},
		{`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"{\"id\":4}"}]}}`, `3`, ``, true},
		{`{"jsonrpc":"2.0","method":"notifications/progress"}`, ``, `"notifications/progress"`, true},
		{`{}`, ``, ``, true},
		{`[{"id":1}]`, ``, ``, false},
		{`{"id":1`, ``, ``, false},
		{`{"id":1}x`, ``, ``, false},
		{`{"id":}`, ``, ``, false},
		{`{"id":1 "method":"m"}`, ``, ``, false},
		{`{"a":"unterminated}`, ``, ``, false},
	} {
		id, method, ok := relayMembers([]byte(tc.line))
		if ok != tc.ok || string(id) != tc.id || string(method) != tc.method {
			t.Errorf("relayMembers(%s) = %q, %q, %v; want %q, %q, %v", tc.line, id, method, ok, tc.id, tc.method, tc.ok)
		}
	}
}
