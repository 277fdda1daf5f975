//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeStdioUnderBackpressure: serve reads a pipe stdin and writes a
// pipe stdout through the runtime's poller. An agent that sends a request
// line far larger than a pipe holds, then many calls whose answers fill
// its stdout many times over before it reads any, gets every answer whole
// and exactly once once it reads; the calls still in flight when it
// closes stdin are answered too; and serve hands both pipes back
// blocking, as it found them (the mode belongs to descriptions the agent
// shares).
func TestServeStdioUnderBackpressure(t *testing.T) {
	w := newWorld(t)
	name := uniqueName(t)
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx", "-name", name))
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sluiceBin, "serve", "--mode", "flat", "--log-level", "debug")
	cmd.Stdin, cmd.Stdout = inR, outW
	var errb syncBuffer
	cmd.Stderr = &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })

	const calls = 64
	text := strings.Repeat("y", 12<<10) // answers of 12 KiB, within shape's budget
	bigText := strings.Repeat("b", 1<<20)
	sent := make(chan error, 1)
	go func() {
		var b strings.Builder
		b.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
		b.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
		b.WriteString(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"` + bigText + `"}}}` + "\n")
		for i := range calls {
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"%d:%s"}}}`+"\n", 10+i, i, text)
		}
		_, err := io.WriteString(inW, b.String())
		inW.Close() // the end of input, with calls in flight
		sent <- err
	}()
	// Read nothing for a while: serve's answers fill stdout and wait.
	time.Sleep(500 * time.Millisecond)
	got := map[int]string{}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.After(60 * time.Second) // hang guard
	for len(got) < calls+2 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stdout ended after %d answers:\n%s", len(got), errb.String())
			}
			var m struct {
				ID     int `json:"id"`
				Result struct {
					Content []struct{ Text string } `json:"content"`
				} `json:"result"`
				Error json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("a line that is not a whole JSON-RPC message (%d bytes): %v", len(l), err)
			}
			if _, dup := got[m.ID]; dup {
				t.Fatalf("id %d answered twice", m.ID)
			}
			if len(m.Error) > 0 {
				t.Fatalf("id %d answered with an error: %s", m.ID, m.Error)
			}
			s := ""
			if len(m.Result.Content) > 0 {
				s = m.Result.Content[0].Text
			}
			got[m.ID] = s
		case <-timeout:
			t.Fatalf("%d of %d answers:\n%s", len(got), calls+2, errb.String())
		}
	}
	if err := <-sent; err != nil {
		t.Fatalf("writing the requests: %v", err)
	}
	for i := range calls {
		if want := fmt.Sprintf("%d:%s", i, text); got[10+i] != want {
			t.Errorf("id %d: %d bytes back, want the %d sent", 10+i, len(got[10+i]), len(want))
		}
	}
	if got[2] == "" {
		t.Errorf("the 1 MiB call got an empty answer")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve exited with %v\n%s", err, errb.String())
	}
	for _, want := range []string{"reading stdin through the runtime's poller", "writing stdout through the runtime's poller"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("log without %q:\n%s", want, errb.String())
		}
	}
	for _, f := range []*os.File{inR, outW} {
		rc, err := f.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var flags uintptr
		var ferr syscall.Errno
		if err := rc.Control(func(fd uintptr) {
			flags, _, ferr = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		}); err != nil || ferr != 0 {
			t.Fatal(err, ferr)
		}
		if flags&syscall.O_NONBLOCK != 0 {
			t.Errorf("serve left %s non-blocking", f.Name())
		}
	}
	inR.Close()
	outW.Close()
	outR.Close()
	noneLeft(t, name)
}
