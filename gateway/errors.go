package gateway

import (
	"errors"
)

// Kind classifies a gateway error. Surfaces map kinds to exit codes and
// to tool errors; callers branch on Kind, never on text.
type Kind string

const (
	KindBadInput  Kind = "bad-input"  // malformed capability, arguments or flags
	KindUnknown   Kind = "unknown"    // no such server or tool
	KindUntrusted Kind = "untrusted"  // a project server without a valid trust record
	KindRefused   Kind = "refused"    // admission said no: approval needed
	KindMissing   Kind = "missing"    // no recorded catalog and no live listing
	KindHidden    Kind = "hidden"     // the operator's configuration hides it: a tool subset, enabled: false, a profile
	KindUpstream  Kind = "upstream"   // the server failed: spawn, handshake, crash, timeout, protocol
	KindCrashLoop Kind = "crash-loop" // the server failed too often; not relaunched
	KindFilter    Kind = "filter"     // a fail-closed filter failed
	KindGateway   Kind = "gateway"    // sluice itself failed (files, configuration)
	KindHeld      Kind = "held"       // the tool changed since its definition was reviewed
)

// ErrClosed is returned by operations on a closed gateway.
var ErrClosed = errors.New("gateway: closed")

// ErrReviewChanged: a tool review was confirmed for a baseline or a listing
// that is no longer the server's (AcceptReview); nothing was accepted.
var ErrReviewChanged = errors.New("the tools changed since the review was shown")

// Error is the gateway's typed error. Message is written to be shown to a
// person or a model: it names what failed and, in Remedy, the exact way to
// fix it. It never carries env values or stack traces.
type Error struct {
	Kind       Kind
	Server     string
	Capability string
	Message    string
	Remedy     Remedy // the exact command or edit, when there is one; each surface renders it
	// Stderr is the bounded tail of the server's stderr, for people only:
	// it is never part of Error() and never reaches a model.
	Stderr string
	Err    error
}

func (e *Error) Error() string {
	s := e.Message
	if !e.Remedy.IsZero() {
		s += "; " + e.Remedy.String()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the Kind of err, or "" when it is not a gateway error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}
