package gateway

// This file routes traffic an upstream server starts on its own (log
// messages, list changes, sampling, elicitation and roots requests) to the
// agent whose request is in flight on that server.
//
// # Why upstream traffic goes to the most recent call on that server
//
// A stdio server's log messages and its requests to the client (sampling,
// elicitation, roots) do not say which of our requests they belong to. The
// Frontend keeps, per server, the agents' requests in flight on it and
// hands such traffic to the most recent one; with none in flight, a log
// message goes to every session (front.EventLog) and a request is refused
// with -32601, never left waiting.

import (
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
// upstream: exactly the requests the Frontend forwards to an agent.
const upstreamCapabilities = `{"sampling":{},"elicitation":{}}`

// track registers p as in flight on server until the returned func runs.
func (f *Frontend) track(server string, p front.Peer) func() {
	if p == nil {
		return func() {}
	}
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
	return func() {
		f.mu.Lock()
		delete(f.active[server], k)
		if len(f.active[server]) == 0 {
			delete(f.active, server)
		}
		f.mu.Unlock()
	}
}

// current is the most recent request in flight on server, or nil.
func (f *Frontend) current(server string) front.Peer {
	f.mu.Lock()
	defer f.mu.Unlock()
	var best front.Peer
	var bestK uint64
	for k, p := range f.active[server] {
		if k >= bestK {
			best, bestK = p, k
		}
	}
	return best
}

// upstreamNotify handles a notification a server sent on its own. It runs
// on the client's dispatch goroutine, before the response of a request that
// follows it, so a call's log messages reach the agent before its result.
func (f *Frontend) upstreamNotify(server, method string, params json.RawMessage) {
	switch method {
	case "notifications/message":
		if p := f.current(server); p != nil {
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
func (f *Frontend) upstreamRequest(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, error) {
	switch method {
	case "sampling/createMessage", "elicitation/create", "roots/list":
	default:
		return nil, mcp.ErrMethodNotFound
	}
	p := f.current(server)
	if p == nil {
		return nil, &mcp.RPCError{Code: -32601, Message: fmt.Sprintf("%s: no agent request is in flight on this server to forward it to", method)}
	}
	res, err := p.Request(ctx, method, params)
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
