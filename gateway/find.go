package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"sluice/gateway/catalog"
	"sluice/gateway/mcp"
)

// Provenance says where a server's tool list came from. It is separate from
// the server's run status: a cached catalog says nothing about a process.
type Provenance string

const (
	ProvLive    Provenance = "live"    // listed by the running server this session
	ProvCached  Provenance = "cached"  // read from a recorded catalog
	ProvMissing Provenance = "missing" // no catalog: a scoped refresh records one
	// ProvDeclared: a cli server's tools, read from its declaration.
	ProvDeclared Provenance = "declared"
)

// FindRequest asks what capabilities exist.
type FindRequest struct {
	Query   string // keywords; "" lists everything
	Server  string // only this server
	Refresh bool   // launch Server (required) and record its catalog
	Limit   int    // max tools returned; 0 = 50 with a query, unlimited without
}

// FindServer is one server in a find answer.
type FindServer struct {
	ID          string      `json:"id"`
	Scope       string      `json:"scope"`
	Trust       string      `json:"trust"`
	ActionClass string      `json:"actionClass"`
	Provenance  Provenance  `json:"provenance"`
	Run         RunState    `json:"run"`
	Tools       int         `json:"tools"`
	Truncated   bool        `json:"truncated,omitempty"`
	RecordedAt  *time.Time  `json:"recordedAt,omitempty"`
	Reason      string      `json:"reason,omitempty"`
	Remedy      string      `json:"remedy,omitempty"` // fix, rendered for the CLI
	Error       string      `json:"error,omitempty"`
	ToolChange  *ToolChange `json:"toolChange,omitempty"` // tools differ from their reviewed baseline
	fix         Remedy      // typed Remedy, for other surfaces
}

