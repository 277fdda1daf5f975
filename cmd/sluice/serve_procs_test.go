//go:build linux

package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
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
	want(t, sluice(t, "", "serve", "--procs", "-2"), exitUsage, "--procs -2 is out of range: want auto or a whole number of threads from 1 to 256")
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
		{"GOMAXPROCS=2", []string{"--procs", "auto"}, `"msg":"threads adapt to the load","gomaxprocs":1`},
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
		flag          string
		stdio, envSet bool
		n             int
		adapt, ok     bool
	}{
		{"", true, false, 1, false, true},     // stdio, nothing said: one thread
		{"", true, true, 0, false, true},      // GOMAXPROCS set: left as the user set it
		{"", false, false, 0, true, true},     // --http: follow the load
		{"", false, true, 0, false, true},     // unless GOMAXPROCS is set
		{"2", true, true, 2, false, true},     // --procs wins over the environment
		{"4", false, false, 4, false, true},   //
		{"auto", true, true, 0, true, true},   // and so does --procs auto
		{"auto", false, false, 0, true, true}, //
		{"0", true, false, 0, false, false},
		{"-2", false, false, 0, false, false},
		{"two", true, false, 0, false, false},
	} {
		n, adapt, ok := procsFor(c.flag, c.stdio, c.envSet)
		if n != c.n || adapt != c.adapt || ok != c.ok {
			t.Errorf("procsFor(%q, stdio %v, env %v) = %d, %v, %v; want %d, %v, %v", c.flag, c.stdio, c.envSet, n, adapt, ok, c.n, c.adapt, c.ok)
		}
	}
}

// TestServeThreadsFollowLoad: by default (as with --procs auto) serve
// --http runs Go code on one thread while the load is light, raises it to
// the runtime's default once the process is busy, lowers it again once the
// load is gone (the debug log says each change) and counts the changes at
// exit, serving calls at either count.
//
// What the process's CPU time and run queue are on a shared machine is the
// machine's business (at a load of 20 on two cores no process gets the 0.2
// of a core the policy asks before it raises), so the monitor's samples
// come from the test (the binary's sluicetest hook,
// SLUICE_TESTHOOK_THREADS_SAMPLES): what the monitor does with them in a
// real serve is exact. That the process's own readings see its load is
// gateway/internal/threads' TestRuntimeSamplerSeesTheQueue, the decision
// its TestPolicy tests.
func TestServeThreadsFollowLoad(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: the runtime's default is one thread, so there is nothing to raise")
	}
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	want(t, sluiceProc(t, "", "find", "--server", "fx", "--refresh"), 0, "fx__echo")
	samples := filepath.Join(t.TempDir(), "samples")
	writeFile(t, samples, "")
	feed := func(line string, n int) {
		t.Helper()
		f, err := os.OpenFile(samples, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(strings.Repeat(line+"\n", n)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(sluiceBin, "serve", "--http", "127.0.0.1:0", "--mode", "flat", "--log-level", "debug")
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GOMAXPROCS=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, "SLUICE_TESTHOOK_THREADS_SAMPLES="+samples)
	var log syncBuffer
	cmd.Stderr = &log
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killGroup(cmd) })
	waitLog := func(re *regexp.Regexp, what string) []string {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second) // hang guard only
		for {
			if m := re.FindStringSubmatch(log.String()); m != nil {
				return m
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s in the log:\n%s", what, log.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	addr := waitLog(regexp.MustCompile(`"msg":"serving MCP over HTTP".*"addr":"([^"]+)"`), "address")[1]
	waitLog(regexp.MustCompile(`"msg":"threads adapt to the load","gomaxprocs":1`), "start at one thread")

	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	call := func(i int) error {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"n%d"},`+
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, i, i)
		req, err := http.NewRequest("POST", "http://"+addr+"/mcp", strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "fx__echo")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), fmt.Sprintf(`"text":"n%d"`, i)) {
			return fmt.Errorf("call %d: %d %.300s", i, resp.StatusCode, b)
		}
		return nil
	}
	calls := func(from, inFlight int) {
		t.Helper()
		errc := make(chan error, inFlight)
		var wg sync.WaitGroup
		for g := range inFlight {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 20 {
					if err := call(from + 1000*g + i); err != nil {
						errc <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Error(err)
		}
	}
	calls(0, 1)

	// Light load: one agent's calls (a third of a core, goroutines
	// rarely waiting), then a process starved by a busy machine (a queue,
	// but a tenth of a core): neither raises. Then busy: most of a core,
	// three samples in a row. The raise comes with a busy sample: the log
	// line carries the sample's cores, so a raise by the light ones would
	// show theirs.
	feed("0.35 0.2", 40)
	feed("0.1 3", 10)
	feed("0.9 0.5", 3)
	m := waitLog(regexp.MustCompile(`"msg":"threads raised","gomaxprocs":(\d+),"changes":(\d+),"cpu_cores":([0-9.]+)`), "raise for a busy process")
	if m[2] != "1" || m[3] != "0.9" {
		t.Fatalf("raised at change %s on a sample of %s cores; want the first change, on the busy samples (0.9):\n%s", m[2], m[3], grepLines(log.String(), "threads"))
	}
	if n, _ := strconv.Atoi(m[1]); n < 2 {
		t.Errorf("raised to %s threads", m[1])
	}
	calls(100000, 16)
	// Less load: 0.7 of a core is not light at the high count (under
	// 0.6), so the count stays; then thirty idle samples in a row (the
	// cold wait) lower it, and the log line carries an idle sample's
	// cores.
	feed("0.7 0", 40)
	feed("0.05 0", 30)
	m = waitLog(regexp.MustCompile(`"msg":"threads lowered","gomaxprocs":1,"changes":(\d+),"cpu_cores":([0-9.]+)`), "lowering once idle")
	if m[1] != "2" || m[2] != "0.05" {
		t.Fatalf("lowered at change %s on a sample of %s cores; want the second change, on the idle samples (0.05):\n%s", m[1], m[2], grepLines(log.String(), "threads"))
	}
	calls(200000, 1)
	_ = interrupt(cmd)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve after its interrupt: %v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), `"msg":"threads adapted","changes":2`) {
		t.Errorf("want two changes counted at exit:\n%s", grepLines(log.String(), "threads"))
	}
}
