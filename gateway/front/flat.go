package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// flatItem is one parsed upstream item ready to register.
type flatItem struct {
	key string // exposed tool/prompt name, resource URI or URI template
	ref upstreamRef
	sig string // raw upstream JSON + exposed key: a change re-registers
	raw json.RawMessage
}

// syncFlat reconciles the SDK server's registrations of one kind with the
// backend's current list. Errors are logged; the previous set stays.
func (f *front) syncFlat(ctx context.Context, kind Kind) {
	ctx, cancel := context.WithTimeout(ctx, f.opts.RefreshTimeout)
	defer cancel()
	items, err := f.b.List(ctx, kind)
	if err != nil {
		f.log.Warn("flat-mode list failed; keeping the previous set", "kind", string(kind), "err", err)
		return
	}
	f.reconcile(kind, items)
}

// syncTools registers the tools this surface serves directly: every
// listed tool in flat mode, the exposed ones (Item.Expose) in gateway
// mode. Under ModeAuto it first decides the surface from the listing and,
// when that changes, switches every registration over; it reports
// whether it did. Only the event loop (and start, before it) calls it.
func (f *front) syncTools(ctx context.Context) (switched bool) {
	f.mu.Lock()
	feat := f.features
	f.mu.Unlock()
	if f.opts.Mode == ModeGateway && !feat.Expose {
		if f.direct.Load() > 0 {
			f.reconcile(KindTools, nil) // expose was switched off
		}
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, f.opts.RefreshTimeout)
	defer cancel()
	items, err := f.b.List(ctx, KindTools)
	if err != nil {
		f.log.Warn("tool list failed; keeping the previous set", "err", err)
		return false
	}
	if f.opts.Mode == ModeAuto {
		if was, now := f.decideMode(items); was != now {
			f.switchSurface(ctx, now, items)
			return true
		}
	}
	f.reconcile(KindTools, items)
	return false
}

// decideMode is ModeAuto's choice from a tool listing: flat while the
// definitions total at most AutoFlatBytes. Once in gateway mode it goes
// back to flat only below autoLowWater percent of the budget, so a
// catalog that hovers around the budget does not flip the agent's tool
// list back and forth.
func (f *front) decideMode(items []Item) (was, now bool) {
	size := 0
	for _, it := range items {
		size += len(it.Raw) + 1
	}
	budget := f.opts.AutoFlatBytes
	low := budget / 100 * autoLowWater
	was = f.flatNow.Load()
	first := !f.decided
	switch {
	case first, was:
		now = size <= budget
	default:
		now = size <= low
	}
	f.decided = true
	mode := ModeGateway
	if now {
		mode = ModeFlat
	}
	switch {
	case first:
		f.log.Info("mode auto: chose "+string(mode), "tools", len(items), "definitionBytes", size, "budgetBytes", budget)
	case was != now:
		f.log.Info("mode auto: switched to "+string(mode), "tools", len(items), "definitionBytes", size, "budgetBytes", budget, "lowWaterBytes", low)
	}
	return was, now
}

// switchSurface moves every registration to the flat or the gateway
// surface. What leaves is removed before what comes is added: a flat
// tool may carry a gateway tool's name (find, under NoPrefix), and
// adding first would replace one by the other.
//
// The tool part of the switch runs under switching's write lock, which every
// tools/list waits for (surfaceMiddleware): a list answers the whole
// surface before or after the switch, never gateway tools beside flat
// ones. Flat resources and prompts are listed after the lock is let go:
// that may wait for upstreams (syncFlat).
func (f *front) switchSurface(ctx context.Context, flat bool, tools []Item) {
	kinds := []Kind{KindResources, KindResourceTemplates, KindPrompts}
	f.switching.mu.Lock()
	f.flatNow.Store(flat)
	if flat {
		f.syncGatewayTools() // find, describe, call ... out; sluice__read_result in
		f.switching.halfway()
		f.reconcile(KindTools, tools)
		f.switching.mu.Unlock()
		for _, k := range kinds {
			f.syncFlat(ctx, k)
		}
	} else {
		f.reconcile(KindTools, tools) // the exposed tools stay
		f.switching.halfway()
		for _, k := range kinds {
			f.reconcile(k, nil)
		}
		f.syncGatewayTools()
		f.switching.mu.Unlock()
	}
	if f.started && f.opts.OnMode != nil {
		f.opts.OnMode(f.surface())
	}
}

