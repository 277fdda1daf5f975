package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"sluice/gateway/admin"
	"sluice/gateway/catalog"
	"sluice/gateway/config"
)

// This file binds a tool review to what a person was shown, for surfaces
// where showing and accepting are two requests (the dashboard): the review
// carries a digest of the declaration, of the baseline it compared with
// and of the listing it showed, and AcceptReview records the listing only
// while all three are still the server's.

// reviewDigest is "sha256:" over the declaration the listing came from
// (its digest and resolved program), the baseline's set hash ("none"
// without a baseline, "unreadable" when it cannot be read) and the set
// hash of the listing shown. The baseline outlives declaration changes on
// purpose, so without the declaration a review shown for one command would
// be accepted for another that lists the same tools.
func reviewDigest(decl *config.Server, b *catalog.Baseline, unreadable bool, listing []json.RawMessage, instructions string) string {
	base := "none"
	switch {
	case unreadable:
		base = "unreadable"
	case b != nil:
		base = b.Set
	}
	sums := make([]catalog.Sum, 0, len(listing))
	for _, raw := range listing {
		sums = append(sums, catalog.SumOf(raw))
	}
	h := sha256.New()
	reviewed := "none"
	if b != nil && b.Instructions != nil {
		reviewed = fmt.Sprintf("%x", sha256.Sum256([]byte(*b.Instructions)))
	}
	fmt.Fprintf(h, "sluice-review-v2\ndeclaration %s\nprogram %q\nbaseline %s\nlisting %s\ninstructions %s %x\n", decl.Digest, decl.Program, base, catalog.SetHash(sums), reviewed, sha256.Sum256([]byte(instructions)))
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func reviewChangedErr(server string) error {
	return &Error{Kind: KindHeld, Server: server, Err: ErrReviewChanged,
		Message: fmt.Sprintf("the tools of server %s changed since the review was shown (a new listing, or another review accepted meanwhile); nothing was accepted", server),
		Remedy:  fixText("look at the review again and accept what it shows now")}
}

// AcceptReview records server's known listing as its reviewed baseline when
// the review's digest is still digest, the one the person was shown; else
// it accepts nothing and returns an error wrapping ErrReviewChanged.
func (g *Gateway) AcceptReview(server, digest string) (*Review, error) {
	return g.acceptReview(server, digest, viaCLI)
}

// acceptReview is AcceptReview with the audit log's Via.
func (g *Gateway) acceptReview(server, digest, via string) (*Review, error) {
	if digest == "" {
		return nil, &Error{Kind: KindBadInput, Server: server, Message: "accepting a tool review needs the digest of the review shown",
			Remedy: fixText("open the server's review and accept from there")}
	}
	r, err := g.reviewTools(server, true, digest)
	if err == nil {
		g.auditReview(r, via)
	}
	return r, err
}

// auditReview records an accepted review in the audit log: who accepted,
// the tools it makes callable (the held ones; the server when none was
// held) and the digest of the review accepted.
func (g *Gateway) auditReview(r *Review, via string) {
	if r == nil || !r.Accepted {
		return
	}
	caps := []string{r.Server}
	if r.Change != nil && len(r.Change.Held) > 0 {
		caps = caps[:0]
		for _, t := range r.Change.Held {
			caps = append(caps, Capability(r.Server, t))
		}
	}
	g.audit(admin.Decision{Kind: "review", Capabilities: caps, Digest: r.Digest, Via: via, Approved: true})
}

// adminReview is r as the dashboard shows it.
func adminReview(r *Review) *admin.ToolReview {
	out := &admin.ToolReview{Server: r.Server, Source: "the recorded catalog", BaselineOrigin: r.Baseline, ReviewedAt: r.Reviewed,
		Diff: r.Diff, Digest: r.Digest, Accepted: r.Accepted}
	if r.Provenance == ProvLive {
		out.Source = "the running server's listing"
	}
	if c := r.Change; c != nil {
		out.Summary, out.Policy, out.Unreadable = c.Summary, c.Policy, c.Unreadable
		out.Changed, out.Added, out.Removed, out.Held = c.Changed, c.Added, c.Removed, c.Held
		for _, rn := range c.Renamed {
			out.Renamed = append(out.Renamed, rn.From+" -> "+rn.To)
		}
	}
	return out
}

func (b *dashBackend) Review(_ context.Context, id string) (*admin.ToolReview, error) {
	r, err := b.g.ReviewTools(id, false)
	if err != nil {
		return nil, errors.New(errMessage(err))
	}
	return adminReview(r), nil
}

// AcceptReview records the listing shown, and audits it: who accepted
// (the dashboard), which tools it makes callable and the digest accepted.
func (b *dashBackend) AcceptReview(_ context.Context, id, digest string) (*admin.ToolReview, error) {
	r, err := b.g.acceptReview(id, digest, "dashboard")
	if errors.Is(err, ErrReviewChanged) {
		return nil, admin.ErrReviewChanged
	}
	if err != nil {
		return nil, errors.New(errMessage(err))
	}
	return adminReview(r), nil
}
