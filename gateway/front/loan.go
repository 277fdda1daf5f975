package front

import (
	"bytes"
	"context"
	"encoding/json"
)

// Loan lets a backend lend a tool call's result rather than give it: the
// bytes Backend.Call returns may lie in a buffer the backend wants back
// for a later call (a filter's output). The backend finds the call's Loan
// with LoanOf on the context Call received and records there what gives
// the bytes back (Lend); the front calls that once, as soon as nothing it
// does reads the result any more: its answer is encoded (a copy), or the
// result was copied for whoever keeps it. A backend that lends nothing
// gives its result for good, as before.
//
// # Why a context value
//
// Every tool call of every transport reaches the backend through one
// place (invoke) and is answered from the result there, while the
// requests are built in several (the fast paths, each mode's handler): the
// loan travels with the call's context, in the call's own record (no
// allocation), so each of those places stays as it is.
type Loan struct {
	r interface{ Release() }
}

type loanKey struct{}

// LoanOf returns the loan of the tool call ctx was made for (the context
// Backend.Call received); nil when the front offers none.
func LoanOf(ctx context.Context) *Loan {
	l, _ := ctx.Value(loanKey{}).(*Loan)
	return l
}

// Lend records that the call's result is on loan: r.Release gives its bytes
// back, and the front calls it once, when it no longer reads them. Only
// the first Lend of a call counts (it reports whether it did); l may be
// nil (no loan offered: the result is the front's for good).
func (l *Loan) Lend(r interface{ Release() }) bool {
	if l == nil || l.r != nil || r == nil {
		return false
	}
	l.r = r
	return true
}

// giveBack gives the lent result back (once; a no-op when nothing was lent).
func (l *Loan) giveBack() {
	if r := l.r; r != nil {
		l.r = nil
		r.Release()
	}
}

// keep returns raw for keeping beyond the call: a copy when it is on loan
// (the loan is given back), raw itself otherwise.
func (l *Loan) keep(raw json.RawMessage) json.RawMessage {
	if l.r == nil {
		return raw
	}
	raw = bytes.Clone(raw)
	l.giveBack()
	return raw
}

// loanCtx is a call's context carrying its loan (see invoke).
type loanCtx struct {
	context.Context
	loan Loan
}

func (c *loanCtx) Value(key any) any {
	if key == (loanKey{}) {
		return &c.loan
	}
	return c.Context.Value(key)
}
