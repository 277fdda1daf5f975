package gateway

// This file routes traffic an upstream server starts on its own (log
// messages, list changes, sampling, elicitation and roots requests) to the
// agent whose request is in flight on that server.
//
// # Why upstream traffic is refused when two agents share a server
//
// A stdio server's log messages and its requests to the client (sampling,
// elicitation, roots) do not say which of our requests they belong to.
// The frontend keeps, per server, the agents' requests in flight on it
// (direct calls, forwarded requests and the calls of a running script),
// each with the agent connection it came from (front.Peer.Conn). When
// every request in flight on the server comes from one agent, the traffic
// goes to that agent (its most recent request). When several agents have
// requests in flight there, nothing says whose the traffic is, and
// guessing would show one agent's question or data to another agent's
// user: a request is refused with -32601 naming why, a log message is
// dropped (and logged here). With none in flight, a request is refused and
// a log message becomes a front.EventLog, which front delivers only when a
// single session is open.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"sluice/gateway/front"
	"sluice/gateway/mcp"
)

// upstreamCapabilities are the client capabilities sluice serve declares
// upstream: exactly the requests the frontend forwards to an agent.
const upstreamCapabilities = `{"sampling":{},"elicitation":{}}`

// keptIdleServers is how many servers keep their (empty) in-flight set
// between calls, so a call does not build one anew; past it (names come
// from agents' requests, before they are checked) empty sets go.
const keptIdleServers = 64

// track registers p as in flight on server until the returned func runs.
func (f *frontend) track(server string, p front.Peer) func() {
	if p == nil {
		return func() {}
	}
	k := f.trackKey(server, p)
	return func() { f.untrack(server, k) }
}

// trackKey registers p as in flight on server under the key it returns;
// untrack ends that (track without a closure, p not nil).
func (f *frontend) trackKey(server string, p front.Peer) uint64 {
	f.mu.Lock()
	f.seq++
	k := f.seq
	m := f.active[server]
	if m == nil {
		m = map[uint64]front.Peer{}
		f.active[server] = m
	}
	m[k] = p
	f.mu.Unlock()
	return k
}

// untrack ends what trackKey registered.
func (f *frontend) untrack(server string, k uint64) {
	f.mu.Lock()
	delete(f.active[server], k)
	if len(f.active[server]) == 0 && len(f.active) > keptIdleServers {
		delete(f.active, server)
	}
	f.mu.Unlock()
}

// route picks the agent that upstream traffic from server belongs to: the
// most recent request in flight on server when all of them come from one
// agent connection. shared reports requests of several agents in flight
// (p is nil then); with none in flight both are zero.
func (f *frontend) route(server string) (p front.Peer, shared bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var bestK uint64
	conn := ""
	for k, q := range f.active[server] {
		c := q.Conn()
		if p != nil && c != conn {
			return nil, true
		}
		conn = c
		if p == nil || k >= bestK {
			p, bestK = q, k
		}
	}
	return p, false
}

// callerKey carries, in a script's context, the agent whose execute runs
// it, so the script's calls are tracked like direct calls.
type callerKey struct{}

type caller struct {
	f *frontend
	p front.Peer
}

func withCaller(ctx context.Context, f *frontend, p front.Peer) context.Context {
	if p == nil {
		return ctx
	}
	return context.WithValue(ctx, callerKey{}, caller{f, p})
}

// trackCaller registers the agent in ctx (if any) as in flight on server
// until the returned func runs.
func trackCaller(ctx context.Context, server string) func() {
	c, ok := ctx.Value(callerKey{}).(caller)
	if !ok {
		return func() {}
	}
	return c.f.track(server, c.p)
}

