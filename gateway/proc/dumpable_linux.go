package proc

import "golang.org/x/sys/unix"

// SetNonDumpable makes the calling process non-dumpable: no core file is
// written when it crashes, and another process of the same user cannot
// ptrace it or read its memory through /proc/PID/mem (only a privileged
// one can). The gateway holds tokens and secrets in memory; this keeps
// them out of core files and out of reach of a same-user debugger. It
// applies to the whole process and lasts until exec (a child started
// afterwards is dumpable again).
func SetNonDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return &SysError{Op: "prctl(PR_SET_DUMPABLE, 0)", Err: err}
	}
	return nil
}
