//go:build !unix

package front

import "os"

// pollableStdin leaves standard input as it is: reading it through the
// poller is a Unix arrangement (stdin_unix.go).
func pollableStdin() (*os.File, func(), bool, error) { return nil, nil, false, nil }
