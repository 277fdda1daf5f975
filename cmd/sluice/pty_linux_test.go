//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// A pseudo-terminal for tests of what sluice does at a terminal: the
// binary's stdout or stderr is the pty's terminal side, so isTerminal is
// answered by the kernel, not by a test hook.

const (
	ioctlTIOCGPTN   = 0x80045430
	ioctlTIOCSPTLCK = 0x40045431
	ioctlTIOCSWINSZ = 0x5414
)

// openPTY returns the controlling side and the terminal side of a new pty.
func openPTY(t *testing.T) (ctl, term *os.File) {
	t.Helper()
	ctl, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening /dev/ptmx: %v", err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ctl.Fd(), ioctlTIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlocking the pty: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ctl.Fd(), ioctlTIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("naming the pty: %v", e)
	}
	ws := [4]uint16{24, 120, 0, 0}
	_, _, _ = syscall.Syscall(syscall.SYS_IOCTL, ctl.Fd(), ioctlTIOCSWINSZ, uintptr(unsafe.Pointer(&ws)))
	term, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		ctl.Close()
		t.Fatalf("opening the pty's terminal: %v", err)
	}
	return ctl, term
}

// ptyResult is a run with some streams on a terminal: tty is what the
// terminal showed (with the terminal's \r\n turned back into \n).
type ptyResult struct {
	code           int
	stdout, stderr string // the streams that were pipes
	tty            string
}

func (r ptyResult) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s--- stderr:\n%s--- terminal:\n%q", r.code, r.stdout, r.stderr, r.tty)
}

// sluiceTTY runs the binary with stdout and/or stderr on a pty (the other
// streams are pipes; stdin is /dev/null) and extra environment.
func sluiceTTY(t *testing.T, outTTY, errTTY bool, env []string, args ...string) ptyResult {
	t.Helper()
	ctl, term := openPTY(t)
	defer ctl.Close()
	cmd := exec.Command(sluiceBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if outTTY {
		cmd.Stdout = term
	}
	if errTTY {
		cmd.Stderr = term
	}
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		term.Close()
		t.Fatal(err)
	}
	term.Close() // the child holds it now: reading ends when it exits
	read := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 4096)
		for {
			n, err := ctl.Read(buf)
			b.Write(buf[:n])
			if err != nil { // EIO once no process holds the terminal
				break
			}
		}
		read <- b.String()
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-time.After(3 * time.Minute):
		killGroup(cmd)
		t.Fatalf("sluice %v did not finish", args)
	}
	var tty string
	select {
	case tty = <-read:
	case <-time.After(time.Minute):
		t.Fatalf("the terminal of sluice %v was not closed", args)
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return ptyResult{code: code, stdout: out.String(), stderr: errb.String(), tty: strings.ReplaceAll(tty, "\r\n", "\n")}
}
