//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// ownGroup makes cmd the leader of a new process group, so killGroup
// ends it and everything it started.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the process group cmd leads (cmd must have been
// started after ownGroup).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// interrupt asks the process cmd started to stop (SIGTERM).
func interrupt(cmd *exec.Cmd) error {
	return cmd.Process.Signal(syscall.SIGTERM)
}

// groupAlive reports whether any process of the group cmd led is left.
func groupAlive(cmd *exec.Cmd) bool {
	return syscall.Kill(-cmd.Process.Pid, 0) == nil
}
