package admin

import (
	"errors"
	"fmt"
)

// Sentinels for the branch points of callers.
var (
	// ErrNoBackend: Options.Backend is nil.
	ErrNoBackend = errors.New("admin: no backend")
	// ErrTrustChanged: the declaration changed between the trust page
	// and its confirmation.
	ErrTrustChanged = errors.New("the declaration changed since you viewed it; review again")
	// ErrReviewChanged: the tools (or their baseline) changed between
	// the review page and its acceptance.
	ErrReviewChanged = errors.New("the tools changed since you viewed this review, so nothing was accepted; look at the review as it is now")
	// ErrRemoteNeedsToken: Options.Remote without a Token.
	ErrRemoteNeedsToken = errors.New("a dashboard open to other machines needs a token: it can run tools and trust servers; give one with --token-file FILE or SLUICE_TOKEN")
	// ErrApprovalTimeout: nobody decided a pending approval in time.
	ErrApprovalTimeout = errors.New("no decision in time")
	// ErrApprovalClosed: the approvals queue closed (the process is
	// shutting down) while a request waited.
	ErrApprovalClosed = errors.New("the approvals queue closed")
	// ErrUnknownApproval: no pending approval has that id (decided
	// already, timed out, or never existed).
	ErrUnknownApproval = errors.New("no pending approval with that id")
	// ErrTooManyPending: the queue is full; the request is refused at once.
	ErrTooManyPending = errors.New("too many approvals are pending")
)

// FormError is a call form whose fields do not make one JSON object of
// arguments: which field, and why.
type FormError struct {
	Field  string
	Reason string
}

func (e *FormError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return fmt.Sprintf("argument %q: %s", e.Field, e.Reason)
}