// FindTool is one capability in a find answer.
type FindTool struct {
	Capability  string `json:"capability"`
	Server      string `json:"server"`
	Tool        string `json:"tool"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	ReadOnly    bool   `json:"readOnly,omitempty"`
	Score       int    `json:"score,omitempty"`
}

// FindResult answers a FindRequest.
type FindResult struct {
	Query   string       `json:"query,omitempty"`
	Servers []FindServer `json:"servers"`
	Tools   []FindTool   `json:"tools"`
	More    int          `json:"more,omitempty"` // matches left out by Limit
}

// toolInfo is the subset of a tool definition find and describe read.
type toolInfo struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  json.RawMessage `json:"annotations"`
	raw          json.RawMessage
}

func (t toolInfo) readOnly() bool {
	if len(t.Annotations) == 0 {
		return false
	}
	// Every admitted call asks; a server sends the same annotations each
	// time, so the answer is remembered by their bytes.
	hints.mu.Lock()
	ro, ok := hints.m[string(t.Annotations)]
	hints.mu.Unlock()
	if ok {
		return ro
	}
	ro = decodeReadOnly(t.Annotations)
	hints.mu.Lock()
	if hints.m == nil || len(hints.m) >= maxHints {
		hints.m = map[string]bool{}
	}
	hints.m[string(t.Annotations)] = ro
	hints.mu.Unlock()
	return ro
}

// hints remembers decodeReadOnly's answers by the annotations' bytes.
var hints struct {
	mu sync.Mutex
	m  map[string]bool
}

// maxHints bounds hints: past it, the map starts over.
const maxHints = 1024

func decodeReadOnly(annotations json.RawMessage) bool {
	var a struct {
		ReadOnlyHint *bool  `json:"readOnlyHint"`
		Title        string `json:"title"`
	}
	if json.Unmarshal(annotations, &a) != nil || a.ReadOnlyHint == nil {
		return false
	}
	return *a.ReadOnlyHint
}

func (t toolInfo) title() string {
	if t.Title != "" {
		return t.Title
	}
	var a struct {
		Title string `json:"title"`
	}
	if len(t.Annotations) > 0 && json.Unmarshal(t.Annotations, &a) == nil {
		return a.Title
	}
	return ""
}

func fromMCP(t mcp.Tool) toolInfo {
	return toolInfo{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations, raw: t.Raw}
}

func fromRaw(raw json.RawMessage) (toolInfo, bool) {
	var t toolInfo
	if err := json.Unmarshal(raw, &t); err != nil || t.Name == "" {
		return t, false
	}
	t.raw = raw
	return t, true
}

// listing is a server's tools as the gateway knows them without launching.
type listing struct {
	prov       Provenance
	tools      []toolInfo // without the held and the hidden tools
	all        []toolInfo // every listed tool, held and hidden ones too
	hold       *toolHold  // nil: nothing compared
	hidden     []string   // tool names the configuration hides (in all, not in tools)
	truncated  bool
	recordedAt time.Time
	server     catalog.Server
}

// known returns the live listing if there is one, else the recorded
// catalog, else a missing listing, without the tools the configuration
// hides. It never launches.
func (g *Gateway) known(v ServerView) listing {
	l := g.knownAll(v)
	l.all = l.tools
	if l.prov != ProvMissing && l.prov != ProvDeclared {
		l.hold = g.holdOf(v, sumsOf(l.tools))
		l.tools = withhold(l.tools, l.hold)
	}
	return g.visible(v, l)
}

// knownAll is known without comparing with the baseline, hidden tools
// included.
func (g *Gateway) knownAll(v ServerView) listing {
	if s := g.peekSlot(v.ID, v.Digest); s != nil {
		if tl, ok := s.LiveTools(); ok {
			l := listing{prov: ProvLive, truncated: tl.Truncated}
			for _, t := range tl.Tools {
				l.tools = append(l.tools, fromMCP(t))
			}
			return l
		}
	}
	if v.decl.CLI != nil {
		return cliListing(v.decl)
	}
	c, err := catalog.Load(g.cacheDir, g.catalogIdentity(v.decl), nil)
	if err != nil {
		return listing{prov: ProvMissing}
	}
	l := listing{prov: ProvCached, truncated: c.Truncated, recordedAt: c.RecordedAt, server: c.Server}
	for _, raw := range c.Tools {
		if t, ok := fromRaw(raw); ok {
			l.tools = append(l.tools, t)
		}
	}
	return l
}

// summary is a server's tools for search: names, titles, descriptions.
type summary struct {
	prov       Provenance
	entries    []catalog.Entry // without the held tools
	hold       *toolHold
	truncated  bool
	recordedAt time.Time
	set        string         // the entries' set hash, when the index records it
	ix         *catalog.Index // the index entries came from (nil: a listing)
}

// findFullSearch, set by tests, makes find read every catalog and baseline
// whole, as describe does, instead of the compact index and set files: the
// reference their answers must equal.
var findFullSearch bool

// summaries is known() for search: it reads the small catalog index rather
// than every schema, and the baseline's set hash rather than every
// reviewed definition when the sets agree. It never launches. The index is
// read into buf, so what it returns is only valid until buf's next use;
// a hold computed from the index's names keeps them, and buf then starts
// over with fresh memory.
func (g *Gateway) summaries(v ServerView, buf *catalog.IndexBuffer) summary {
	s := g.summariesAll(v, buf)
	if s.prov == ProvMissing || s.prov == ProvDeclared {
		return g.visibleSummary(v, s)
	}
	if s.set != "" && !findFullSearch {
		// The common case needs no per-tool comparison: the listing's set
		// is the baseline's (or there is no baseline), which is what
		// holdOf would find after hashing every tool.
		set, err := catalog.BaselineSet(g.cacheDir, g.catalogIdentity(v.decl))
		switch {
		case errors.Is(err, catalog.ErrNoBaseline):
			return g.visibleSummary(v, s)
		case err == nil && set == s.set:
			s.hold = &toolHold{policy: v.decl.ToolChangePolicy(), held: map[string]bool{}, change: catalog.Change{Set: set}}
			return g.visibleSummary(v, s)
		}
	}
	var sums []catalog.Sum
	if s.ix != nil {
		sums = s.ix.Sums() // in the order of s.entries, which are its entries
		*buf = catalog.IndexBuffer{}
	}
	for _, e := range s.entries {
		if s.ix != nil {
			break // the sums are the index's
		}
		if e.Hash == "" {
			// An index written before hashes: compare the full catalog.
			l := g.known(v)
			out := summary{prov: l.prov, truncated: l.truncated, recordedAt: l.recordedAt, hold: l.hold}
			for _, t := range l.tools {
				out.entries = append(out.entries, catalog.EntryOf(t.raw))
			}
			return out
		}
		sums = append(sums, catalog.Sum{Name: e.Name, Hash: e.Hash, Body: e.Body})
	}
	s.hold = g.holdOf(v, sums)
	if s.hold != nil && len(s.hold.held) > 0 {
		kept := s.entries[:0:0]
		for _, e := range s.entries {
			if !s.hold.held[e.Name] {
				kept = append(kept, e)
			}
		}
		s.entries = kept
	}
	return g.visibleSummary(v, s)
}

// visibleSummary drops the entries the configuration hides.
func (g *Gateway) visibleSummary(v ServerView, s summary) summary {
	if v.decl.Tools.IsZero() && g.opts.Profile == "" {
		return s
	}
	out := s.entries[:0:0]
	for _, e := range s.entries {
		if g.hiddenTool(v, e.Name) == "" {
			out = append(out, e)
		}
	}
	s.entries = out
	return s
}

// summariesAll is summaries without comparing with the baseline.
func (g *Gateway) summariesAll(v ServerView, buf *catalog.IndexBuffer) summary {
	if slot := g.peekSlot(v.ID, v.Digest); slot != nil {
		if tl, ok := slot.LiveTools(); ok {
			s := summary{prov: ProvLive, truncated: tl.Truncated}
			for _, t := range tl.Tools {
				s.entries = append(s.entries, catalog.EntryOf(t.Raw))
			}
			return s
		}
	}
	id := g.catalogIdentity(v.decl)
	if findFullSearch {
		// The reference the index path must agree with (tests).
	} else if ix, err := catalog.LoadIndexInto(g.cacheDir, id, nil, buf); err == nil && v.decl.CLI == nil {
		return summary{prov: ProvCached, entries: ix.Entries, truncated: ix.Truncated, recordedAt: ix.RecordedAt, set: ix.Set, ix: ix}
	}
	l := g.knownAll(v)
	s := summary{prov: l.prov, truncated: l.truncated, recordedAt: l.recordedAt}
	for _, t := range l.tools {
		s.entries = append(s.entries, catalog.EntryOf(t.raw))
	}
	return s
}

// Find lists capabilities from live listings and recorded catalogs. It
// launches nothing, except that a scoped refresh (Server and Refresh set)
// launches exactly that server and records its catalog.
func (g *Gateway) Find(ctx context.Context, req FindRequest) (*FindResult, error) {
	if req.Refresh && req.Server == "" {
		return nil, &Error{Kind: KindBadInput, Message: "refresh launches a server and needs one named", Remedy: fixText("pass the server id (--server ID); an ordinary find launches nothing")}
	}
	rep := g.Servers()
	var views []ServerView
	for _, v := range rep.Servers {
		if req.Server == "" || v.ID == req.Server {
			views = append(views, v)
		}
	}
	if req.Server != "" && len(views) == 0 {
		_, err := g.server(req.Server)
		return nil, err
	}
	res := &FindResult{Query: req.Query, Servers: []FindServer{}, Tools: []FindTool{}}
	terms := catalog.QueryTerms(req.Query)
	var scratch catalog.Scratch // ScoreIn's, reused for every tool
	// Every index is read into the same memory: what a tool in the answer
	// keeps of its entry is copied out.
	var buf catalog.IndexBuffer
	var refreshErr error
	for _, v := range views {
		fs := FindServer{ID: v.ID, Scope: v.Scope, Trust: v.Trust, ActionClass: v.ActionClass, Run: v.Run}
		if !v.Trusted() {
			// Untrusted and stale servers show their status and remedy and no tools.
			e := untrustedErr(v)
			fs.Provenance, fs.Reason, fs.fix = ProvMissing, v.Reason, e.Remedy
			fs.Remedy = fs.fix.String()
			res.Servers = append(res.Servers, fs)
			if req.Refresh {
				refreshErr = e
			}
			continue
		}
		if req.Refresh {
			if err := g.refresh(ctx, v); err != nil {
				fs.Error = err.Error()
				refreshErr = err
			}
			if nv, err := g.server(v.ID); err == nil {
				v = nv
				fs.Run = v.Run
			}
		}
		l := g.summaries(v, &buf)
		fs.Provenance, fs.Tools, fs.Truncated = l.prov, len(l.entries), l.truncated
		if l.truncated && fs.Reason == "" {
			fs.Reason = truncatedNote(v.ID, len(l.entries))
		}
		if !l.recordedAt.IsZero() {
			t := l.recordedAt
			fs.RecordedAt = &t
		}
		if l.prov == ProvMissing && fs.Error == "" {
			fs.Reason = "no recorded catalog"
			fs.fix = Remedy{Step: StepRefresh, Server: v.ID, After: "to launch it once and record its tools"}
			fs.Remedy = fs.fix.String()
		}
		if v.RunError != "" && fs.Error == "" {
			fs.Error = v.RunError
		}
		if l.hold.active() {
			fs.ToolChange = l.hold.view(v.ID)
			if fs.Reason != "" {
				fs.Reason += "; "
			}
			fs.Reason += l.hold.summary()
			if fs.fix.IsZero() {
				fs.fix = reviewRemedy(v.ID)
				fs.Remedy = fs.fix.String()
			}
		}
		res.Servers = append(res.Servers, fs)
		for i := range l.entries {
			t := &l.entries[i]
			score := 0
			if len(terms) > 0 {
				// Scored before anything is built for it: most tools do
				// not match.
				if score = catalog.ScoreIn(terms, v.ID, t, &scratch); score == 0 {
					continue
				}
			}
			res.Tools = append(res.Tools, FindTool{Capability: Capability(v.ID, t.Name), Server: v.ID, Tool: strings.Clone(t.Name),
				Title: strings.Clone(t.Title), Description: strings.Clone(firstLine(t.Description, 200)), ReadOnly: t.ReadOnly, Score: score})
		}
	}
	if len(terms) > 0 {
		sort.SliceStable(res.Tools, func(i, j int) bool {
			if res.Tools[i].Score != res.Tools[j].Score {
				return res.Tools[i].Score > res.Tools[j].Score
			}
			return res.Tools[i].Capability < res.Tools[j].Capability
		})
	}
	limit := req.Limit
	if limit == 0 && len(terms) > 0 {
		limit = 50
	}
	if limit > 0 && len(res.Tools) > limit {
		res.More = len(res.Tools) - limit
		res.Tools = res.Tools[:limit]
	}
	if req.Refresh && refreshErr != nil {
		return res, refreshErr
	}
	return res, nil
}

// refresh launches one trusted server (if not running), lists its tools and
// records its catalog.
func (g *Gateway) refresh(ctx context.Context, v ServerView) error {
	s, err := g.slotFor(v.decl)
	if err != nil {
		return err
	}
	s.ResetFailures()
	before := g.opts.now()
	l, err := acquire(ctx, s)
	if err != nil {
		return err
	}
	if l.ListedSince(before) {
		// Launched just now: the launch listed the tools and recorded them.
		l.Release(true)
		return nil
	}
	err = l.List(ctx) // records the catalog
	l.Release(err == nil)
	if err != nil {
		return upstreamErr(v.ID, "list tools", err)
	}
	return nil
}

func firstLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if len(s) > max {
		cut := max
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// ToolDetail is everything describe tells about a capability.
type ToolDetail struct {
	Capability   string          `json:"capability"`
	Server       string          `json:"server"`
	Tool         string          `json:"tool"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	Trust        string          `json:"trust"`
	ActionClass  string          `json:"actionClass"` // effective class after annotations
	Admission    string          `json:"admission"`   // run | approval-required
	Provenance   Provenance      `json:"provenance"`
	Signature    string          `json:"signature,omitempty"` // code-mode signature
	Module       string          `json:"module,omitempty"`    // code-mode module name
}

