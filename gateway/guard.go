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
	return g.filterResultOf(ctx, capability, answer, true, false)
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
	for _, e := range s.entries {
		if e.cfg.Stage != config.StageResult || e.spec.Builtin != "redact" || !matchAny(e.cfg.Capabilities, capability) {
			continue
		}
		reqID := "f" + strconv.FormatUint(p.reqID.Add(1), 10)
		out, blocked, err := p.run(ctx, s, e, data, wasm.Meta{Server: server, Tool: tool, Stage: config.StageResult, RequestID: reqID}, capability)
		if err != nil {
			return nil, err
		}
		if blocked {
			return nil, &Error{Kind: KindFilter, Capability: capability, Message: "filter " + e.name + " withheld it"}
		}
		data = out
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
