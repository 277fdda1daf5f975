package admin

// This file is the approvals queue (calls and scripts waiting for a person
// at the dashboard) and the audit log of every approval decision.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// Approval bounds.
const (
	// DefaultApprovalTimeout is how long a request waits for a decision.
	DefaultApprovalTimeout = 2 * time.Minute
	maxPending             = 64
	maxAuditMemory         = 200     // decisions kept for the Activity page
	maxAuditFileBytes      = 4 << 20 // the log rotates to <file>.1 beyond this
	// MaxShown is how much of a call's arguments or a script an approval
	// card shows; beyond it the card says how much is not shown, and
	// approving needs an explicit extra confirmation.
	MaxShown = 256 << 10
	// ConfirmUnseenField is the form field (value "yes") that approves
	// a request with bytes not shown.
	ConfirmUnseenField = "confirm-unseen"
)

// ApprovalRequest is one call, or one script's whole set of calls, that
// needs a person's approval.
type ApprovalRequest struct {
	Kind         string   `json:"kind"`         // call or script
	Capabilities []string `json:"capabilities"` // one for a call; the script's set
	Class        string   `json:"class,omitempty"`
	Reason       string   `json:"reason,omitempty"`
	Arguments    string   `json:"arguments,omitempty"` // a call's, as JSON (up to MaxShown)
	Script       string   `json:"script,omitempty"`    // a script's source (up to MaxShown)
	Digest       string   `json:"digest,omitempty"`    // sha256 of the script the approval is bound to
	RequestID    string   `json:"requestId,omitempty"`
	// ArgumentsSHA256 is the sha256 of the whole arguments (set by Ask).
	ArgumentsSHA256 string `json:"argumentsSha256,omitempty"`
	// Bytes is the size of the whole arguments or script; Hidden is how
	// many of them the card does not show (set by Ask).
	Bytes  int `json:"bytes,omitempty"`
	Hidden int `json:"hidden,omitempty"`
}

// Pending is a request waiting for a decision.
type Pending struct {
	ID       string          `json:"id"`
	Request  ApprovalRequest `json:"request"`
	Asked    time.Time       `json:"asked"`
	Deadline time.Time       `json:"deadline"`
}

// Decision is one audit-log line.
type Decision struct {
	Time         time.Time `json:"time"`
	Kind         string    `json:"kind"`
	Capabilities []string  `json:"capabilities"`
	Digest       string    `json:"digest,omitempty"`
	// ArgumentsSHA256 is the sha256 of the call's whole arguments.
	ArgumentsSHA256 string `json:"argumentsSha256,omitempty"`
	RequestID       string `json:"requestId,omitempty"`
	// Via is who decided: dashboard, elicitation, form (the dashboard's
	// own call form), timeout, cancelled, cli (a command such as sluice
	// trust, untrust or review --accept).
	Via string `json:"via"`
	// ProjectRoot and Class, for trust decisions: the project the record
	// is for and the action class recorded.
	ProjectRoot string `json:"projectRoot,omitempty"`
	Class       string `json:"class,omitempty"`
	Approved    bool   `json:"approved"`
	Waited      string `json:"waited,omitempty"`
	// A long capability list is kept to its first maxAuditCaps; More
	// counts the rest and CapabilitiesSHA256 hashes the whole list
	// (names joined by newlines).
	More               int    `json:"more,omitempty"`
	CapabilitiesSHA256 string `json:"capabilitiesSha256,omitempty"`
}

// Audit line bounds.
const (
	maxAuditCaps    = 32
	maxAuditCapName = 256
	maxAuditRoot    = 4096
)

// boundDecision keeps one audit line bounded in size.
func boundDecision(d Decision) Decision {
	for _, s := range []*string{&d.Kind, &d.RequestID, &d.Via, &d.Waited, &d.Digest, &d.ArgumentsSHA256, &d.Class} {
		*s, _ = clip(*s, maxAuditCapName)
	}
	d.ProjectRoot, _ = clip(d.ProjectRoot, maxAuditRoot)
	long := len(d.Capabilities) > maxAuditCaps
	for _, c := range d.Capabilities {
		long = long || len(c) > maxAuditCapName
	}
	if !long {
		return d
	}
	var all []byte
	for _, c := range d.Capabilities {
		all = append(append(all, c...), '\n')
	}
	sum := sha256.Sum256(all)
	d.CapabilitiesSHA256 = hex.EncodeToString(sum[:])
	caps := d.Capabilities
	if len(caps) > maxAuditCaps {
		d.More = len(caps) - maxAuditCaps
		caps = caps[:maxAuditCaps]
	}
	d.Capabilities = make([]string, len(caps))
	for i, c := range caps {
		d.Capabilities[i], _ = clip(c, maxAuditCapName)
	}
	return d
}

