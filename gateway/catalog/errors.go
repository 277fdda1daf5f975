package catalog

import "errors"

// ErrMiss is returned by Load for every kind of unusable file; Reason on a
// *MissError says which, for diagnostics only.
var ErrMiss = errors.New("catalog: miss")

// MissError explains a miss. Callers branch on errors.Is(err, ErrMiss) and
// never on Reason.
type MissError struct {
	Path   string
	Reason string // absent, unreadable, oversized, malformed, version, identity, future, expired
}

func (e *MissError) Error() string {
	return "catalog " + e.Path + ": miss (" + e.Reason + ")"
}

func (e *MissError) Unwrap() error { return ErrMiss }

// ErrNoBaseline is returned by LoadBaseline when no baseline is recorded.
var ErrNoBaseline = errors.New("catalog: no tool baseline")

// BaselineError says why a baseline file cannot be used.
type BaselineError struct {
	Path   string
	Reason string // unreadable, oversized, malformed, version, identity, unwritable
}

func (e *BaselineError) Error() string {
	return "tool baseline " + e.Path + ": " + e.Reason
}
