package admin

// This file turns a tool's input schema into the fields of the call form,
// and the submitted fields back into one JSON object of arguments. Values
// are written as JSON literals as typed: a number stays the text that was
// typed (checked to be a JSON number), never a float64 round trip.

import (
	"bytes"
	"encoding/json"
	"net/url"
	"sort"
	"strings"
)

// Field is one input of the call form.
type Field struct {
	Name        string
	Type        string // string, number, integer, boolean, json (objects, arrays, anything else)
	Required    bool
	Description string
	Enum        []string // for a string with enum
	Default     string   // the schema's default, as JSON text
}

// FormFields lists the schema's top-level properties, required first,
// then by name. A schema that is not an object with properties gives none
// (the form then offers the raw JSON box only).
func FormFields(schema json.RawMessage) []Field {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	var out []Field
	for name, raw := range s.Properties {
		var p struct {
			Type        json.RawMessage   `json:"type"`
			Description string            `json:"description"`
			Enum        []json.RawMessage `json:"enum"`
			Default     json.RawMessage   `json:"default"`
		}
		_ = json.Unmarshal(raw, &p)
		f := Field{Name: name, Required: req[name], Description: p.Description, Type: "json"}
		var t string
		if json.Unmarshal(p.Type, &t) == nil {
			switch t {
			case "string", "number", "integer", "boolean":
				f.Type = t
			}
		}
		if f.Type == "string" {
			for _, e := range p.Enum {
				var v string
				if json.Unmarshal(e, &v) == nil {
					f.Enum = append(f.Enum, v)
				}
			}
		}
		if len(p.Default) > 0 {
			f.Default = string(p.Default)
			var v string
			if f.Type == "string" && json.Unmarshal(p.Default, &v) == nil {
				f.Default = v
			}
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Required != out[j].Required {
			return out[i].Required
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// ArgsFromForm builds the arguments object from the form's "arg.NAME"
// values. An empty optional field is left out; an empty required one is
// an error naming it.
func ArgsFromForm(fields []Field, form url.Values) (json.RawMessage, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	for _, f := range fields {
		v, present := form["arg."+f.Name]
		text := ""
		if present && len(v) > 0 {
			text = v[len(v)-1]
		}
		var lit []byte
		switch f.Type {
		case "boolean":
			if !present && !f.Required {
				continue
			}
			lit = []byte("false")
			if text == "on" || text == "true" {
				lit = []byte("true")
			}
		case "string":
			if text == "" && !f.Required {
				continue
			}
			lit, _ = json.Marshal(text)
		default:
			text = strings.TrimSpace(text)
			if text == "" {
				if f.Required {
					return nil, &FormError{Field: f.Name, Reason: "is required"}
				}
				continue
			}
			if !json.Valid([]byte(text)) {
				return nil, &FormError{Field: f.Name, Reason: "is not valid JSON (" + f.Type + ")"}
			}
			if (f.Type == "number" || f.Type == "integer") && !isNumber(text) {
				return nil, &FormError{Field: f.Name, Reason: "is not a number"}
			}
			if f.Type == "integer" && strings.ContainsAny(text, ".eE") {
				return nil, &FormError{Field: f.Name, Reason: "is not an integer"}
			}
			lit = []byte(text)
		}
		if n > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.Name)
		b.Write(k)
		b.WriteByte(':')
		b.Write(lit)
		n++
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	c := s[0]
	return (c == '-' || (c >= '0' && c <= '9')) && json.Valid([]byte(s))
}