// ApprovalOptions configures NewApprovals.
type ApprovalOptions struct {
	Timeout   time.Duration // 0 = DefaultApprovalTimeout
	AuditFile string        // "" = no file (decisions are still kept in memory)
	// AuditLock serialises the audit file's writers across processes (see
	// AuditLog.Lock); nil serialises this process's only.
	AuditLock func(path string) (unlock func(), err error)
	Now       func() time.Time
}

// Approvals is the queue. It is safe for concurrent use.
type Approvals struct {
	o       ApprovalOptions
	mu      sync.Mutex
	pending map[string]*waiter
	recent  []Decision
	url     string
	closed  bool
	quit    chan struct{} // closed by Close
	fileMu  sync.Mutex
	// afterDecide, in tests, runs once Decide released the lock.
	afterDecide func()
}

type waiter struct {
	p    Pending
	done chan bool
}

// NewApprovals opens the queue; the audit file (if any) is created 0600
// and must not be a symlink.
func NewApprovals(o ApprovalOptions) (*Approvals, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultApprovalTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	a := &Approvals{o: o, pending: map[string]*waiter{}, quit: make(chan struct{})}
	if o.AuditFile != "" {
		if err := os.MkdirAll(filepath.Dir(o.AuditFile), 0o700); err != nil {
			return nil, fmt.Errorf("audit log %s: %w", o.AuditFile, err)
		}
		f, err := openAudit(o.AuditFile)
		if err != nil {
			return nil, err
		}
		f.Close()
	}
	return a, nil
}

func openAudit(path string) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("audit log %s is not a regular file (symlinks are refused)", path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	return f, nil
}

// Timeout is how long Ask waits.
func (a *Approvals) Timeout() time.Duration { return a.o.Timeout }

// SetURL records where the dashboard is served, for the text a waiting
// caller's error carries.
func (a *Approvals) SetURL(u string) {
	a.mu.Lock()
	a.url = u
	a.mu.Unlock()
}

// URL is the Activity page's address ("" before the dashboard listens).
func (a *Approvals) URL() string {
	if a == nil {
		return ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.url == "" {
		return ""
	}
	return a.url + "/admin/activity"
}

// Ask queues r and waits for a decision, ctx, or the timeout. A timeout
// returns ErrApprovalTimeout; every outcome is audited.
func (a *Approvals) Ask(ctx context.Context, r ApprovalRequest) (bool, error) {
	if r.Arguments != "" {
		sum := sha256.Sum256([]byte(r.Arguments))
		r.ArgumentsSHA256 = hex.EncodeToString(sum[:])
	}
	r.Bytes = len(r.Arguments) + len(r.Script)
	var hidA, hidS int
	r.Arguments, hidA = clip(r.Arguments, MaxShown)
	r.Script, hidS = clip(r.Script, MaxShown)
	r.Hidden = hidA + hidS
	var idb [8]byte
	_, _ = rand.Read(idb[:])
	now := a.o.Now()
	w := &waiter{p: Pending{ID: hex.EncodeToString(idb[:]), Request: r, Asked: now, Deadline: now.Add(a.o.Timeout)}, done: make(chan bool, 1)}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return false, ErrApprovalClosed
	}
	if len(a.pending) >= maxPending {
		a.mu.Unlock()
		return false, ErrTooManyPending
	}
	a.pending[w.p.ID] = w
	a.mu.Unlock()
	t := time.NewTimer(a.o.Timeout)
	defer t.Stop()
	var (
		yes bool
		err error
		via string
	)
	select {
	case yes = <-w.done:
		via = "dashboard"
	case <-t.C:
		err, via = ErrApprovalTimeout, "timeout"
	case <-ctx.Done():
		err, via = ctx.Err(), "cancelled"
	case <-a.quit:
		err, via = ErrApprovalClosed, "closed"
	}
	a.mu.Lock()
	_, still := a.pending[w.p.ID]
	delete(a.pending, w.p.ID)
	a.mu.Unlock()
	if err != nil && !still {
		// Decided at the last moment: the decision stands.
		select {
		case yes = <-w.done:
			err, via = nil, "dashboard"
		default:
		}
	}
	if via != "dashboard" {
		// A dashboard decision is audited by Decide, with who decided.
		a.Audit(Decision{Kind: r.Kind, Capabilities: r.Capabilities, Digest: r.Digest, ArgumentsSHA256: r.ArgumentsSHA256, RequestID: r.RequestID, Via: via, Approved: false, Waited: a.o.Now().Sub(now).Round(time.Millisecond).String()})
	}
	return yes && err == nil, err
}

