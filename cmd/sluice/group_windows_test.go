package main

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd in a new console process group. Windows has no
// group kill; a sluice under test puts every server it starts in a
// kill-on-close job object, so killing sluice ends its servers too.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// killGroup kills the process cmd started.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

var generateConsoleCtrlEvent = syscall.NewLazyDLL("kernel32.dll").NewProc("GenerateConsoleCtrlEvent")

// interrupt sends CTRL_BREAK to the process group cmd leads; Go delivers
// it to the process as os.Interrupt.
func interrupt(cmd *exec.Cmd) error {
	if r, _, err := generateConsoleCtrlEvent.Call(syscall.CTRL_BREAK_EVENT, uintptr(cmd.Process.Pid)); r == 0 {
		return err
	}
	return nil
}

// groupAlive reports whether the process cmd started still runs. Windows
// has no group to probe: the servers a sluice starts are in kill-on-close
// job objects, which the kernel closes when that sluice ends.
func groupAlive(cmd *exec.Cmd) bool {
	const stillActive = 259
	h, err := syscall.OpenProcess(syscall.PROCESS_QUERY_INFORMATION, false, uint32(cmd.Process.Pid))
	if err != nil {
		return false
	}
	defer syscall.CloseHandle(h)
	var code uint32
	return syscall.GetExitCodeProcess(h, &code) == nil && code == stillActive
}
