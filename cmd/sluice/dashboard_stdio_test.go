//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var dashboardAt = regexp.MustCompile(`(?:sluice serve: dashboard at|sluice dashboard:) http://([^/ ]+)/admin/`)

// startWithDashboard starts sluice with args and returns the process, its
// stdin and stdout, and the dashboard's address read from stderr.
func startWithDashboard(t *testing.T, args ...string) (*exec.Cmd, io.WriteCloser, *bufio.Reader, string) {
	t.Helper()
	cmd := exec.Command(sluiceBin, args...)
	ownGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killGroup(cmd); _ = cmd.Wait() })
	var log syncBuffer
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			log.Write(append(sc.Bytes(), '\n'))
			if m := dashboardAt.FindStringSubmatch(sc.Text()); m != nil && !sent {
				noteDashboardLine(sc.Text())
				addrc <- m[1]
				sent = true
			}
		}
	}()
	select {
	case addr := <-addrc:
		return cmd, stdin, bufio.NewReader(stdout), addr
	case <-time.After(90 * time.Second):
		t.Fatalf("sluice %v did not say where its dashboard is:\n%s", args, log.String())
	}
	return nil, nil, nil, ""
}

// TestServeStdioAdmin: 'serve --admin ADDR' adds the dashboard to a stdio
// serve; an agent without elicitation waits there for approval; stdout
// carries frames only.
func TestServeStdioAdmin(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx") + "    actionClass: execute\n")
	cmd, stdin, stdout, addr := startWithDashboard(t, "serve", "--admin", "127.0.0.1:0")
	frames := make(chan map[string]any, 16)
	go func() {
		for {
			line, err := stdout.ReadBytes('\n')
			if err != nil {
				close(frames)
				return
			}
			var f map[string]any
			if err := json.Unmarshal(line, &f); err != nil {
				t.Errorf("stdout carries a line that is not a frame: %q", line)
				continue
			}
			frames <- f
		}
	}()
	send := func(s string) {
		if _, err := io.WriteString(stdin, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	await := func(id float64) map[string]any {
		t.Helper()
		deadline := time.After(2 * time.Minute)
		for {
			select {
			case f, ok := <-frames:
				if !ok {
					t.Fatalf("stdout closed before the answer to %v", id)
				}
				if f["id"] == id {
					return f
				}
			case <-deadline:
				t.Fatalf("no answer to %v", id)
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	await(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"call","arguments":{"capability":"fx__add","arguments":{"a":20,"b":22}}}}`)

	d := newDash(t, addr)
	d.get("/admin/activity") // the CSRF token
	id, kind, caps := d.pending()
	if kind != "call" || strings.Join(caps, ",") != "fx__add" {
		t.Errorf("pending: %s %v", kind, caps)
	}
	if resp, body := d.post("/admin/api/approvals/"+id, url.Values{"decision": {"approve"}}, true); resp.StatusCode != 200 {
		t.Fatalf("approve: %d %s", resp.StatusCode, body)
	}
	f := await(2)
	b, _ := json.Marshal(f["result"])
	if !strings.Contains(string(b), "42") || strings.Contains(string(b), `"isError":true`) {
		t.Fatalf("the approved call: %s", b)
	}
	_, body := d.get("/admin/api/status")
	for _, s := range []string{`"transport": "stdio"`, `"calls": 1`, `"ID": "fx"`} {
		if !strings.Contains(body, s) {
			t.Errorf("status lacks %s:\n%s", s, body)
		}
	}
	stdin.Close()
	if err := waitExit(t, cmd, "stdin's end"); err != nil {
		t.Errorf("serve after stdin closed: %v", err)
	}
}

// TestDashboardCommand: 'sluice dashboard ADDR' serves the dashboard
// alone, and ends on SIGTERM with status 0; a non-loopback address is
// refused without --admin-remote.
func TestDashboardCommand(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	r := sluiceProc(t, "", "dashboard", "0.0.0.0:0")
	want(t, r, exitUsage, "not a loopback address", "--admin-remote")
	r = sluiceProc(t, "", "serve", "--admin", "192.0.2.1:0")
	want(t, r, exitUsage, "not a loopback address")

	cmd, _, _, addr := startWithDashboard(t, "dashboard", "127.0.0.1:0")
	d := newDash(t, addr)
	resp, body := d.get("/admin/api/status")
	if resp.StatusCode != 200 || !strings.Contains(body, `"transport": "dashboard only"`) || !strings.Contains(body, `"ID": "fx"`) {
		t.Fatalf("status: %d %s", resp.StatusCode, body)
	}
	d.get("/admin/tools")
	resp, body = d.post("/admin/api/tools/call", url.Values{"capability": {"fx__echo"}, "arguments": {`{"text":"alone"}`}}, true)
	if resp.StatusCode != 200 || !strings.Contains(body, "alone") {
		t.Fatalf("a call from the dashboard alone: %d %s", resp.StatusCode, body)
	}
	if err := interrupt(cmd); err != nil {
		t.Fatal(err)
	}
	if err := waitExit(t, cmd, "SIGTERM"); err != nil {
		t.Errorf("dashboard after SIGTERM: %v", err)
	}
}

// TestStatusNamesTheLoginFile: a stdio serve's dashboard link went to a
// file (stderr is the MCP client's log); 'sluice status' names that file,
// and the link in it logs in.
func TestStatusNamesTheLoginFile(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	cmd, stdin, _, addr := startWithDashboard(t, "serve", "--admin", "127.0.0.1:0")
	defer stdin.Close()
	var r result
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if r = sluiceProc(t, "", "status"); r.code == exitOK {
			break
		}
	}
	files, _ := filepath.Glob(filepath.Join(w.state, "sluice", "dashboard-"+strconv.Itoa(cmd.Process.Pid)+"-*.login"))
	if len(files) != 1 {
		t.Fatalf("login files of the serve: %v", files)
	}
	file := files[0]
	want(t, r, exitOK, "  login link: in "+file+" (readable by you only)")
	j := sluiceProc(t, "", "status", "--json")
	var got []struct {
		PID       int    `json:"pid"`
		LoginFile string `json:"loginFile"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &got); err != nil || len(got) != 1 || got[0].PID != cmd.Process.Pid || got[0].LoginFile != file {
		t.Errorf("status --json: %v %+v, want the login file %s:\n%s", err, got, file, j)
	}
	if link := loginLink(addr); link == "" || strings.Contains(r.stdout+r.stderr, link) {
		t.Errorf("status shows the link itself, or serve wrote none (%q):\n%s", link, r)
	}
	newDash(t, addr)
}
