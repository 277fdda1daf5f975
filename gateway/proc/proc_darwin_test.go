package proc

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	return err == nil && int(kp.Proc.P_pid) == pid && kp.Proc.P_stat != szomb
}

// describePid says what the kernel shows of pid, for logs.
func describePid(pid int) string {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("stat %d, pgrp %d, reparented to pid %d", kp.Proc.P_stat, kp.Eproc.Pgid, kp.Eproc.Ppid)
}

// describeGroup lists the processes of a group, for failure messages.
func describeGroup(pgid int) string {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.pgrp", pgid)
	if err != nil {
		return err.Error()
	}
	s := "members:"
	for _, kp := range procs {
		s += fmt.Sprintf(" %d(stat %d,ppid %d)", kp.Proc.P_pid, kp.Proc.P_stat, kp.Eproc.Ppid)
	}
	return s
}

// inGroup reports whether pid is a member of p's process group.
func inGroup(p *Process, pid int) bool {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	return err == nil && int(kp.Eproc.Pgid) == p.Pid()
}

// leaderHandles names the kernel handles on the leader still open.
func leaderHandles(p *Process) string {
	lw := p.g.(*unixGroup).lw
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.kq != -1 {
		return fmt.Sprintf("kqueue %d", lw.kq)
	}
	return ""
}

// fdCount counts this process's open descriptors.
func fdCount(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/dev/fd")
	if err != nil {
		t.Fatalf("reading /dev/fd: %v", err)
	}
	return len(ents)
}
