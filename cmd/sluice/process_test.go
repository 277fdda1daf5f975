package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pidsWithArg lists live processes whose command line contains arg.
func pidsWithArg(arg string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(arg)) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && bytes.HasPrefix(bytes.TrimSpace(st[i+1:]), []byte("Z")) {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// uniqueName is a fixture server name that marks its processes in /proc.
func uniqueName(t *testing.T) string {
	return fmt.Sprintf("clitest-%d-%d", os.Getpid(), time.Now().UnixNano())
}

func TestProcessExitCodesAndNothingLeftBehind(t *testing.T) {
	w := newWorld(t)
	name := uniqueName(t)
	w.writeUser("servers:\n" + fixture(t, "fx", "-name", name))
	w.writeProject("servers:\n" + fixture(t, "proj"))

	want(t, sluiceProc(t, "", "version"), exitOK, "sluice ")
	want(t, sluiceProc(t, "", "help", "call"), exitOK, "Exit status:")
	want(t, sluiceProc(t, "", "frobnicate"), exitUsage, `unknown command "frobnicate"`)

	r := sluiceProc(t, "", "call", "fx__echo", "text=via a process")
	want(t, r, exitOK)
	if r.stdout != "via a process\n" {
		t.Fatalf("stdout %q", r.stdout)
	}
	want(t, sluiceProc(t, "", "call", "fx__fail"), exitRefused, "--yes")
	want(t, sluiceProc(t, "", "call", "fx__fail", "--yes"), exitToolError)
	want(t, sluiceProc(t, "", "call", "fx__echo", "--args", "[]"), exitUsage)
	want(t, sluiceProc(t, "", "call", "proj__echo"), exitRefused, "sluice trust proj")
	if p := pidsWithArg(name); len(p) > 0 {
		t.Fatalf("fixture processes left after sluice exited: %v", p)
	}

	// stdin is /dev/null (a character device, not a terminal): trust
	// records without asking.
	cmd := exec.Command(sluiceBin, "trust", "proj")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("trust with stdin /dev/null: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "Recorded: proj is trusted") || strings.Contains(out.String(), "[y/N]") {
		t.Fatalf("trust with stdin /dev/null:\n%s", out.String())
	}
	want(t, sluiceProc(t, "", "call", "proj__echo", "text=now trusted"), exitOK, "now trusted")
}

// SIGINT during a call: sluice tears the server down before exiting.
func TestProcessInterruptTearsDown(t *testing.T) {
	w := newWorld(t)
	name := uniqueName(t)
	w.writeUser("servers:\n" + fixture(t, "fx", "-name", name) + "approve: [\"fx__slow\"]\n")
	cmd := exec.Command(sluiceBin, "call", "fx__slow", "ms=60000")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(pidsWithArg(name)) == 0 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the fixture never started:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // let the call reach the server
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		if code := cmd.ProcessState.ExitCode(); code != exitInterrupted || !strings.Contains(out.String(), "interrupted") {
			t.Fatalf("an interrupted call: exit %d, want %d:\n%s", code, exitInterrupted, out.String())
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("sluice did not exit after SIGINT:\n%s", out.String())
	}
	for deadline := time.Now().Add(10 * time.Second); len(pidsWithArg(name)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("fixture processes left after an interrupted call: %v\n%s", pidsWithArg(name), out.String())
		}
	}
}
