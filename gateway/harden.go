package gateway

import "sluice/gateway/proc"

// SetNonDumpable makes the calling process non-dumpable where the platform
// has the notion (Linux: prctl(PR_SET_DUMPABLE, 0)). Servers run as the
// same user as the gateway; without this any of them could read the
// gateway's environment — tokens and the values behind ${env:NAME} —
// through /proc/<ppid>/environ, or its memory through /proc/<ppid>/mem.
// Servers themselves are unaffected: exec resets the flag.
//
// The command calls it once at start, before any server can run; it is
// not done by Open so that a program embedding the gateway (a test binary)
// keeps its own choice.
func SetNonDumpable() error { return proc.SetNonDumpable() }
