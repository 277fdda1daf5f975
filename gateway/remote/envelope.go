package remote

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// envelope is what the transport needs to know about one outbound message.
// Params and results are never decoded beyond these members.
type envelope struct {
	id      []byte // canonical (compacted) id text; nil for a notification
	method  string // "" for a response
	version string // params._meta["io.modelcontextprotocol/protocolVersion"]: a modern request
	name    string // params.name (tools/call, prompts/get) or params.uri (resources/read)
	// cancelled: for notifications/cancelled, the canonical requestId
	cancelled []byte
}

func (e envelope) isRequest() bool      { return e.method != "" && e.id != nil }
func (e envelope) isNotification() bool { return e.method != "" && e.id == nil }

type rawEnvelope struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

type rawParams struct {
	Name      json.RawMessage            `json:"name"`
	URI       json.RawMessage            `json:"uri"`
	RequestID json.RawMessage            `json:"requestId"`
	Meta      map[string]json.RawMessage `json:"_meta"`
}

const metaVersion = "io.modelcontextprotocol/protocolVersion"

func canonID(raw json.RawMessage) []byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return nil
	}
	return b.Bytes()
}

func parseEnvelope(msg []byte) (envelope, error) {
	t := bytes.TrimSpace(msg)
	if len(t) == 0 || t[0] != '{' || !utf8.Valid(t) {
		return envelope{}, ErrBadMessage
	}
	var r rawEnvelope
	if err := json.Unmarshal(t, &r); err != nil {
		return envelope{}, ErrBadMessage
	}
	var e envelope
	e.id = canonID(r.ID)
	if r.Method == nil {
		if e.id == nil && r.Error == nil {
			return envelope{}, ErrBadMessage
		}
		return e, nil
	}
	e.method = *r.Method
	if len(r.Params) > 0 && r.Params[0] == '{' {
		var p rawParams
		if json.Unmarshal(r.Params, &p) == nil {
			if v, ok := p.Meta[metaVersion]; ok {
				_ = json.Unmarshal(v, &e.version)
			}
			var s string
			if json.Unmarshal(p.Name, &s) == nil && s != "" {
				e.name = s
			} else if json.Unmarshal(p.URI, &s) == nil && s != "" {
				e.name = s
			}
			e.cancelled = canonID(p.RequestID)
		}
	}
	return e, nil
}

// inbound describes a received message for matching a request's response.
type inbound struct {
	id       []byte
	response bool
}

func peekInbound(msg []byte) (inbound, bool) {
	var r rawEnvelope
	if err := json.Unmarshal(msg, &r); err != nil {
		return inbound{}, false
	}
	return inbound{id: canonID(r.ID), response: r.Method == nil}, true
}

// errorResponse builds a JSON-RPC error response for id. data, if not nil,
// is a JSON value.
func errorResponse(id []byte, code int, message string, data []byte) []byte {
	b := make([]byte, 0, 96+len(message)+len(data))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	if id == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, id...)
	}
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	m, _ := json.Marshal(message)
	b = append(b, m...)
	if data != nil {
		b = append(b, `,"data":`...)
		b = append(b, data...)
	}
	b = append(b, "}}"...)
	return b
}

// rpcErrorBody extracts a JSON-RPC error object from an HTTP error body, if
// it is one: modern servers answer header and version problems with 400
// and a JSON-RPC error (-32020, -32022), which the client must see as such.
func rpcErrorBody(body []byte) (id []byte, errObj json.RawMessage, ok bool) {
	t := bytes.TrimSpace(body)
	if len(t) == 0 || t[0] != '{' {
		return nil, nil, false
	}
	var r rawEnvelope
	if json.Unmarshal(t, &r) != nil || len(r.Error) == 0 || r.Error[0] != '{' {
		return nil, nil, false
	}
	var probe struct {
		Code *json.Number `json:"code"`
	}
	if json.Unmarshal(r.Error, &probe) != nil || probe.Code == nil {
		return nil, nil, false
	}
	return canonID(r.ID), r.Error, true
}

// withID re-addresses an error object to id.
func withID(id []byte, errObj json.RawMessage) []byte {
	b := make([]byte, 0, 40+len(id)+len(errObj))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":`...)
	var c bytes.Buffer
	if json.Compact(&c, errObj) == nil {
		b = append(b, c.Bytes()...)
	} else {
		b = append(b, errObj...)
	}
	return append(b, '}')
}
