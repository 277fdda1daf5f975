package mcp

import (
	"encoding/json"
)

// Elicitation defaults (SEP-1034, 2025-11-25): a form field of the
// requested schema may carry a default, which a client shows pre-filled.
// An accepted answer that leaves such a field out therefore means the
// default; the client applies it before the answer goes to the server, so
// a server is not left to guess. Whoever answers (the agent sluice relays
// to, or a hook) may still send any other value: only omitted fields are
// filled, and only for an accepted form elicitation.

// maxDefaultFields bounds the fields one answer is completed with.
const maxDefaultFields = 256

// withElicitDefaults returns res (the answer to an elicitation/create with
// params) with the requested schema's defaults added for the fields the
// answer left out. Anything it cannot read is returned unchanged; values
// keep their text (numbers are not re-encoded).
func withElicitDefaults(params, res json.RawMessage) json.RawMessage {
	var p struct {
		Mode            string `json:"mode"`
		RequestedSchema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"requestedSchema"`
	}
	if json.Unmarshal(params, &p) != nil || p.Mode != "" && p.Mode != "form" || len(p.RequestedSchema.Properties) == 0 || len(p.RequestedSchema.Properties) > maxDefaultFields {
		return res
	}
	var r map[string]json.RawMessage
	if json.Unmarshal(res, &r) != nil || string(r["action"]) != `"accept"` {
		return res
	}
	content := map[string]json.RawMessage{}
	if c, ok := r["content"]; ok && string(c) != "null" {
		if json.Unmarshal(c, &content) != nil {
			return res
		}
	}
	added := false
	for name, schema := range p.RequestedSchema.Properties {
		if _, ok := content[name]; ok {
			continue
		}
		var s struct {
			Default json.RawMessage `json:"default"`
		}
		if json.Unmarshal(schema, &s) != nil || len(s.Default) == 0 || string(s.Default) == "null" {
			continue
		}
		content[name] = s.Default
		added = true
	}
	if !added {
		return res
	}
	c, err := json.Marshal(content)
	if err != nil {
		return res
	}
	r["content"] = c
	out, err := json.Marshal(r)
	if err != nil {
		return res
	}
	return out
}
