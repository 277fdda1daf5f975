package proc

import "syscall"

// signalName names the pseudo-signals this package reports on Windows
// (SIGKILL for a job it terminated).
func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}