// Pending lists the requests waiting, oldest first.
func (a *Approvals) Pending() []Pending {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Pending, 0, len(a.pending))
	for _, w := range a.pending {
		out = append(out, w.p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Asked.Before(out[j].Asked) })
	return out
}

// Get is the pending request id.
func (a *Approvals) Get(id string) (Pending, bool) {
	if a == nil {
		return Pending{}, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	w, ok := a.pending[id]
	if !ok {
		return Pending{}, false
	}
	return w.p, true
}

// Decide answers the pending request id.
func (a *Approvals) Decide(id string, approve bool) error {
	a.mu.Lock()
	w, ok := a.pending[id]
	if ok {
		// Removed and answered under one lock: an Ask that stops waiting
		// (timeout, cancel) either still finds its entry, or finds the
		// answer in its buffered channel; never neither.
		delete(a.pending, id)
		w.done <- approve
	}
	a.mu.Unlock()
	if !ok {
		return ErrUnknownApproval
	}
	if a.afterDecide != nil {
		a.afterDecide()
	}
	r := w.p.Request
	a.Audit(Decision{Kind: r.Kind, Capabilities: r.Capabilities, Digest: r.Digest, ArgumentsSHA256: r.ArgumentsSHA256, RequestID: r.RequestID, Via: "dashboard", Approved: approve, Waited: a.o.Now().Sub(w.p.Asked).Round(time.Millisecond).String()})
	return nil
}

// Close refuses every pending request and every later Ask.
func (a *Approvals) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.closed {
		a.closed = true
		close(a.quit)
	}
}

// Audit records one decision: in memory for the Activity page and as one
// JSON line in the audit file. A failed write is returned (and the
// decision is still kept in memory).
func (a *Approvals) Audit(d Decision) error {
	if a == nil {
		return nil
	}
	if d.Time.IsZero() {
		d.Time = a.o.Now()
	}
	d = boundDecision(d)
	a.mu.Lock()
	a.recent = append(a.recent, d)
	if len(a.recent) > maxAuditMemory {
		a.recent = a.recent[len(a.recent)-maxAuditMemory:]
	}
	a.mu.Unlock()
	if a.o.AuditFile == "" {
		return nil
	}
	a.fileMu.Lock()
	defer a.fileMu.Unlock()
	return AuditLog{Path: a.o.AuditFile, Lock: a.o.AuditLock}.Append(d)
}

// Decisions returns up to n recent decisions, newest first: from the
// audit file when there is one (so decisions other processes wrote, such
// as 'sluice review --accept' on the command line, are shown too), else,
// or when the file cannot be read, those this process made.
func (a *Approvals) Decisions(n int) []Decision {
	if a == nil {
		return nil
	}
	if a.o.AuditFile != "" {
		m := n
		if m <= 0 {
			m = maxAuditMemory
		}
		if ds, err := (AuditLog{Path: a.o.AuditFile}).Recent(m); err == nil {
			return ds
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if n <= 0 || n > len(a.recent) {
		n = len(a.recent)
	}
	out := make([]Decision, 0, n)
	for i := len(a.recent) - 1; i >= len(a.recent)-n; i-- {
		out = append(out, a.recent[i])
	}
	return out
}

// WaitText is what a caller whose approval timed out or was declined is
// told: where to decide next time.
func (a *Approvals) WaitText(err error) string {
	where := "the sluice dashboard"
	if u := a.URL(); u != "" {
		where = "the sluice dashboard at " + u
	}
	switch {
	case errors.Is(err, ErrApprovalTimeout):
		return fmt.Sprintf("nobody approved it within %s in %s; ask the user to approve it there, then call again", a.o.Timeout, where)
	case errors.Is(err, ErrTooManyPending):
		return fmt.Sprintf("too many approvals are waiting in %s", where)
	case err != nil:
		return fmt.Sprintf("waiting for approval in %s ended: %v", where, err)
	}
	return fmt.Sprintf("it was declined in %s", where)
}

// clip cuts s to at most n bytes on a rune boundary; it returns how
// many bytes were cut.
func clip(s string, n int) (string, int) {
	if len(s) <= n {
		return s, 0
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n], len(s) - n
}
