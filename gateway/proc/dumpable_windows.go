package proc

// SetNonDumpable does nothing on Windows and returns nil. Windows writes
// no core file by itself (crash dumps are an opt-in system setting), and
// which processes may read the gateway's memory is decided by the access
// check on its process object: other users' unprivileged processes cannot
// open it; the same user's can, and nothing the process may do to itself
// at run time changes that.
func SetNonDumpable() error { return nil }
