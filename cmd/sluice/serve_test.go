//go:build unix

package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestServeFlags(t *testing.T) {
	newWorld(t)
	want(t, sluice(t, "", "serve", "--mode", "fancy"), exitUsage, "--mode must be gateway, flat or auto")
	want(t, sluice(t, "", "serve", "--no-prefix"), exitUsage, "--no-prefix applies to direct tools", "no expose glob is in force")
	want(t, sluice(t, "", "serve", "--log-level", "loud"), exitUsage, "--log-level")
	want(t, sluice(t, "", "serve", "extra"), exitUsage, "unexpected argument")
	empty := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want(t, sluice(t, "", "serve", "--http", "127.0.0.1:0", "--token-file", empty), exitUsage, "first line is empty")
	r := sluiceProc(t, "", "serve", "--http", "0.0.0.0:0")
	want(t, r, exitUsage, "--allow-remote")
	want(t, sluice(t, "", "help", "serve"), exitOK, "--http ADDR", "flat")
}

// TestServeStdioProcess drives the real binary over stdio: stdout carries
// JSON-RPC frames only (server stderr and logs go to stderr, even at
// debug), stdin EOF ends it with status 0 and every server is torn down.
func TestServeStdioProcess(t *testing.T) {
	w := newWorld(t)
	name := uniqueName(t)
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx", "-name", name))
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fx__stderr","arguments":{"text":"UPSTREAM-STDERR-LINE"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"hello"}}}`,
	}, "\n") + "\n"
	cmd := exec.Command(sluiceBin, "serve", "--mode", "flat", "--log-level", "debug")
	stdin, out, errb := startPiped(t, cmd)
	io.WriteString(stdin, in)
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), `"id":3`) {
		if time.Now().After(deadline) {
			t.Fatalf("no answer to the calls:\nstdout:\n%s\nstderr:\n%s", out.String(), errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	stdin.Close()
	if err := waitExit(t, cmd, "stdin's end"); err != nil {
		t.Fatalf("serve exited with %v\n%s", err, errb.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(line), &m) != nil || string(m["jsonrpc"]) != `"2.0"` {
			t.Errorf("stdout line is not a JSON-RPC frame: %q", line)
		}
	}
	if strings.Contains(out.String(), "UPSTREAM-STDERR-LINE\\n") || !strings.Contains(errb.String(), "[fx] UPSTREAM-STDERR-LINE") {
		t.Errorf("the server's stderr must go to stderr:\nstdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
	if !strings.Contains(out.String(), `"text":"hello"`) {
		t.Errorf("echo result missing:\n%s", out.String())
	}
	noneLeft(t, name)
}

// TestServeInspector: the Inspector CLI lists and calls through sluice
// serve over stdio and HTTP, in both protocol eras and both modes.
func TestServeInspector(t *testing.T) {
	w, root := peersWorld(t)
	name := uniqueName(t)
	w.writeUser("servers:\n" + fixture(t, "fx", "-name", name))
	env := []string{"-e", "SLUICE_HOME=" + w.home, "-e", "SLUICE_CACHE_DIR=" + w.cache, "-e", "XDG_STATE_HOME=" + w.state}
	check := func(what, out string, code int, fragments ...string) {
		t.Helper()
		if code != 0 {
			t.Errorf("%s: exit %d: %s", what, code, out)
			return
		}
		for _, f := range fragments {
			if !strings.Contains(out, f) {
				t.Errorf("%s: output lacks %q: %s", what, f, out)
			}
		}
	}
	for _, era := range []string{"legacy", "modern"} {
		stdio := func(mode string, args ...string) (string, int) {
			a := append([]string{"--protocol-era", era}, env...)
			a = append(a, sluiceBin, "serve", "--mode", mode, "--project", w.project)
			return inspector(t, root, append(a, args...)...)
		}
		out, code := stdio("flat", "--method", "tools/list")
		check("stdio flat list "+era, out, code, `"fx__echo"`)
		out, code = stdio("flat", "--method", "tools/call", "--tool-name", "fx__echo", "--tool-arg", "text=via-stdio-"+era)
		check("stdio flat call "+era, out, code, "via-stdio-"+era)
		out, code = stdio("gateway", "--method", "tools/list")
		check("stdio gateway list "+era, out, code, `"find"`, `"describe"`, `"call"`)
		out, code = stdio("gateway", "--method", "tools/call", "--tool-name", "call", "--tool-arg", "capability=fx__echo", `arguments={"text":"gw-`+era+`"}`)
		check("stdio gateway call "+era, out, code, "gw-"+era)
	}

	for _, mode := range []string{"gateway", "flat"} {
		url, stop := startHTTPServe(t, "--mode", mode)
		for _, era := range []string{"legacy", "modern"} {
			out, code := inspector(t, root, "--protocol-era", era, url, "--method", "tools/list")
			if mode == "flat" {
				check("http flat list "+era, out, code, `"fx__echo"`)
				out, code = inspector(t, root, "--protocol-era", era, url, "--method", "tools/call", "--tool-name", "fx__echo", "--tool-arg", "text=via-http-"+era)
				check("http flat call "+era, out, code, "via-http-"+era)
			} else {
				check("http gateway list "+era, out, code, `"find"`)
				out, code = inspector(t, root, "--protocol-era", era, url, "--method", "tools/call", "--tool-name", "call", "--tool-arg", "capability=fx__echo", `arguments={"text":"http-gw-`+era+`"}`)
				check("http gateway call "+era, out, code, "http-gw-"+era)
			}
		}
		stop()
	}
	noneLeft(t, name)
}

// TestServeSIGTERMDrains: SIGTERM lets a running call finish (within the
// drain bound), then serve exits 0 and tears its servers down.
func TestServeSIGTERMDrains(t *testing.T) {
	w := newWorld(t)
	name := uniqueName(t)
	w.writeUser("servers:\n" + fixture(t, "fx", "-name", name))
	cmd := exec.Command(sluiceBin, "serve", "--mode", "flat")
	stdin, out, errb := startPiped(t, cmd)
	t.Cleanup(func() { stdin.Close() })
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fx__slow","arguments":{"ms":1500,"steps":3},"_meta":{"progressToken":"p"}}}`+"\n")
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), `"notifications/progress"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the slow call never reported progress:\n%s\n%s", out.String(), errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := waitExit(t, cmd, "SIGTERM"); err != nil {
		t.Fatalf("serve after SIGTERM: %v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), `"id":2,"result"`) {
		t.Errorf("the running call was not drained:\n%s\n%s", out.String(), errb.String())
	}
	noneLeft(t, name)
}

// TestServePipedRequestsAreAllAnswered: `printf ... | sluice serve` — the
// requests are written and stdin is closed at once. Every request read
// before EOF is answered (a running call included), a line that is not
// JSON gets -32700 with id null without ending the session, and nothing
// pipelined behind initialize overtakes it.
func TestServePipedRequestsAreAllAnswered(t *testing.T) {
	w := newWorld(t)
	name := uniqueName(t)
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx", "-name", name))
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"call","arguments":{"capability":"fx__slow","arguments":{"ms":700}}}}`,
		`not json at all`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"call","arguments":{"capability":"fx__echo","arguments":{"text":"after the bad line"}}}}`,
	}, "\n") + "\n"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, sluiceBin, "serve", "--log-level", "debug")
	cmd.Stdin = strings.NewReader(in)
	var out, errb syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve exited with %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	answers := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
			Result  json.RawMessage `json:"result"`
			Error   json.RawMessage `json:"error"`
		}
		if json.Unmarshal([]byte(line), &m) != nil || m.JSONRPC != "2.0" {
			t.Fatalf("stdout line is not a JSON-RPC frame: %q", line)
		}
		if m.Method != "" {
			continue
		}
		answers[string(m.ID)] = string(m.Result) + string(m.Error)
	}
	for id, frag := range map[string]string{
		"1":    `"serverInfo"`,
		"2":    `"name":"call"`,
		"3":    `"isError"`, // checked below: not an error
		"4":    `after the bad line`,
		"null": `-32700`,
	} {
		got, ok := answers[id]
		if !ok {
			t.Errorf("no answer with id %s\nstdout:\n%s\nstderr:\n%s", id, out.String(), errb.String())
			continue
		}
		if id == "3" {
			if strings.Contains(got, `"isError":true`) || !strings.Contains(got, `"content"`) {
				t.Errorf("the running call's answer = %s", got)
			}
			continue
		}
		if !strings.Contains(got, frag) {
			t.Errorf("answer %s lacks %q: %s", id, frag, got)
		}
	}
	if strings.Contains(errb.String(), "before initialize") || strings.Contains(errb.String(), "invalid during session initialization") {
		t.Errorf("a pipelined request overtook initialize:\n%s", errb.String())
	}
	noneLeft(t, name)
}
