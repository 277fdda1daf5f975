package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"sluice/gateway/catalog"
	"sluice/gateway/config"
	"sluice/sandbox"
)

// Tool-change detection. Every listing of an MCP server is compared with
// its reviewed baseline (gateway/catalog): a hash per tool over name,
// title, description, schemas and annotations, and one for the set. Under
// onToolChange: hold (the default) the added, renamed and changed tools are
// withheld everywhere — call, find, describe, flat and code mode — until a
// person runs 'sluice review SERVER --accept'. The first listing of a
// server is its baseline; trusting a project server clears its baseline so
// the first listing after trust is the one recorded. The baseline also
// records the server's instructions text, which every agent's initialize
// answer carries: under hold a changed text is shown by review and agents
// get the reviewed one until the change is accepted.

// ToolChange is a server's listing compared with its baseline, as the CLI
// and find show it.
type ToolChange struct {
	Policy  string           `json:"policy"`            // hold | warn | accept
	Added   []string         `json:"added,omitempty"`   // listed, not in the baseline
	Removed []string         `json:"removed,omitempty"` // in the baseline, not listed
	Renamed []catalog.Rename `json:"renamed,omitempty"` // same definition, new name
	Changed []string         `json:"changed,omitempty"` // same name, new definition
	Held    []string         `json:"held,omitempty"`    // withheld until reviewed
	// Instructions is set when the server's instructions text is not the
	// reviewed one (review shows both; under hold agents get the reviewed).
	Instructions bool `json:"instructionsChanged,omitempty"`
	// Unreadable is set when the baseline file cannot be read: every
	// tool is held, since nothing reviewed is known.
	Unreadable string `json:"unreadable,omitempty"`
	Summary    string `json:"summary"` // one line naming every change
}

// toolHold is the comparison behind a ToolChange.
type toolHold struct {
	policy     string
	change     catalog.Change
	held       map[string]bool
	unreadable string
	baseline   *catalog.Baseline
}

func (h *toolHold) active() bool {
	return h != nil && (h.unreadable != "" || !h.change.None())
}

func (h *toolHold) isHeld(tool string) bool { return h != nil && h.held[tool] }

// view renders the hold for server id; nil when nothing changed.
func (h *toolHold) view(id string) *ToolChange {
	if !h.active() {
		return nil
	}
	tc := &ToolChange{Policy: h.policy, Added: h.change.Added, Removed: h.change.Removed, Renamed: h.change.Renamed,
		Changed: h.change.Changed, Unreadable: h.unreadable}
	for n := range h.held {
		tc.Held = append(tc.Held, n)
	}
	sort.Strings(tc.Held)
	tc.Summary = h.summary()
	return tc
}

// summary is one line: "1 changed (search), 1 added (wipe); held: search, wipe".
func (h *toolHold) summary() string {
	if h.unreadable != "" {
		return "the reviewed tool baseline cannot be read (" + h.unreadable + "); every tool is held"
	}
	var parts []string
	add := func(n int, what string, names []string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s (%s)", n, what, listNames(names)))
		}
	}
	var ren []string
	for _, r := range h.change.Renamed {
		ren = append(ren, r.From+" -> "+r.To)
	}
	add(len(h.change.Changed), "changed", h.change.Changed)
	add(len(h.change.Added), "added", h.change.Added)
	add(len(h.change.Renamed), "renamed", ren)
	add(len(h.change.Removed), "removed", h.change.Removed)
	s := "tool definitions changed since they were reviewed: " + strings.Join(parts, ", ")
	switch h.policy {
	case config.ToolChangeWarn:
		s += " (onToolChange: warn, so they stay callable)"
	default:
		if len(h.held) > 0 {
			s += "; held until reviewed: " + listNames(sortedSet(h.held))
		}
	}
	return s
}

