package gateway

// This file keeps what the gateway sends a model, beyond tool results,
// inside the filters: answers it composes itself (find, describe,
// read_result, execute) go through the result and context stages like a
// tool result; what it relays that is not a tool result (upstream errors,
// progress and log notifications, resources, prompts, completions) goes
// through the redaction filters, and anything that can be big is held to
// the context budget with a handle for the rest.
//
// # Why only redaction for relayed non-results
//
// A configured filter may expect a CallToolResult (a projection, a
// summary); a prompt or a log message is not one. builtin:redact rewrites
// every string of any JSON object, so it is the filter that applies to
// everything; other filters see tool results and composed answers only.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"sluice/gateway/config"
	"sluice/wasm"
)

// Pseudo capabilities of the answers the gateway composes; filter globs
// such as "*" or "sluice__*" match them.
const (
	FindCapability       = "sluice__find"
	DescribeCapability   = "sluice__describe"
	ReadResultCapability = "sluice__read_result"
)

// ResultURIPrefix names a stored result as a resource:
// sluice://results/<handle> (see Frontend.ReadResource).
const ResultURIPrefix = "sluice://results/"

// resultLink is the resource_link content item naming a stored result.
func resultLink(handle string, size int) map[string]any {
	return map[string]any{"type": "resource_link", "uri": ResultURIPrefix + handle, "name": handle,
		"mimeType": "application/json", "description": "the full result (" + strconv.Itoa(size) + " bytes), readable in pages"}
}

// SetFilterObserver installs fn to be told the outcome of every filter run
// (pass, modified, blocked, fail_open, fail_closed), e.g. for
// sluice_filter_outcomes_total. fn must be cheap and safe for concurrent
// use.
func (g *Gateway) SetFilterObserver(fn func(filter, outcome string)) {
	if g.pipeline != nil {
		g.pipeline.observe.Store(&fn)
	}
}

// GuardAnswer runs an answer the gateway composed for a model (a
// CallToolResult) through the result- and context-stage filters that
// match capability, as a tool result is: redacted, and shaped to the
// budget with a handle for the rest.
func (g *Gateway) GuardAnswer(ctx context.Context, capability string, answer json.RawMessage) (json.RawMessage, error) {
	// Not vouched for (see filterResultOf): the filters' output is
	// validated in full.
	out, _, err := g.filterResultOf(ctx, capability, answer, true, false)
	return out, err // the caller's for good (never given back)
}

// RedactJSON runs the redaction filters (builtin:redact entries at the
// result stage whose capabilities match) over a JSON object the gateway
// relays. A fail-closed failure is an error: the caller withholds what it
// would have relayed.
func (g *Gateway) RedactJSON(ctx context.Context, capability string, obj json.RawMessage) (json.RawMessage, error) {
	p := g.pipeline
	if p == nil {
		return obj, nil
	}
	s, err := g.acquire(capability)
	if err != nil {
		return nil, err
	}
	defer p.release(s)
	server, tool, _ := SplitCapability(capability)
	data := []byte(obj)
	var chain lent // the result is the caller's for good: only the intermediate outputs are given back
	for _, e := range s.entries {
		if e.cfg.Stage != config.StageResult || e.spec.Builtin != "redact" || !matchAny(e.cfg.Capabilities, capability) {
			continue
		}
		reqID := "f" + strconv.FormatUint(p.reqID.Add(1), 10)
		out, o, blocked, err := p.run(ctx, s, e, data, wasm.Meta{Server: server, Tool: tool, Stage: config.StageResult, RequestID: reqID}, capability)
		if err != nil || blocked {
			o.Release()
			chain.o.Release()
		}
		if err != nil {
			return nil, err
		}
		if blocked {
			return nil, &Error{Kind: KindFilter, Capability: capability, Message: "filter " + e.name + " withheld it"}
		}
		data = chain.next(data, out, o)
	}
	return json.RawMessage(data), nil
}

