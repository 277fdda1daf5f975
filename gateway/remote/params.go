package remote

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// paramHeader is one x-mcp-header declaration of a tool: the argument
// whose value is mirrored into the Mcp-Param-<Name> request header
// (2026-07-28 streamable HTTP, SEP-2243).
type paramHeader struct {
	arg, header string
}

const maxParamHeaders = 32

// toolHeaders reads a tool's x-mcp-header declarations. ok is false when a
// declaration is invalid (not an HTTP token, declared twice ignoring case,
// or on an argument that is not a string, integer or boolean): such a tool
// cannot be called correctly and is withheld from the listing.
func toolHeaders(inputSchema json.RawMessage) (hs []paramHeader, ok bool) {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if len(inputSchema) == 0 || json.Unmarshal(inputSchema, &s) != nil {
		return nil, true
	}
	seen := map[string]bool{}
	for arg, raw := range s.Properties {
		var p struct {
			Header *json.RawMessage `json:"x-mcp-header"`
			Type   json.RawMessage  `json:"type"`
		}
		if json.Unmarshal(raw, &p) != nil || p.Header == nil {
			continue
		}
		var name string
		if json.Unmarshal(*p.Header, &name) != nil || name == "" || len(name) > 64 {
			return nil, false
		}
		for i := 0; i < len(name); i++ {
			c := name[i]
			if c <= 0x20 || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
				return nil, false
			}
		}
		var typ string
		if json.Unmarshal(p.Type, &typ) != nil || (typ != "string" && typ != "integer" && typ != "boolean") {
			return nil, false
		}
		if seen[strings.ToLower(name)] || len(hs) == maxParamHeaders {
			return nil, false
		}
		seen[strings.ToLower(name)] = true
		hs = append(hs, paramHeader{arg: arg, header: name})
	}
	return hs, true
}

// noteTools records the header declarations of a tools/list result and
// returns the message with invalid tools removed (the rest byte for byte).
func (c *Conn) noteTools(msg []byte) []byte {
	var env map[string]json.RawMessage
	if json.Unmarshal(msg, &env) != nil || len(env["result"]) == 0 {
		return msg
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(env["result"], &res) != nil {
		return msg
	}
	var tools []json.RawMessage
	if json.Unmarshal(res["tools"], &tools) != nil {
		return msg
	}
	kept := tools[:0:0]
	dropped := 0
	c.mu.Lock()
	if c.params == nil {
		c.params = map[string][]paramHeader{}
	}
	for _, t := range tools {
		var tt struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if json.Unmarshal(t, &tt) != nil {
			kept = append(kept, t)
			continue
		}
		hs, ok := toolHeaders(tt.InputSchema)
		if !ok {
			dropped++
			delete(c.params, tt.Name)
			continue
		}
		if len(hs) > 0 {
			c.params[tt.Name] = hs
		} else {
			delete(c.params, tt.Name)
		}
		kept = append(kept, t)
	}
	c.mu.Unlock()
	if dropped == 0 {
		return msg
	}
	c.log.Warn("withheld tools whose x-mcp-header declarations are invalid", "count", dropped)
	b, err := json.Marshal(kept)
	if err != nil {
		return msg
	}
	res["tools"] = b
	if env["result"], err = json.Marshal(res); err != nil {
		return msg
	}
	out, err := json.Marshal(env)
	if err != nil {
		return msg
	}
	return out
}

// paramHeaders returns the Mcp-Param-* headers of a tools/call message.
func (c *Conn) paramHeaders(tool string, msg []byte) [][2]string {
	c.mu.Lock()
	hs := c.params[tool]
	c.mu.Unlock()
	if len(hs) == 0 {
		return nil
	}
	var m struct {
		Params struct {
			Arguments map[string]json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil {
		return nil
	}
	var out [][2]string
	for _, h := range hs {
		raw := bytes.TrimSpace(m.Params.Arguments[h.arg])
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var v string
		switch {
		case raw[0] == '"':
			if json.Unmarshal(raw, &v) != nil {
				continue
			}
			v = headerValue(v)
		case string(raw) == "true" || string(raw) == "false":
			v = string(raw)
		default:
			if _, err := strconv.ParseInt(string(raw), 10, 64); err != nil {
				continue
			}
			v = string(raw)
		}
		out = append(out, [2]string{"Mcp-Param-" + h.header, v})
	}
	return out
}
