//go:build !unix || solaris || aix

package gateway

import "os"

// loginLocks: no lock here; the file is closed once written.
const loginLocks = false

// holdFile: these systems get no lock here (no flock in their syscall
// package); a login file is removed when its process ends normally only.
func holdFile(*os.File) error { return nil }

// heldElsewhere cannot tell, so no file is swept.
func heldElsewhere(string) (held, known bool) { return false, false }