// surfaceLock keeps a tools/list from seeing ModeAuto's switch half done.
type surfaceLock struct {
	mu sync.RWMutex
	// waiters counts the lists that found a switch under way (tests).
	waiters atomic.Int64
	// midSwitch, when set, runs in the middle of every switch, with the
	// leaving registrations gone and the coming ones not yet in (tests).
	midSwitch func()
}

func (s *surfaceLock) halfway() {
	if s.midSwitch != nil {
		s.midSwitch()
	}
}

// surfaceMiddleware holds every tools/list until a switch of the surface
// under way has finished.
func (f *front) surfaceMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/list" || f.opts.Mode != ModeAuto {
			return next(ctx, method, req)
		}
		if !f.switching.mu.TryRLock() {
			f.switching.waiters.Add(1)
			f.switching.mu.RLock()
		}
		defer f.switching.mu.RUnlock()
		return next(ctx, method, req)
	}
}

// reconcile makes the registrations of one kind those of items.
func (f *front) reconcile(kind Kind, items []Item) {
	want := f.planFlat(kind, items)
	f.mu.Lock()
	cur := f.flat[kind]
	if cur == nil {
		cur = &flatEntries{owner: map[string]upstreamRef{}, sig: map[string]string{}}
		f.flat[kind] = cur
	}
	var gone []string
	for k := range cur.sig {
		if _, ok := want[k]; !ok {
			gone = append(gone, k)
		}
	}
	var add []flatItem
	for k, it := range want {
		if cur.sig[k] != it.sig {
			add = append(add, it)
		}
	}
	f.mu.Unlock()
	sort.Strings(gone)
	sort.Slice(add, func(i, j int) bool { return add[i].key < add[j].key })

	if len(gone) > 0 {
		switch kind {
		case KindTools:
			f.srv.RemoveTools(gone...)
		case KindPrompts:
			f.srv.RemovePrompts(gone...)
		case KindResources:
			f.srv.RemoveResources(gone...)
		case KindResourceTemplates:
			f.srv.RemoveResourceTemplates(gone...)
		}
	}
	f.mu.Lock()
	for _, k := range gone {
		delete(cur.sig, k)
		delete(cur.owner, k)
	}
	f.mu.Unlock()
	for _, it := range add {
		// The owner is recorded before the SDK lists the item: an agent
		// that calls a tool as soon as it is listed (the fast paths look
		// the owner up) must not be told it is unknown.
		f.mu.Lock()
		prevOwner, hadOwner := cur.owner[it.key]
		cur.owner[it.key] = it.ref
		f.mu.Unlock()
		if err := f.register(kind, it); err != nil {
			f.log.Warn("skipping upstream item the gateway cannot serve", "kind", string(kind), "server", it.ref.Server, "name", it.ref.Name, "err", err)
			f.mu.Lock()
			had := cur.sig[it.key] != ""
			f.mu.Unlock()
			if had { // an earlier version was registered: drop it too
				f.removeOne(kind, it.key)
				f.mu.Lock()
				delete(cur.sig, it.key)
				delete(cur.owner, it.key)
				f.mu.Unlock()
			} else {
				f.mu.Lock()
				if hadOwner {
					cur.owner[it.key] = prevOwner
				} else {
					delete(cur.owner, it.key)
				}
				f.mu.Unlock()
			}
			continue
		}
		f.mu.Lock()
		cur.sig[it.key] = it.sig
		f.mu.Unlock()
	}
	if kind == KindTools {
		f.mu.Lock()
		f.direct.Store(int64(len(cur.sig)))
		f.mu.Unlock()
	}
	if len(gone) > 0 || len(add) > 0 {
		what := "flat-mode registrations updated"
		if kind == KindTools && !f.flatNow.Load() {
			what = "exposed tools updated"
		}
		f.log.Info(what, "kind", string(kind), "count", len(want), "added_or_changed", len(add), "removed", len(gone))
	}
}

func (f *front) removeOne(kind Kind, key string) {
	switch kind {
	case KindTools:
		f.srv.RemoveTools(key)
	case KindPrompts:
		f.srv.RemovePrompts(key)
	case KindResources:
		f.srv.RemoveResources(key)
	case KindResourceTemplates:
		f.srv.RemoveResourceTemplates(key)
	}
}