// RedactText is RedactJSON for one string.
func (g *Gateway) RedactText(ctx context.Context, capability, text string) (string, error) {
	if text == "" || !g.redacts(capability) {
		return text, nil
	}
	b, _ := json.Marshal(map[string]string{"text": text})
	out, err := g.RedactJSON(ctx, capability, b)
	if err != nil {
		return "", err
	}
	var v struct{ Text string }
	if err := json.Unmarshal(out, &v); err != nil {
		return "", err
	}
	return v.Text, nil
}

// redacts reports whether a redaction filter applies to capability (so
// plain text need not be wrapped for nothing).
func (g *Gateway) redacts(capability string) bool {
	p := g.pipeline
	if p == nil {
		return false
	}
	p.mu.Lock()
	s := p.cur
	p.mu.Unlock()
	for _, e := range s.entries {
		if e.spec.Builtin == "redact" && matchAny(e.cfg.Capabilities, capability) {
			return true
		}
	}
	return false
}

// Budget is the context budget answers are held to: the first shape
// filter's (the default one's when none is configured).
func (g *Gateway) Budget() int {
	p := g.pipeline
	if p == nil {
		return DefaultShapeBudget
	}
	p.mu.Lock()
	s := p.cur
	p.mu.Unlock()
	for _, e := range s.entries {
		if e.isShape && e.budget > 0 && !e.inactive() {
			return e.budget
		}
	}
	return DefaultShapeBudget
}

// StoreFull keeps b in the results store and returns its handle.
func (g *Gateway) StoreFull(b []byte) (string, error) {
	if g.pipeline == nil {
		return "", fmt.Errorf("no results store")
	}
	return g.pipeline.store.Put(b)
}

// LogCapability is the pseudo capability of the log lines RedactLog
// rewrites (named in its errors).
const LogCapability = "sluice__log"

// RedactLog runs every redaction filter (each builtin:redact entry at the
// result stage, whatever capabilities it is declared for: a log line
// belongs to no single tool) over obj, a JSON object about to be written
// to the operator's log, such as a log line or a relayed stderr line of a
// server. With no redaction filter declared it returns obj. An error
// means obj must not be written as it is. Its runs are not counted among
// the filters' outcomes, which count what results met.
func (g *Gateway) RedactLog(ctx context.Context, obj []byte) ([]byte, error) {
	p := g.pipeline
	if p == nil {
		return obj, nil
	}
	s, err := g.acquire(LogCapability)
	if err != nil {
		if !g.redactsAny() {
			return obj, nil // (the filters that last ran redact nothing)
		}
		return nil, err
	}
	defer p.release(s)
	data := obj
	for _, e := range s.entries {
		if e.cfg.Stage != config.StageResult || e.spec.Builtin != "redact" {
			continue
		}
		reqID := "f" + strconv.FormatUint(p.reqID.Add(1), 10)
		out, err := p.logRun(ctx, s, e, data, wasm.Meta{Stage: config.StageResult, RequestID: reqID})
		if err != nil {
			return nil, err
		}
		data = out
	}
	return data, nil
}

// logRun runs the redaction filter e over a log line's data. It is not
// one of the filter's outcomes (those count what results met), and it
// fails closed whatever e's policy: a line it cannot redact is not
// written as it is.
func (p *pipeline) logRun(ctx context.Context, s *filterSet, e *filterEntry, data []byte, meta wasm.Meta) ([]byte, error) {
	if err := s.ensureLoaded(ctx, e); err != nil {
		return nil, err
	}
	s.mu.Lock()
	f := e.filter
	s.mu.Unlock()
	if f == nil {
		return nil, ErrClosed
	}
	o, err := f.Apply(ctx, data, meta)
	if err != nil {
		return nil, err
	}
	switch o.Status {
	case wasm.StatusPass:
		return data, nil
	case wasm.StatusBlocked:
		return nil, &Error{Kind: KindFilter, Capability: LogCapability, Message: "filter " + e.name + " withheld it"}
	}
	return o.Data, nil // the caller's for good (never released)
}

// redactsAny reports whether any redaction filter is declared.
func (g *Gateway) redactsAny() bool {
	p := g.pipeline
	p.mu.Lock()
	s := p.cur
	p.mu.Unlock()
	if s == nil {
		return false
	}
	for _, e := range s.entries {
		if e.spec.Builtin == "redact" {
			return true
		}
	}
	return false
}
