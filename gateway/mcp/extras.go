package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
)

// Extras are per-request additions for a caller that relays another
// client's request (sluice serve relaying an agent's tools/call). They
// travel on the context so that layers in between (the gateway's admission
// and filters) need not know about them. The zero value changes nothing.
type Extras struct {
	// Method limits Params and InputRequired to requests of this method
	// ("" = every request). A context handed down may also reach requests
	// made on the way, such as the tools/list of a server launched for the
	// call.
	Method string
	// Params is a JSON object whose members are added to the request's
	// params, replacing members of the same name: a 2026-07-28 retry's
	// inputResponses and requestState.
	Params json.RawMessage
	// ClientCapabilities (modern era only) replaces the client capabilities
	// this request declares in _meta: the relayed agent's own, so the
	// server asks only for what the agent can answer.
	ClientCapabilities json.RawMessage
	// Meta is a JSON object whose members are added to params._meta after
	// the client's own (modern era only), e.g.
	// io.modelcontextprotocol/logLevel.
	Meta json.RawMessage
	// InputRequired returns a result with resultType "input_required" as
	// is, for the caller to relay, instead of failing the request.
	InputRequired bool
	// Ordered delivers the response only after every notification that
	// arrived before it has been handed to OnNotification, so a relay
	// forwards a call's log messages before its result. A slow
	// OnNotification then delays the response.
	Ordered bool
}

type extrasKey struct{}

// WithExtras returns a context whose requests carry x.
func WithExtras(ctx context.Context, x Extras) context.Context {
	return context.WithValue(ctx, extrasKey{}, &x)
}

// IsExtrasKey reports whether key is the one WithExtras stores x under. A
// caller's own context type that carries other values of a call already
// can carry its Extras too, sparing WithExtras's two allocations: its
// Value answers a *Extras for this key.
func IsExtrasKey(key any) bool {
	_, ok := key.(extrasKey)
	return ok
}

func extrasFrom(ctx context.Context) *Extras {
	x, _ := ctx.Value(extrasKey{}).(*Extras)
	return x
}

// applyExtras merges x into encoded params (already carrying _meta).
// Members are kept as raw text, so numbers are never re-encoded.
func (c *Client) applyExtras(method string, params json.RawMessage, x *Extras) (json.RawMessage, error) {
	modern := c.Era() == "modern"
	addParams := len(x.Params) > 0 && (x.Method == "" || x.Method == method)
	if !addParams && (!modern || len(x.ClientCapabilities) == 0 && len(x.Meta) == 0) {
		return params, nil
	}
	pm := map[string]json.RawMessage{}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &pm); err != nil {
			return nil, err
		}
	}
	if addParams {
		var add map[string]json.RawMessage
		if err := json.Unmarshal(x.Params, &add); err != nil {
			return nil, errors.New("Extras.Params is not a JSON object")
		}
		for k, v := range add {
			if k != "_meta" {
				pm[k] = v
			}
		}
	}
	if modern && (len(x.ClientCapabilities) > 0 || len(x.Meta) > 0) {
		meta := map[string]json.RawMessage{}
		if raw, ok := pm["_meta"]; ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, &meta); err != nil {
				return nil, errors.New("params._meta is not a JSON object")
			}
		}
		if len(x.Meta) > 0 {
			var add map[string]json.RawMessage
			if err := json.Unmarshal(x.Meta, &add); err != nil {
				return nil, errors.New("Extras.Meta is not a JSON object")
			}
			for k, v := range add {
				meta[k] = v
			}
		}
		if caps := x.ClientCapabilities; len(caps) > 0 {
			if b, err := outboundJSON(caps); err != nil || b[0] != '{' {
				return nil, errors.New("Extras.ClientCapabilities is not a JSON object")
			} else {
				meta[metaClientCapabilities] = b
			}
		}
		mb, err := json.Marshal(meta)
		if err != nil {
			return nil, err
		}
		pm["_meta"] = mb
	}
	return json.Marshal(pm)
}

// relayedMeta builds the params of a modern request relayed for another
// client in one pass, for the common case: the caller adds no _meta of its
// own (neither in params nor as CallOptions.Meta), and the extras carry the
// agent's client capabilities and nothing else for this method. The
// result is what withMeta followed by applyExtras produce, member for
// member (in another order), without decoding and re-encoding params. It
// is appended to dst (the request's envelope, so the line is built in one
// buffer). checked says params are CallTool's own, built from checked
// arguments with name and arguments only: they are not scanned again.
// done is false when the case does not apply.
func (c *Client) relayedMeta(dst []byte, method string, params, extra json.RawMessage, token string, x *Extras, checked bool) (_ []byte, done bool, _ error) {
	if x == nil || len(x.ClientCapabilities) == 0 || len(x.Meta) > 0 || len(extra) > 0 ||
		(len(x.Params) > 0 && (x.Method == "" || x.Method == method)) {
		return nil, false, nil
	}
	c.mu.Lock()
	modern, ours, ver := c.era == EraModern, c.meta, c.metaVer
	sameCaps := c.capsSeen != nil && bytes.Equal(c.capsSeen, x.ClientCapabilities)
	c.mu.Unlock()
	if !modern || ours == nil || ver == nil || len(params) == 0 || string(params) == "null" {
		return nil, false, nil
	}
	p := params
	if !checked {
		var err error
		p, err = outboundJSON(params)
		if err != nil || p[0] != '{' || member(p, "_meta") != nil {
			return nil, false, nil // the general path reports or merges it
		}
	}
	caps := x.ClientCapabilities
	if !sameCaps {
		// An agent sends the same capabilities on every call: they are
		// checked once, and only compared after that.
		var err error
		if caps, err = outboundJSON(x.ClientCapabilities); err != nil || caps[0] != '{' {
			return nil, false, nil
		}
		if len(caps) == len(x.ClientCapabilities) { // sent as they are
			c.mu.Lock()
			c.capsSeen = append(c.capsSeen[:0], caps...)
			c.mu.Unlock()
		}
	}
	out := dst
	if need := len(dst) + len(p) + len(ver) + len(caps) + len(token) + len(c.infoJSON) + 128; cap(out) < need {
		out = make([]byte, len(dst), need)
		copy(out, dst)
	}
	out = append(out, `{"_meta":{`...)
	if token != "" {
		out = append(append(append(out, `"progressToken":`...), token...), ',')
	}
	out = append(out, ver...)
	out = append(out, `,"`+metaClientCapabilities+`":`...)
	out = append(out, caps...)
	out = append(out, `,"`+metaClientInfo+`":`...)
	out = append(out, c.infoJSON...)
	out = append(out, '}')
	rest := bytes.TrimLeft(p[1:], " \t")
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...), true, nil
}