// upstreamNotify handles a notification a server sent on its own. It runs
// on the client's dispatch goroutine, before the response of a request that
// follows it, so a call's log messages reach the agent before its result.
func (f *frontend) upstreamNotify(server, method string, params json.RawMessage) {
	switch method {
	case "notifications/message", "notifications/resources/updated":
		// What the agent will read: redacted first (fail-closed: a message
		// that cannot be redacted is dropped).
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		red, err := f.g.RedactJSON(ctx, server+"__"+method, params)
		cancel()
		if err != nil {
			f.log.Warn("an upstream notification was dropped: its redaction failed", "server", server, "method", method, "error", err)
			return
		}
		params = red
	}
	switch method {
	case "notifications/message":
		p, shared := f.route(server)
		if shared {
			f.log.Debug("dropped an upstream log message: several agents have requests in flight on this server", "server", server)
			return
		}
		if p != nil {
			var m struct {
				Level  string          `json:"level"`
				Logger string          `json:"logger"`
				Data   json.RawMessage `json:"data"`
			}
			if json.Unmarshal(params, &m) == nil && m.Level != "" {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := p.Log(ctx, m.Level, m.Logger, m.Data)
				cancel()
				if err != nil {
					f.log.Debug("forwarding an upstream log message failed", "server", server, "error", err.Error())
				}
				return
			}
		}
		f.emit(front.Event{Kind: front.EventLog, Server: server, Params: params})
	case "notifications/resources/updated":
		f.emit(front.Event{Kind: front.EventResourceUpdated, Server: server, Params: params})
	case "notifications/resources/list_changed":
		f.emit(front.Event{Kind: front.EventResourcesChanged, Server: server})
	case "notifications/prompts/list_changed":
		f.emit(front.Event{Kind: front.EventPromptsChanged, Server: server})
	default:
		f.log.Debug("upstream notification not forwarded", "server", server, "method", method)
	}
}

// upstreamRequest forwards a server's request (sampling, elicitation,
// roots) to the agent whose request is in flight on that server.
func (f *frontend) upstreamRequest(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, error) {
	switch method {
	case "sampling/createMessage", "elicitation/create", "roots/list":
	default:
		return nil, mcp.ErrMethodNotFound
	}
	p, shared := f.route(server)
	if shared {
		f.log.Info("refused an upstream request: several agents have requests in flight on this server", "server", server, "method", method)
		return nil, &mcp.RPCError{Code: -32601, Message: fmt.Sprintf("%s: several agents have requests in flight on this server, so sluice cannot tell whose this is; refused rather than shown to the wrong agent", method)}
	}
	if p == nil {
		return nil, &mcp.RPCError{Code: -32601, Message: fmt.Sprintf("%s: no agent request is in flight on this server to forward it to", method)}
	}
	// What the agent (its model, its user) will read: redacted first, as
	// the server's notifications are; a request that cannot be redacted
	// is refused, never relayed as is.
	red := params
	var err error
	if len(bytes.TrimSpace(params)) > 0 {
		red, err = f.g.RedactJSON(ctx, server+"__"+method, params)
	}
	if err != nil {
		f.log.Warn("an upstream request was refused: its redaction failed", "server", server, "method", method, "error", err)
		return nil, &mcp.RPCError{Code: -32603, Message: method + ": the gateway's redaction filters could not clear it, so it was not shown to the agent"}
	}
	res, err := p.Request(ctx, method, red)
	switch {
	case errors.Is(err, front.ErrUnsupported):
		return nil, &mcp.RPCError{Code: -32601, Message: fmt.Sprintf("%s: the agent's client does not support it", method)}
	case err != nil:
		var pe *front.ProtocolError
		if errors.As(err, &pe) {
			return nil, &mcp.RPCError{Code: pe.Code, Message: pe.Message, Data: pe.Data}
		}
		f.log.Info("forwarding an upstream request to the agent failed", "server", server, "method", method, "error", err.Error())
		why := "the agent did not answer"
		if ctx.Err() == nil {
			why = "the agent's answer could not be relayed: " + firstLine(strings.TrimPrefix(err.Error(), "front: "), 300)
		}
		return nil, &mcp.RPCError{Code: -32603, Message: method + ": " + why}
	}
	return res, nil
}