// Describe returns one capability's metadata from the live listing or the
// recorded catalog. It never launches.
func (g *Gateway) Describe(ctx context.Context, capability string) (*ToolDetail, error) {
	server, tool, ok := SplitCapability(capability)
	if !ok {
		return nil, &Error{Kind: KindBadInput, Capability: capability, Message: fmt.Sprintf("%q is not a capability name", capability), Remedy: Remedy{Before: "capabilities are SERVER__TOOL;", Step: StepFind, After: "to list them"}}
	}
	v, err := g.server(server)
	if err != nil {
		return nil, err
	}
	if !v.Trusted() {
		return nil, untrustedErr(v)
	}
	if why := g.hiddenTool(v, tool); why != "" {
		return nil, hiddenToolErr(v, tool, why)
	}
	l := g.known(v)
	if l.prov == ProvMissing {
		return nil, &Error{Kind: KindMissing, Server: server, Capability: capability, Message: fmt.Sprintf("no recorded catalog for server %s", server),
			Remedy: Remedy{Step: StepRefresh, Server: server, After: "to launch it once and record its tools"}}
	}
	if err := goneOrHeld(server, tool, l.hold); err != nil {
		return nil, err
	}
	for _, t := range l.tools {
		if t.Name != tool {
			continue
		}
		adm := g.admission(v, t)
		d := &ToolDetail{
			Capability: capability, Server: server, Tool: tool, Title: t.title(), Description: t.Description,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations,
			Trust: v.Trust, ActionClass: adm.Class, Admission: adm.decision(), Provenance: l.prov,
		}
		g.decorate(d, v, l.tools)
		return d, nil
	}
	return nil, unknownToolErr(server, tool, l.tools, l.truncated)
}

// unknownToolErr: server lists no tool named tool. truncated says its
// listing was cut at the cap, so the tool may exist past it.
func unknownToolErr(server, tool string, tools []toolInfo, truncated bool) error {
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	msg := fmt.Sprintf("server %s has no tool %q", server, tool)
	if len(names) > 0 && len(names) <= 30 {
		msg += " (tools: " + strings.Join(names, ", ") + ")"
	}
	if near := Suggest(tool, names); near != "" {
		msg += "; did you mean " + Capability(server, near) + "?"
	}
	if truncated {
		msg += "; " + truncatedNote(server, len(tools))
	}
	return &Error{Kind: KindUnknown, Server: server, Capability: Capability(server, tool), Message: msg, Remedy: Remedy{Step: StepFindServer, Server: server, After: "to list its tools"}}
}

// truncatedNote says that a server's tool listing was cut at n tools (the
// cap, mcp.MaxTools, or fewer when its pages ran out first), so a tool
// past it is neither listed nor callable through sluice.
func truncatedNote(server string, n int) string {
	return fmt.Sprintf("the tool listing of server %s was truncated at %d tools (sluice lists at most %d): tools past that are not listed and cannot be called", server, n, mcp.MaxTools)
}
