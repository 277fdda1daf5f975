package mcptest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func init() { RunIfReexec() }

// proc is the fixture as a real process in its own process group.
type fixtureProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *syncBuf
	waited chan error
}

func startProc(t *testing.T, args ...string) *fixtureProc {
	t.Helper()
	exe, argv, err := Command(args...)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, argv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &fixtureProc{t: t, cmd: cmd, stderr: &syncBuf{}, waited: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdout = bufio.NewReader(out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	// Process.Wait, not cmd.Wait: a grandchild holding stdout or stderr
	// must not delay noticing that the leader exited.
	go func() {
		st, err := cmd.Process.Wait()
		if err == nil && !st.Success() {
			err = &exec.ExitError{ProcessState: st}
		}
		p.waited <- err
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		waitGroupGone(t, pgid)
	})
	return p
}

func (p *fixtureProc) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatalf("writing to the fixture: %v", err)
	}
}

func (p *fixtureProc) recvLine() string {
	p.t.Helper()
	c := make(chan string, 1)
	go func() {
		l, _ := p.stdout.ReadString('\n')
		c <- l
	}()
	select {
	case l := <-c:
		return l
	case <-time.After(hangGuard):
		p.t.Fatalf("no line from the fixture; stderr %q", p.stderr.String())
	}
	return ""
}

func (p *fixtureProc) wait() error {
	p.t.Helper()
	select {
	case err := <-p.waited:
		return err
	case <-time.After(hangGuard):
		p.t.Fatalf("the fixture did not exit; stderr %q", p.stderr.String())
	}
	return nil
}

// groupAlive reports whether a live (not zombie) process of the group
// exists. Zombies are skipped: an orphaned grandchild is reaped by pid 1,
// which may take its time, but a zombie runs nothing and holds nothing.
func groupAlive(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return syscall.Kill(-pgid, 0) == nil
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may contain spaces and ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, err := strconv.Atoi(f[2]); err == nil && g == pgid && pid > 0 {
			return true
		}
	}
	return false
}

func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for groupAlive(pgid) {
		if time.Now().After(deadline) {
			t.Errorf("process group %d still alive", pgid)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ignoresSIGTERM reads the ignored-signal mask of pid from /proc.
func ignoresSIGTERM(t *testing.T, pid int) bool {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading status of %d: %v", pid, err)
	}
	m := regexp.MustCompile(`(?m)^SigIgn:\s*([0-9a-f]+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no SigIgn in /proc/%d/status", pid)
	}
	mask, err := strconv.ParseUint(string(m[1]), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return mask&(1<<(uint(syscall.SIGTERM)-1)) != 0
}

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func TestProcessExitsOnEOF(t *testing.T) {
	p := startProc(t, "-mode", "paginated", "-tools", "3")
	p.send(initLine)
	if l := p.recvLine(); !strings.Contains(l, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize = %q", l)
	}
	p.stdin.Close()
	if err := p.wait(); err != nil {
		t.Fatalf("exit after EOF = %v", err)
	}
}

func TestProcessCrash(t *testing.T) {
	p := startProc(t, "-mode", "crash")
	p.send(initLine)
	p.recvLine()
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
	var ee *exec.ExitError
	if err := p.wait(); !errors.As(err, &ee) || ee.ExitCode() != ExitCrash {
		t.Fatalf("exit = %v, want status %d", err, ExitCrash)
	}
	if l := p.recvLine(); !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":2,`) || strings.HasSuffix(l, "\n") {
		t.Fatalf("torn frame = %q", l)
	}
}

func TestProcessExitAtStart(t *testing.T) {
	p := startProc(t, "-mode", "exit-at-start")
	var ee *exec.ExitError
	if err := p.wait(); !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit = %v, stderr %q", err, p.stderr.String())
	}
	// The leader's exit is seen by Process.Wait, which does not wait for
	// exec's goroutine copying stderr: the text may arrive a moment later.
	for deadline := time.Now().Add(hangGuard); !strings.Contains(p.stderr.String(), "fatal"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("stderr %q, want the fatal message", p.stderr.String())
		}
	}
}

func TestProcessBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-mode", "bogus"}, {"-nope"}, {"extra"}} {
		p := startProc(t, args...)
		var ee *exec.ExitError
		if err := p.wait(); !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("%v: exit = %v", args, err)
		}
	}
}

func TestProcessIgnoresSIGTERM(t *testing.T) {
	p := startProc(t, "-mode", "ignore-sigterm")
	p.send(initLine)
	p.recvLine() // the handshake proves the signal setup is done
	pid := p.cmd.Process.Pid
	if !ignoresSIGTERM(t, pid) {
		t.Fatal("the fixture does not ignore SIGTERM")
	}
	// It also outlives stdin EOF and SIGTERM: a ping after both is answered.
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if l := p.recvLine(); !strings.Contains(l, `"id":2`) {
		t.Fatalf("ping after SIGTERM = %q", l)
	}
	p.stdin.Close()
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	if err := p.wait(); err == nil {
		t.Fatal("SIGKILL reported as a clean exit")
	}
}

var grandchildRE = regexp.MustCompile(`spawned grandchild pid (\d+)`)

func TestProcessGrandchild(t *testing.T) {
	for _, how := range []string{"mode", "tool"} {
		t.Run(how, func(t *testing.T) {
			var p *fixtureProc
			var gpid int
			if how == "mode" {
				p = startProc(t, "-mode", "grandchild")
				p.send(initLine)
				p.recvLine() // the grandchild is spawned before serving
				// stderr is copied by another goroutine: wait for the line.
				var m []string
				deadline := time.Now().Add(hangGuard)
				for m = grandchildRE.FindStringSubmatch(p.stderr.String()); m == nil; m = grandchildRE.FindStringSubmatch(p.stderr.String()) {
					if time.Now().After(deadline) {
						t.Fatalf("stderr = %q", p.stderr.String())
					}
					time.Sleep(5 * time.Millisecond)
				}
				gpid, _ = strconv.Atoi(m[1])
			} else {
				p = startProc(t)
				p.send(initLine)
				p.recvLine()
				p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"grandchild"}}`)
				l := p.recvLine()
				m := regexp.MustCompile(`"pid":(\d+)`).FindStringSubmatch(l)
				if m == nil {
					t.Fatalf("grandchild tool = %q", l)
				}
				gpid, _ = strconv.Atoi(m[1])
			}
			pgid := p.cmd.Process.Pid
			if g, err := syscall.Getpgid(gpid); err != nil || g != pgid {
				t.Fatalf("grandchild %d in group %d (%v), want %d", gpid, g, err, pgid)
			}
			// The sleeper sets its signal mask right after it starts; wait for
			// its line on stderr before reading the mask.
			deadline := time.Now().Add(hangGuard)
			for !strings.Contains(p.stderr.String(), fmt.Sprintf("grandchild pid %d sleeping", gpid)) {
				if time.Now().After(deadline) {
					t.Fatalf("stderr = %q", p.stderr.String())
				}
				time.Sleep(5 * time.Millisecond)
			}
			if !ignoresSIGTERM(t, gpid) {
				t.Fatal("the grandchild does not ignore SIGTERM")
			}
			// The leader exits on EOF; the grandchild stays in the group.
			p.stdin.Close()
			if err := p.wait(); err != nil {
				t.Fatalf("leader exit = %v", err)
			}
			if !groupAlive(pgid) {
				t.Fatal("the grandchild did not outlive the leader")
			}
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			waitGroupGone(t, pgid)
		})
	}
}
