//go:build linux

package main

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeProcs: serve on stdio runs Go code on one thread unless the
// user says otherwise (GOMAXPROCS in the environment, or --procs, which
// wins), --http keeps the runtime's default, and a bad --procs is refused.
// Stdin, a pipe, is read through the poller and handed back blocking.
func TestServeProcs(t *testing.T) {
	w := newWorld(t)
	name := uniqueName(t)
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx", "-name", name))
	want(t, sluice(t, "", "serve", "--procs", "-2"), exitUsage, "--procs must be a positive number")
	want(t, sluice(t, "", "help", "serve"), exitOK, "--procs N")

	for _, c := range []struct {
		env  string
		args []string
		want string
	}{
		{"", nil, `"gomaxprocs":1`},
		{"GOMAXPROCS=2", nil, `"gomaxprocs":2`},
		{"GOMAXPROCS=2", []string{"--procs", "1"}, `"gomaxprocs":1`},
		{"", []string{"--procs", "3"}, `"gomaxprocs":3`},
	} {
		r, wr, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(sluiceBin, append([]string{"serve", "--mode", "flat", "--log-level", "debug"}, c.args...)...)
		cmd.Env = os.Environ()
		for i, e := range cmd.Env {
			if strings.HasPrefix(e, "GOMAXPROCS=") {
				cmd.Env[i] = "SLUICE_TEST_UNSET=1"
			}
		}
		if c.env != "" {
			cmd.Env = append(cmd.Env, c.env)
		}
		cmd.Stdin = r
		var out, errb syncBuffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pgid := cmd.Process.Pid
		t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		io.WriteString(wr, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"+
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"threads"}}}`+"\n")
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(out.String(), `"id":2`) {
			if time.Now().After(deadline) {
				t.Fatalf("%v %v: no answer:\nstdout:\n%s\nstderr:\n%s", c.env, c.args, out.String(), errb.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		wr.Close()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%v %v: serve exited with %v\n%s", c.env, c.args, err, errb.String())
		}
		if !strings.Contains(out.String(), `"text":"threads"`) {
			t.Errorf("%v %v: echo result missing:\n%s", c.env, c.args, out.String())
		}
		if !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v %v: want %s in the log:\n%s", c.env, c.args, c.want, errb.String())
		}
		if !strings.Contains(errb.String(), "reading stdin through the runtime's poller") {
			t.Errorf("%v %v: stdin, a pipe, was not read through the poller:\n%s", c.env, c.args, errb.String())
		}
		// The read end's description is shared with serve's stdin: serve
		// must have left it blocking, as it found it.
		rc, err := r.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var flags int
		var ferr error
		if err := rc.Control(func(fd uintptr) {
			f, _, e := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
			flags = int(f)
			if e != 0 {
				ferr = e
			}
		}); err != nil || ferr != nil {
			t.Fatal(err, ferr)
		}
		if flags&syscall.O_NONBLOCK != 0 {
			t.Errorf("%v %v: serve left its stdin non-blocking", c.env, c.args)
		}
		r.Close()
	}
	noneLeft(t, name)
}

// TestProcsFor: the decision behind --procs, --http included (an HTTP
// serve does not end on its own, so the table is checked here).
func TestProcsFor(t *testing.T) {
	for _, c := range []struct {
		n             int
		stdio, envSet bool
		want          int
	}{
		{0, true, false, 1},  // stdio, nothing said: one thread
		{0, true, true, 0},   // GOMAXPROCS set: left as the user set it
		{2, true, true, 2},   // --procs wins over the environment
		{0, false, false, 0}, // --http: the runtime's default
		{4, false, false, 4},
	} {
		if got := procsFor(c.n, c.stdio, c.envSet); got != c.want {
			t.Errorf("procsFor(%d, stdio %v, env %v) = %d, want %d", c.n, c.stdio, c.envSet, got, c.want)
		}
	}
}