// planFlat parses the backend's items and assigns exposed keys.
func (f *front) planFlat(kind Kind, items []Item) map[string]flatItem {
	type parsed struct {
		ref    upstreamRef
		raw    json.RawMessage
		expose bool
	}
	var ps []parsed
	for _, it := range items {
		var head struct {
			Name        string `json:"name"`
			URI         string `json:"uri"`
			URITemplate string `json:"uriTemplate"`
		}
		if err := json.Unmarshal(it.Raw, &head); err != nil {
			f.log.Warn("skipping malformed upstream item", "kind", string(kind), "server", it.Server, "err", err)
			continue
		}
		name := head.Name
		switch kind {
		case KindResources:
			name = head.URI
		case KindResourceTemplates:
			name = head.URITemplate
		}
		if name == "" || it.Server == "" {
			f.log.Warn("skipping upstream item without a name or server", "kind", string(kind), "server", it.Server)
			continue
		}
		ps = append(ps, parsed{upstreamRef{it.Server, name}, it.Raw, it.Expose})
	}
	out := map[string]flatItem{}
	switch kind {
	case KindTools, KindPrompts:
		refs := make([]upstreamRef, len(ps))
		for i, p := range ps {
			refs[i] = p.ref
		}
		var reserved []string
		onlyExposed := false
		if kind == KindTools {
			reserved = []string{flatReadResult} // the gateway's own tool
			if !f.flatNow.Load() {
				// Gateway mode: the exposed tools keep their flat names
				// (named among every listed tool, so exposing one more
				// never renames another), and none takes a gateway
				// tool's name.
				onlyExposed = true
				for _, gt := range gatewayTools {
					reserved = append(reserved, gt.name)
				}
			}
		}
		names := assignNamesReserved(refs, f.opts.NoPrefix, reserved)
		byRef := map[upstreamRef]parsed{}
		for _, p := range ps {
			if _, dup := byRef[p.ref]; !dup {
				byRef[p.ref] = p
			}
		}
		var keys []string
		for exposed, ref := range names {
			if onlyExposed && !byRef[ref].expose {
				continue
			}
			keys = append(keys, exposed)
		}
		sort.Strings(keys)
		var budgets []int
		if kind == KindTools || kind == KindPrompts {
			sizes := make([]int, len(keys))
			for i, k := range keys {
				sizes[i] = len(byRef[names[k]].raw)
			}
			budgets = listBudgets(sizes, f.opts.MaxToolListingBytes, f.opts.MaxListingBytes)
		}
		shortened, left := 0, 0
		for i, exposed := range keys {
			ref := names[exposed]
			raw := byRef[ref].raw
			if budgets != nil {
				var cut bool
				if kind == KindPrompts {
					raw, cut = shortenEntry(raw, budgets[i], "the whole entry: ask the server "+ref.Server+" directly")
					if len(raw) > f.opts.MaxToolListingBytes {
						// What identifies it (name, argument names)
						// is over the per-entry cap on its own.
						f.log.Warn("listed entry left out: what identifies it alone is over the per-entry byte cap", "kind", string(kind), "server", ref.Server, "name", clip(ref.Name, 64), "bytes", len(raw), "maxToolListingBytes", f.opts.MaxToolListingBytes)
						left++
						continue
					}
				} else {
					raw, cut = shortenTool(raw, budgets[i], wholeDefinition(ref.capability(), onlyExposed))
				}
				if cut {
					shortened++
				}
			}
			out[exposed] = flatItem{key: exposed, ref: ref, raw: raw, sig: exposed + "\x00" + string(raw)}
		}
		if shortened > 0 || left > 0 {
			f.log.Warn("definitions shortened to fit the listing's byte caps", "kind", string(kind), "shortened", shortened, "left out", left, "entries", len(keys),
				"maxToolListingBytes", f.opts.MaxToolListingBytes, "maxListingBytes", f.opts.MaxListingBytes)
		}
	default:
		// URIs cannot be renamed: the first server (by id) that lists a
		// URI owns it; later ones are reported and skipped.
		sort.SliceStable(ps, func(i, j int) bool { return ps[i].ref.Server < ps[j].ref.Server })
		var kept []parsed
		for _, p := range ps {
			if prev, taken := out[p.ref.Name]; taken {
				if prev.ref.Server != p.ref.Server {
					f.log.Warn("two servers list the same resource; keeping the first", "kind", string(kind), "uri", p.ref.Name, "kept", prev.ref.Server, "skipped", p.ref.Server)
				}
				continue
			}
			out[p.ref.Name] = flatItem{key: p.ref.Name, ref: p.ref, raw: p.raw, sig: string(p.raw)}
			kept = append(kept, p)
		}
		// The same byte caps as tool definitions, in the order listed.
		sort.Slice(kept, func(i, j int) bool { return kept[i].ref.Name < kept[j].ref.Name })
		// register prefixes each name with the server id: the caps hold
		// for the entry as listed, prefix included.
		grown := func(p parsed) int {
			if f.opts.NoPrefix {
				return 0
			}
			return len(p.ref.Server) + len("__")
		}
		sizes := make([]int, len(kept))
		for i, p := range kept {
			sizes[i] = len(p.raw) + grown(p)
		}
		budgets := listBudgets(sizes, f.opts.MaxToolListingBytes, f.opts.MaxListingBytes)
		shortened, left := 0, 0
		for i, p := range kept {
			raw, cut := shortenEntry(p.raw, budgets[i]-grown(p), "the whole entry: ask the server "+p.ref.Server+" directly")
			if len(raw)+grown(p) > f.opts.MaxToolListingBytes {
				// Its URI (or template) and name alone are over the
				// per-entry cap: listing it would break the cap.
				f.log.Warn("listed entry left out: what identifies it alone is over the per-entry byte cap", "kind", string(kind), "server", p.ref.Server, "uri", clip(p.ref.Name, 64), "bytes", len(raw)+grown(p), "maxToolListingBytes", f.opts.MaxToolListingBytes)
				delete(out, p.ref.Name)
				left++
				continue
			}
			if cut {
				shortened++
				out[p.ref.Name] = flatItem{key: p.ref.Name, ref: p.ref, raw: raw, sig: string(raw)}
			}
		}
		if shortened > 0 || left > 0 {
			f.log.Warn("listed entries shortened to fit the listing's byte caps", "kind", string(kind), "shortened", shortened, "left out", left, "entries", len(kept),
				"maxToolListingBytes", f.opts.MaxToolListingBytes, "maxListingBytes", f.opts.MaxListingBytes)
		}
	}
	return out
}

