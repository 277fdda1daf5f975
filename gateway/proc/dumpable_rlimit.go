//go:build darwin || freebsd || openbsd || netbsd || dragonfly || solaris || aix

package proc

import "golang.org/x/sys/unix"

// SetNonDumpable sets the core-file size limit of the calling process to
// zero, soft and hard, so a crash writes no core file holding its secrets.
// macOS (and the BSDs, Solaris, illumos and AIX, which build but launch nothing: see
// proc_unsupported.go) has no per-process "dumpable" switch: whether another process of
// the same user may attach a debugger is decided by code signing (the
// hardened runtime), not at run time, so that part is not covered here.
func SetNonDumpable() error {
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 0, Max: 0}); err != nil {
		return &SysError{Op: "setrlimit(RLIMIT_CORE, 0)", Err: err}
	}
	return nil
}
