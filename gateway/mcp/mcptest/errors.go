package mcptest

import (
	"errors"
	"fmt"
)

// ErrCrashed is returned by Serve when a crash was requested (mode "crash" or
// the "crash" tool). A torn frame has been written to out; a process must
// exit at once with a non-zero status (Main uses ExitCrash).
var ErrCrashed = errors.New("mcptest: crashed on purpose")

// ErrStopped is returned by Serve when it stopped because ctx was done.
var ErrStopped = errors.New("mcptest: stopped")

// ModeError reports an unknown mode name given to ParseModes.
type ModeError struct {
	Name string
}

func (e *ModeError) Error() string {
	return fmt.Sprintf("mcptest: unknown mode %q (known: %s)", e.Name, knownModes())
}