// register adds one item to the SDK server. The SDK panics on items it
// considers invalid (schema not an object, bad x-mcp-header annotations,
// bad URI template); those are skipped.
func (f *front) register(kind Kind, it flatItem) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("rejected by the MCP server library: %v", p)
		}
	}()
	switch kind {
	case KindTools:
		t, err := toolFromRaw(it.raw, it.key)
		if err != nil {
			return err
		}
		f.srv.AddTool(t, f.flatToolHandler(it.ref))
	case KindPrompts:
		var p mcp.Prompt
		if err := json.Unmarshal(it.raw, &p); err != nil {
			return err
		}
		p.Name = it.key
		f.srv.AddPrompt(&p, f.promptHandler(it.ref))
	case KindResources:
		var r mcp.Resource
		if err := json.Unmarshal(it.raw, &r); err != nil {
			return err
		}
		if _, err := url.Parse(r.URI); err != nil {
			return err
		}
		if !f.opts.NoPrefix && r.Name != "" {
			r.Name = it.ref.Server + "__" + r.Name
		}
		f.srv.AddResource(&r, f.resourceHandler(it.ref.Server))
	case KindResourceTemplates:
		var t mcp.ResourceTemplate
		if err := json.Unmarshal(it.raw, &t); err != nil {
			return err
		}
		if !f.opts.NoPrefix && t.Name != "" {
			t.Name = it.ref.Server + "__" + t.Name
		}
		f.srv.AddResourceTemplate(&t, f.resourceHandler(it.ref.Server))
	}
	return nil
}

// toolFromRaw builds the exposed tool, keeping both schemas verbatim.
func toolFromRaw(raw json.RawMessage, exposed string) (*mcp.Tool, error) {
	var t mcp.Tool
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, err
	}
	var schemas struct {
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	if err := json.Unmarshal(raw, &schemas); err != nil {
		return nil, err
	}
	t.Name = exposed
	if len(schemas.InputSchema) == 0 || string(schemas.InputSchema) == "null" {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	} else {
		t.InputSchema = schemas.InputSchema
	}
	if len(schemas.OutputSchema) > 0 && string(schemas.OutputSchema) != "null" {
		t.OutputSchema = schemas.OutputSchema
	} else {
		t.OutputSchema = nil
	}
	return &t, nil
}

func (f *front) flatToolHandler(ref upstreamRef) mcp.ToolHandler {
	capability := ref.capability()
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return f.runTool(ctx, req, capability, func(ctx context.Context, p Peer) (json.RawMessage, error) {
			if raw, ok := f.stashed(req); ok {
				return raw, nil // answered on the fast path already
			}
			args := req.Params.Arguments
			if len(args) == 0 || string(args) == "null" {
				args = json.RawMessage("{}")
			}
			return f.b.Call(ctx, f.callRequest(req, capability, args), p)
		})
	}
}

