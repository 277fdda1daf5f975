package upstream

import (
	"errors"
	"fmt"
)

// ErrClosed is returned by a slot that was shut down.
var ErrClosed = errors.New("upstream: slot closed")

// WaitError: the caller gave up (its context ended) while the server was
// starting or backing off.
type WaitError struct {
	Server string
	Err    error // the context's error
}

func (e *WaitError) Error() string {
	return fmt.Sprintf("server %s: gave up waiting for it to start: %v", e.Server, e.Err)
}

func (e *WaitError) Unwrap() error { return e.Err }

// CrashLoopError: the server failed Failures times in a row and is not
// relaunched until ResetFailures.
type CrashLoopError struct {
	Server   string
	Failures int
	Last     error // the last launch or run error, if known
}

func (e *CrashLoopError) Error() string {
	msg := fmt.Sprintf("server %s failed %d times in a row and is not relaunched (crash loop)", e.Server, e.Failures)
	if e.Last != nil {
		msg += "; last error: " + e.Last.Error()
	}
	return msg
}

func (e *CrashLoopError) Unwrap() error { return e.Last }