func listNames(names []string) string {
	if len(names) > 10 {
		return strings.Join(names[:10], ", ") + fmt.Sprintf(", and %d more", len(names)-10)
	}
	return strings.Join(names, ", ")
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// reviewRemedy: only the user reviews a change.
func reviewRemedy(server string) Remedy {
	return Remedy{Step: StepReview, Server: server}
}

// holdOf compares a listing (one Sum per tool) with server v's baseline.
// nil: nothing is compared (a cli server's tools are its declaration, and
// a server without a baseline yet records one at its next listing).
func (g *Gateway) holdOf(v ServerView, sums []catalog.Sum) *toolHold {
	if v.decl.CLI != nil {
		return nil
	}
	h := &toolHold{policy: v.decl.ToolChangePolicy(), held: map[string]bool{}}
	b, err := g.baseline(v.decl)
	switch {
	case errors.Is(err, catalog.ErrNoBaseline):
		return nil
	case err != nil:
		var be *catalog.BaselineError
		h.unreadable = err.Error()
		if errors.As(err, &be) {
			h.unreadable = be.Reason
		}
		for _, s := range sums {
			h.held[s.Name] = true
		}
		return h
	}
	h.baseline = b
	h.change = catalog.Compare(b, sums)
	if h.policy == config.ToolChangeHold {
		for _, n := range h.change.Held() {
			h.held[n] = true
		}
	}
	return h
}

// toolChanges is the gateway's tool-change state.
type toolChanges struct {
	mu     sync.Mutex
	cache  map[string]cachedBaseline   // by baseline path
	paths  map[catalog.Identity]string // baseline paths worked out (a hash of the identity each)
	warned map[string]string           // per server, the last changed set logged, so a change is logged once
	sums   map[string]rememberedSum    // by capability: the hash of its definition when last called
	// cleared are the calls found not held, by server and tool (see
	// clearedCall).
	cleared map[callKey]clearedCall
}

// rememberedSum is a tool definition's hash and (a copy of) the bytes it
// hashes: a call of a tool whose definition has not changed since its
// last call compares bytes instead of canonicalising and hashing them.
type rememberedSum struct {
	raw json.RawMessage
	sum catalog.Sum
}

// maxRememberedSums bounds toolChanges.sums: past it, the map starts over.
const maxRememberedSums = 4096

// callSum is catalog.SumOf(raw) for a call of server's tool, remembered
// while the definition stays byte for byte the same.
func (g *Gateway) callSum(server, tool string, raw json.RawMessage) catalog.Sum {
	key := server + "\x00" + tool
	tc := &g.toolChanges
	tc.mu.Lock()
	r, ok := tc.sums[key]
	tc.mu.Unlock()
	if ok && bytes.Equal(r.raw, raw) {
		return r.sum
	}
	sum := catalog.SumOf(raw)
	tc.mu.Lock()
	if tc.sums == nil || len(tc.sums) >= maxRememberedSums {
		tc.sums = map[string]rememberedSum{}
	}
	tc.sums[key] = rememberedSum{raw: append(json.RawMessage(nil), raw...), sum: sum}
	tc.mu.Unlock()
	return sum
}

// cachedBaseline is a loaded baseline, the file it was read from and when
// that file was last looked at.
type cachedBaseline struct {
	fi   os.FileInfo
	b    *catalog.Baseline
	next time.Time // the file is looked at again from then on
}

// baseline is catalog.LoadBaseline for d, kept in memory while the file
// stays the same (baselines are replaced by rename, so a stat tells): every
// listing and call consults it. The file is looked at (a stat) at most
// every RecheckEvery, as the call path looks at the declarations; a
// baseline written or removed by this process is read afresh at once
// (storeBaseline, removeBaseline), one written by another process
// (sluice review --accept) counts at most RecheckEvery later.
func (g *Gateway) baseline(d config.Server) (*catalog.Baseline, error) {
	b, _, err := g.baselineAt(d)
	return b, err
}

// baselineAt is baseline, with the path of the file it reads.
func (g *Gateway) baselineAt(d config.Server) (*catalog.Baseline, string, error) {
	id := g.catalogIdentity(d)
	path := g.baselinePath(id)
	now := g.opts.now()
	tc := &g.toolChanges
	tc.mu.Lock()
	c, ok := tc.cache[path]
	tc.mu.Unlock()
	if ok && now.Before(c.next) {
		return c.b, path, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		g.forgetBaseline(path)
		b, err := catalog.LoadBaseline(g.cacheDir, id) // absent or unreadable: it says which
		return b, path, err
	}
	b := c.b
	if !ok || !os.SameFile(c.fi, fi) || !stampOfInfo(c.fi).same(stampOfInfo(fi)) {
		if b, err = catalog.LoadBaseline(g.cacheDir, id); err != nil {
			g.forgetBaseline(path)
			return nil, path, err
		}
		if b.Format < catalog.BaselineFormat {
			var listing []json.RawMessage
			if c, err := catalog.Load(g.cacheDir, id, &catalog.Options{TTL: math.MaxInt64}); err == nil {
				listing = c.Tools
			}
			b = g.upgradeBaseline(d, b, listing)
		}
	}
	tc.mu.Lock()
	if tc.cache == nil {
		tc.cache = map[string]cachedBaseline{}
	}
	tc.cache[path] = cachedBaseline{fi: fi, b: b, next: now.Add(RecheckEvery)}
	tc.mu.Unlock()
	return b, path, nil
}

func (g *Gateway) forgetBaseline(path string) {
	tc := &g.toolChanges
	tc.mu.Lock()
	delete(tc.cache, path)
	tc.mu.Unlock()
}

// storeBaseline is catalog.StoreBaseline of b, the baseline of id; the
// next look reads it.
func (g *Gateway) storeBaseline(id catalog.Identity, b *catalog.Baseline) error {
	err := catalog.StoreBaseline(g.cacheDir, b)
	g.forgetBaseline(g.baselinePath(id))
	return err
}

// removeBaseline is catalog.RemoveBaseline; the next look sees it gone.
func (g *Gateway) removeBaseline(id catalog.Identity) error {
	err := catalog.RemoveBaseline(g.cacheDir, id)
	g.forgetBaseline(g.baselinePath(id))
	return err
}

// baselinePath is catalog.BaselinePath, remembered per identity.
func (g *Gateway) baselinePath(id catalog.Identity) string {
	tc := &g.toolChanges
	tc.mu.Lock()
	p, ok := tc.paths[id]
	tc.mu.Unlock()
	if ok {
		return p
	}
	p = catalog.BaselinePath(g.cacheDir, id)
	tc.mu.Lock()
	if tc.paths == nil || len(tc.paths) >= maxRememberedSums {
		tc.paths = map[catalog.Identity]string{}
	}
	tc.paths[id] = p
	tc.mu.Unlock()
	return p
}

// callHold is goneOrHeld for a call of tool (raw: its listed definition,
// nil when the listing lacks it), cheap in the common case: a listed tool
// whose hash is its baseline's is never held, whatever else changed.
// sums computes the whole listing's hashes when the full comparison is
// needed.
func (g *Gateway) callHold(v ServerView, tool string, raw json.RawMessage, sums func() []catalog.Sum) error {
	if v.decl.CLI != nil {
		return nil
	}
	if raw != nil && g.clearedBefore(v, tool, raw) {
		return nil
	}
	b, path, err := g.baselineAt(v.decl)
	if errors.Is(err, catalog.ErrNoBaseline) {
		return nil
	}
	if err == nil && raw != nil {
		if bt, ok := b.Tool(tool); ok && bt.Hash == g.callSum(v.ID, tool, raw).Hash {
			g.clear(v, tool, raw, b, path)
			return nil
		}
	}
	return goneOrHeld(v.ID, tool, g.holdOf(v, sums()))
}

// callKey names one tool of one server.
type callKey struct{ server, tool string }

// clearedCall remembers that a call of a tool was not held: its listed
// definition (raw, a copy) hashed as its baseline's entry does. It stands
// for the same declaration and the same definition while the baseline it
// was checked against is the one the baseline cache holds, unexpired: a
// baseline written or removed (by this process at once, by another within
// RecheckEvery) ends it, as a relisting that changes the definition does.
type clearedCall struct {
	digest, file string
	raw          json.RawMessage
	b            *catalog.Baseline
	path         string
}

// clearedBefore reports whether a call of v's tool with definition raw
// was found not held under what still holds (see clearedCall).
func (g *Gateway) clearedBefore(v ServerView, tool string, raw json.RawMessage) bool {
	now := g.opts.now()
	tc := &g.toolChanges
	tc.mu.Lock()
	m, ok := tc.cleared[callKey{v.ID, tool}]
	if ok {
		c, cok := tc.cache[m.path]
		ok = cok && c.b == m.b && now.Before(c.next)
	}
	tc.mu.Unlock()
	return ok && m.digest == v.Digest && m.file == v.decl.File && bytes.Equal(m.raw, raw)
}

// clear records a call of v's tool that was not held (see clearedCall).
func (g *Gateway) clear(v ServerView, tool string, raw json.RawMessage, b *catalog.Baseline, path string) {
	tc := &g.toolChanges
	tc.mu.Lock()
	if tc.cleared == nil || len(tc.cleared) >= maxRememberedSums {
		tc.cleared = map[callKey]clearedCall{}
	}
	tc.cleared[callKey{v.ID, tool}] = clearedCall{digest: v.Digest, file: v.decl.File, raw: append(json.RawMessage(nil), raw...), b: b, path: path}
	tc.mu.Unlock()
}

// sumsOf hashes tools.
func sumsOf(tools []toolInfo) []catalog.Sum {
	out := make([]catalog.Sum, 0, len(tools))
	for _, t := range tools {
		out = append(out, catalog.SumOf(t.raw))
	}
	return out
}

// withhold removes the held tools of a listing.
func withhold(tools []toolInfo, h *toolHold) []toolInfo {
	if h == nil || len(h.held) == 0 {
		return tools
	}
	out := make([]toolInfo, 0, len(tools))
	for _, t := range tools {
		if !h.held[t.Name] {
			out = append(out, t)
		}
	}
	return out
}

// heldErr is the error for a call or describe of a held tool, or of a
// reviewed tool that is gone from the listing (removed or renamed).
func heldErr(server, tool string, h *toolHold) error {
	capName := Capability(server, tool)
	why := "its definition changed since it was reviewed"
	switch {
	case h.unreadable != "":
		why = "the reviewed tool baseline cannot be read (" + h.unreadable + ")"
	case contains(h.change.Added, tool):
		why = "it was added since the tools were reviewed"
	}
	for _, r := range h.change.Renamed {
		if r.To == tool {
			why = "it was renamed from " + r.From + " since the tools were reviewed"
		}
		if r.From == tool {
			return &Error{Kind: KindHeld, Server: server, Capability: capName,
				Message: fmt.Sprintf("server %s no longer lists %q: it was renamed to %q, which is held until the change is reviewed", server, tool, r.To), Remedy: reviewRemedy(server)}
		}
	}
	if contains(h.change.Removed, tool) {
		return &Error{Kind: KindUnknown, Server: server, Capability: capName,
			Message: fmt.Sprintf("server %s no longer lists %q (removed since the tools were reviewed)", server, tool), Remedy: reviewRemedy(server)}
	}
	return &Error{Kind: KindHeld, Server: server, Capability: capName,
		Message: fmt.Sprintf("%s is held: %s, and it cannot be called or described until the change is reviewed", capName, why), Remedy: reviewRemedy(server)}
}

// goneOrHeld is heldErr when tool is held or was removed or renamed away;
// nil otherwise.
func goneOrHeld(server, tool string, h *toolHold) error {
	if !h.active() {
		return nil
	}
	if h.isHeld(tool) || contains(h.change.Removed, tool) {
		return heldErr(server, tool, h)
	}
	for _, r := range h.change.Renamed {
		if r.From == tool {
			return heldErr(server, tool, h)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// recordBaseline runs after every listing of declaration d (its tools
// raws and the instructions text of its initialize answer): the first
// listing becomes the baseline, onToolChange: accept makes every listing
// the baseline, and a change under hold or warn is logged once per set.
func (g *Gateway) recordBaseline(d config.Server, raws []json.RawMessage, instructions string) {
	if d.CLI != nil {
		return
	}
	id := g.catalogIdentity(d)
	b, err := g.baseline(d)
	origin := ""
	switch {
	case errors.Is(err, catalog.ErrNoBaseline):
		origin = catalog.OriginFirstListing
	case err != nil:
		g.log.Warn("the reviewed tool baseline cannot be read; every tool is held", "server", d.ID, "error", err.Error())
		return
	default:
		b = g.upgradeBaseline(d, b, raws)
		if b.Instructions == nil {
			// Recorded before baselines bound instructions: the text
			// listed now is the one agents were already given.
			nb := *b
			nb.Instructions = &instructions
			if err := g.storeBaseline(id, &nb); err != nil {
				g.log.Warn("could not record the server's instructions in its tool baseline", "server", d.ID, "error", err.Error())
			} else {
				b = &nb
			}
		}
		var sums []catalog.Sum
		for _, r := range raws {
			sums = append(sums, catalog.SumOf(r))
		}
		ch := catalog.Compare(b, sums)
		instrChanged := b.InstructionsChanged(instructions)
		if ch.None() && !instrChanged {
			return
		}
		if d.ToolChangePolicy() != config.ToolChangeAccept {
			key := ch.Set
			if instrChanged {
				key += "\x00" + instructions
			}
			tc := &g.toolChanges
			tc.mu.Lock()
			seen := tc.warned[d.ID] == key
			if tc.warned == nil {
				tc.warned = map[string]string{}
			}
			tc.warned[d.ID] = key
			tc.mu.Unlock()
			if !seen {
				if !ch.None() {
					h := &toolHold{policy: d.ToolChangePolicy(), change: ch, held: map[string]bool{}}
					if h.policy == config.ToolChangeHold {
						for _, n := range ch.Held() {
							h.held[n] = true
						}
					}
					g.log.Warn("server tools changed since review", "server", d.ID, "change", h.summary(), "review", "sluice review "+d.ID)
				}
				if instrChanged {
					g.log.Warn("server instructions changed since review", "server", d.ID, "change", instructionsSummary(d.ToolChangePolicy()), "review", "sluice review "+d.ID)
				}
			}
			return
		}
		origin = catalog.OriginPolicy
	}
	nb := catalog.NewBaseline(id, raws, origin, g.opts.now()).WithInstructions(instructions)
	if err := g.storeBaseline(id, nb); err != nil {
		g.log.Warn("could not record the tool baseline", "server", d.ID, "error", err.Error())
	}
}

// instructionsSummary is the line a review and the log give for changed
// server instructions under policy.
func instructionsSummary(policy string) string {
	s := "the server's instructions changed since they were reviewed"
	if policy == config.ToolChangeWarn {
		return s + " (onToolChange: warn, so agents get the new text)"
	}
	return s + "; agents get the reviewed text until the change is reviewed"
}

// reviewedInstructions is the instructions text of server v an agent may
// read, given the text its catalog recorded: under onToolChange: hold the
// reviewed text while the recorded one differs from it.
func (g *Gateway) reviewedInstructions(v ServerView, recorded string) string {
	if v.decl.CLI != nil || v.decl.ToolChangePolicy() != config.ToolChangeHold {
		return recorded
	}
	b, err := g.baseline(v.decl)
	switch {
	case errors.Is(err, catalog.ErrNoBaseline):
		return recorded // the next listing records it as the baseline
	case err != nil:
		return "" // nothing reviewed is known: every tool is held, and so is this
	case b.InstructionsChanged(recorded):
		return *b.Instructions
	}
	return recorded
}

// upgradeBaseline brings b, d's baseline in an older format, to the
// current one against listing (see catalog.Baseline.Upgrade) and records
// it. Without a listing it returns b as it is: a format-1 baseline still
// binds what it recorded, and the next listing upgrades it.
func (g *Gateway) upgradeBaseline(d config.Server, b *catalog.Baseline, listing []json.RawMessage) *catalog.Baseline {
	if b.Format >= catalog.BaselineFormat || listing == nil {
		return b
	}
	nb := b.Upgrade(listing)
	if err := g.storeBaseline(g.catalogIdentity(d), nb); err != nil {
		g.log.Warn("could not record the upgraded tool baseline; using it in memory", "server", d.ID, "error", err.Error())
	} else {
		g.log.Info("tool baseline upgraded", "server", d.ID, "from_format", b.Format, "to_format", nb.Format)
	}
	return nb
}

// AddToolChanges fills ToolChange of every trusted server in rep whose
// known listing differs from its reviewed baseline. It never launches.
func (g *Gateway) AddToolChanges(rep *Report) {
	for i := range rep.Servers {
		v := rep.Servers[i]
		if !v.Trusted() || v.decl.CLI != nil {
			continue
		}
		l := g.known(v)
		tc := l.hold.view(v.ID)
		if l.hold != nil && l.hold.baseline.InstructionsChanged(g.recordedInstructions(v, l)) {
			if tc == nil {
				tc = &ToolChange{Policy: v.decl.ToolChangePolicy(), Summary: instructionsSummary(v.decl.ToolChangePolicy())}
			} else {
				tc.Summary += "; " + instructionsSummary(tc.Policy)
			}
			tc.Instructions = true
		}
		rep.Servers[i].ToolChange = tc
	}
}

// Review is a server's listing compared with its reviewed baseline.
type Review struct {
	Server     string      `json:"server"`
	Provenance Provenance  `json:"provenance"`
	Change     *ToolChange `json:"change,omitempty"` // nil: the listing is the baseline
	Diff       string      `json:"diff,omitempty"`   // readable, line by line
	Baseline   string      `json:"baselineOrigin,omitempty"`
	Reviewed   string      `json:"baselineRecordedAt,omitempty"`
	Accepted   bool        `json:"accepted,omitempty"`
	// Digest binds the review to what it shows: the baseline's set hash
	// and the listing's (AcceptReview refuses any other).
	Digest string `json:"digest"`
}

// ReviewTools compares server's known listing (live, else recorded; it
// never launches) with its baseline, and with accept records that listing
// as the new baseline (and the acceptance in the audit log, via cli).
func (g *Gateway) ReviewTools(server string, accept bool) (*Review, error) {
	r, err := g.reviewTools(server, accept, "")
	if err == nil && accept {
		g.auditReview(r, viaCLI)
	}
	return r, err
}

// reviewTools is ReviewTools; a non-empty want accepts only when the
// review's digest is want (see AcceptReview).
func (g *Gateway) reviewTools(server string, accept bool, want string) (*Review, error) {
	v, err := g.server(server)
	if err != nil {
		return nil, err
	}
	if !v.Trusted() {
		return nil, untrustedErr(v)
	}
	if v.decl.CLI != nil {
		return nil, &Error{Kind: KindBadInput, Server: server, Message: fmt.Sprintf("server %s is a cli server: its tools are its declaration, so there is no listing to review", server)}
	}
	l := g.known(v)
	if l.prov == ProvMissing {
		return nil, &Error{Kind: KindMissing, Server: server, Message: fmt.Sprintf("no recorded catalog for server %s, so there is nothing to review", server),
			Remedy: Remedy{Step: StepRefresh, Server: server, After: "to launch it once and record its tools"}}
	}
	raws := make([]json.RawMessage, 0, len(l.all))
	for _, t := range l.all {
		raws = append(raws, t.raw)
	}
	r := &Review{Server: server, Provenance: l.prov, Change: l.hold.view(server)}
	var base *catalog.Baseline
	if l.hold != nil {
		base = l.hold.baseline
	}
	instructions := g.recordedInstructions(v, l)
	instrChanged := base.InstructionsChanged(instructions)
	if instrChanged {
		if r.Change == nil {
			r.Change = &ToolChange{Policy: v.decl.ToolChangePolicy()}
			r.Change.Summary = instructionsSummary(r.Change.Policy)
		} else {
			r.Change.Summary += "; " + instructionsSummary(r.Change.Policy)
		}
		r.Change.Instructions = true
	}
	r.Digest = reviewDigest(&v.decl, base, l.hold != nil && l.hold.unreadable != "", raws, instructions)
	if want != "" && want != r.Digest {
		return r, reviewChangedErr(server)
	}
	if l.hold != nil && l.hold.baseline != nil {
		r.Baseline = l.hold.baseline.Origin
		r.Reviewed = l.hold.baseline.ReviewedAt.Format("2006-01-02 15:04:05Z")
		r.Diff = catalog.Diff(l.hold.baseline, raws)
		if instrChanged {
			r.Diff += catalog.InstructionsDiff(*l.hold.baseline.Instructions, instructions)
		}
	} else if l.hold != nil {
		r.Diff = catalog.Diff(nil, raws)
	}
	if accept && (l.hold == nil || l.hold.active() || instrChanged) {
		id := g.catalogIdentity(v.decl)
		nb := catalog.NewBaseline(id, raws, catalog.OriginReview, g.opts.now()).WithInstructions(instructions)
		if err := g.storeBaseline(id, nb); err != nil {
			return r, &Error{Kind: KindGateway, Server: server, Message: "cannot record the reviewed tool baseline: " + err.Error(), Err: err}
		}
		r.Accepted = true
	}
	return r, nil
}

// recordedInstructions is the instructions text of server v's listing l:
// the recorded catalog's (a live listing's session recorded its catalog
// when it listed).
func (g *Gateway) recordedInstructions(v ServerView, l listing) string {
	if l.prov == ProvCached {
		return l.server.Instructions
	}
	c, err := catalog.Load(g.cacheDir, g.catalogIdentity(v.decl), nil)
	if err != nil {
		return ""
	}
	return c.Server.Instructions
}

// explainHeld turns an error that shows a script naming a held, removed or
// renamed tool into the hold's error and remedy: the script did not see the
// tool because it changed since review, not because it never existed.
func explainHeld(e *RunError, h *scriptHost) bool {
	for id, hold := range h.holds {
		if !hold.active() {
			continue
		}
		names := append(sortedSet(hold.held), hold.change.Removed...)
		for _, r := range hold.change.Renamed {
			names = append(names, r.From)
		}
		for _, name := range names {
			pats := []string{
				fmt.Sprintf("server %q has no tool %s.%s", id, sandbox.Ident(id), sandbox.Ident(name)),
				`unknown tool "` + Capability(id, name) + `"`,
			}
			msgs := []string{e.Message}
			for _, p := range e.Problems {
				msgs = append(msgs, p.Message)
			}
			for _, m := range msgs {
				for _, p := range pats {
					if containsWord(m, p) {
						ge := heldErr(id, name, hold).(*Error)
						e.Kind = RunAdmission
						e.Message = ge.Message
						e.Remedy = ge.Remedy.For(h.surface)
						return true
					}
				}
			}
		}
	}
	return false
}

// containsWord reports whether s contains p not followed by an identifier
// character.
func containsWord(s, p string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], p)
		if j < 0 {
			return false
		}
		end := i + j + len(p)
		if end == len(s) || !isIdentByte(s[end]) {
			return true
		}
		i = i + j + 1
	}
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// baselineWatchEvery is how often a serving gateway looks for a baseline
// written by another process ('sluice review --accept' in a terminal).
const baselineWatchEvery = time.Second

// watchBaselines calls g.changed whenever the baselines directory changes
// (a baseline is written by rename, which touches the directory), so a
// serving front relists and shows the tools a person just accepted. It
// costs one stat per tick and returns when stop is closed.
func (g *Gateway) watchBaselines(stop <-chan struct{}) {
	dir := filepath.Dir(catalog.BaselinePath(g.cacheDir, catalog.Identity{}))
	var last time.Time
	if fi, err := os.Stat(dir); err == nil {
		last = fi.ModTime()
	}
	t := time.NewTicker(baselineWatchEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		fi, err := os.Stat(dir)
		if err != nil || fi.ModTime().Equal(last) {
			continue
		}
		last = fi.ModTime()
		g.changed()
	}
}