// runRequest wraps non-tool forwarded requests (resources/read,
// prompts/get): request id, tracking, cancellation, panic recovery, logs.
func (f *front) runRequest(ctx context.Context, method, label string, req mcp.Request, fn callFunc) (json.RawMessage, error) {
	rid := f.newRequestID(req)
	if !f.inflight.add() {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the gateway is shutting down"}
	}
	defer f.inflight.done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(f.hard, cancel)
	defer stop()
	p := f.newPeer(ctx, rid, req)
	log := f.log.With("request_id", rid, "method", method, "target", label)
	raw, err := func() (raw json.RawMessage, err error) {
		defer func() {
			if r := recover(); r != nil {
				log.Error("panic in backend", "panic", fmt.Sprint(r))
				raw, err = nil, errPanic
			}
		}()
		return fn(ctx, p)
	}()
	if err != nil {
		log.Log(ctx, levelFor(ctx), "request failed", "err", err)
		if ctx.Err() != nil && f.hard.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			return nil, errRequestCancelled
		}
		return nil, f.protocolError(rid, err)
	}
	log.Debug("request served")
	return raw, nil
}

func levelFor(ctx context.Context) slog.Level {
	if ctx.Err() != nil {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

// protocolError maps a backend error to a JSON-RPC error the agent sees.
func (f *front) protocolError(rid string, err error) error {
	var re *jsonrpc.Error
	if asJSONRPC(err, &re) {
		return re
	}
	var te *ToolError
	if asToolError(err, &te) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: te.Error()}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the gateway failed to serve this request (request " + rid + ")"}
}

func (f *front) resourceHandler(server string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		params, err := json.Marshal(req.Params)
		if err != nil {
			return nil, err
		}
		raw, err := f.runRequest(ctx, "resources/read", req.Params.URI, req, func(ctx context.Context, p Peer) (json.RawMessage, error) {
			return f.b.ReadResource(ctx, server, params, p)
		})
		if err != nil {
			return nil, err
		}
		var res mcp.ReadResourceResult
		if err := json.Unmarshal(stripProtocolFields(raw), &res); err != nil {
			f.log.Error("backend returned a malformed resources/read result", "server", server, "err", err)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "malformed upstream result"}
		}
		return &res, nil
	}
}

func (f *front) promptHandler(ref upstreamRef) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		up := *req.Params
		up.Name = ref.Name
		params, err := json.Marshal(&up)
		if err != nil {
			return nil, err
		}
		raw, err := f.runRequest(ctx, "prompts/get", ref.capability(), req, func(ctx context.Context, p Peer) (json.RawMessage, error) {
			return f.b.GetPrompt(ctx, ref.Server, params, p)
		})
		if err != nil {
			return nil, err
		}
		var res mcp.GetPromptResult
		if err := json.Unmarshal(stripProtocolFields(raw), &res); err != nil {
			f.log.Error("backend returned a malformed prompts/get result", "server", ref.Server, "err", err)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "malformed upstream result"}
		}
		return &res, nil
	}
}

// complete routes completion/complete to the server owning the prompt or
// resource (template) the reference names.
func (f *front) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	if req.Params == nil || req.Params.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete needs params.ref"}
	}
	up := *req.Params
	ref := *req.Params.Ref
	var server string
	f.mu.Lock()
	switch ref.Type {
	case "ref/prompt":
		if e := f.flat[KindPrompts]; e != nil {
			if o, ok := e.owner[ref.Name]; ok {
				server, ref.Name = o.Server, o.Name
			}
		}
	case "ref/resource":
		for _, k := range []Kind{KindResourceTemplates, KindResources} {
			if e := f.flat[k]; e != nil && server == "" {
				if o, ok := e.owner[ref.URI]; ok {
					server = o.Server
				}
			}
		}
	}
	f.mu.Unlock()
	if server == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("no prompt or resource matches the completion reference %s %q", ref.Type, ref.Name+ref.URI)}
	}
	up.Ref = &ref
	params, err := json.Marshal(&up)
	if err != nil {
		return nil, err
	}
	rid := f.newRequestID(req)
	raw, err := f.b.Complete(ctx, server, params)
	if err != nil {
		f.log.Log(ctx, levelFor(ctx), "completion failed", "request_id", rid, "server", server, "err", err)
		return nil, f.protocolError(rid, err)
	}
	var res mcp.CompleteResult
	if err := json.Unmarshal(stripProtocolFields(raw), &res); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "malformed upstream result"}
	}
	return &res, nil
}
