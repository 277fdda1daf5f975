package threads

import "errors"

// ErrNoProcessCPU: the platform gives no process CPU time, so the load
// cannot be judged; the caller keeps a fixed thread count.
var ErrNoProcessCPU = errors.New("threads: no process CPU clock on this platform")
