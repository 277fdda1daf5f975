package sandbox

// This file holds the small JSON Schema subset used to check tool arguments
// before a call and to render signatures: type, enum, const, properties,
// required, additionalProperties, items / prefixItems, anyOf / oneOf,
// nullable, default. Anything else ($ref, formats, bounds) is accepted, not
// checked: the tool checks again, and a false refusal would be worse than a
// late one.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

type schema struct {
	types       []string // JSON types allowed; empty = any
	enum        []json.RawMessage
	props       []prop // in declaration order
	required    []string
	addlFalse   bool // additionalProperties: false
	addlGiven   bool // additionalProperties present (true or a schema or false)
	items       *schema
	prefixItems []*schema
	anyOf       []*schema
	description string
	def         json.RawMessage
	open        bool // $ref or unparseable: accept anything
}

type prop struct {
	name string
	s    *schema
}

func (s *schema) prop(name string) *schema {
	for _, p := range s.props {
		if p.name == name {
			return p.s
		}
	}
	return nil
}

// parseSchema parses raw (nil or invalid = open schema).
func parseSchema(raw json.RawMessage) *schema {
	s, err := parseSchemaDepth(raw, 0)
	if err != nil {
		return &schema{open: true}
	}
	return s
}

func parseSchemaDepth(raw json.RawMessage, depth int) (*schema, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "true" || string(raw) == "{}" {
		return &schema{open: true}, nil
	}
	if depth > 32 {
		return &schema{open: true}, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	s := &schema{}
	if _, ok := m["$ref"]; ok {
		s.open = true
	}
	if t, ok := m["type"]; ok {
		var one string
		if json.Unmarshal(t, &one) == nil {
			s.types = []string{one}
		} else {
			_ = json.Unmarshal(t, &s.types)
		}
	}
	if n, ok := m["nullable"]; ok && string(n) == "true" && len(s.types) > 0 {
		s.types = append(s.types, "null")
	}
	if e, ok := m["enum"]; ok {
		_ = json.Unmarshal(e, &s.enum)
	}
	if c, ok := m["const"]; ok {
		s.enum = []json.RawMessage{c}
	}
	if d, ok := m["description"]; ok {
		_ = json.Unmarshal(d, &s.description)
	}
	if d, ok := m["default"]; ok {
		s.def = d
	}
	if p, ok := m["properties"]; ok {
		keys, err := orderedKeys(p)
		if err != nil {
			return nil, err
		}
		var pm map[string]json.RawMessage
		if err := json.Unmarshal(p, &pm); err != nil {
			return nil, err
		}
		for _, k := range keys {
			ps, err := parseSchemaDepth(pm[k], depth+1)
			if err != nil {
				ps = &schema{open: true}
			}
			s.props = append(s.props, prop{k, ps})
		}
	}
	if r, ok := m["required"]; ok {
		_ = json.Unmarshal(r, &s.required)
	}
	if a, ok := m["additionalProperties"]; ok {
		s.addlGiven = true
		s.addlFalse = string(bytes.TrimSpace(a)) == "false"
	}
	if it, ok := m["items"]; ok {
		if b := bytes.TrimSpace(it); len(b) > 0 && b[0] == '[' { // draft-07 tuple form
			var list []json.RawMessage
			_ = json.Unmarshal(b, &list)
			for _, x := range list {
				xs, _ := parseSchemaDepth(x, depth+1)
				if xs == nil {
					xs = &schema{open: true}
				}
				s.prefixItems = append(s.prefixItems, xs)
			}
		} else if xs, err := parseSchemaDepth(it, depth+1); err == nil {
			s.items = xs
		}
	}
	if pi, ok := m["prefixItems"]; ok { // 2020-12
		var list []json.RawMessage
		_ = json.Unmarshal(pi, &list)
		for _, x := range list {
			xs, _ := parseSchemaDepth(x, depth+1)
			if xs == nil {
				xs = &schema{open: true}
			}
			s.prefixItems = append(s.prefixItems, xs)
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if a, ok := m[key]; ok {
			var list []json.RawMessage
			_ = json.Unmarshal(a, &list)
			for _, x := range list {
				if xs, err := parseSchemaDepth(x, depth+1); err == nil {
					s.anyOf = append(s.anyOf, xs)
				}
			}
		}
	}
	return s, nil
}

// orderedKeys returns the keys of a JSON object in source order.
func orderedKeys(raw json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not an object")
	}
	var keys []string
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := kt.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// strictTop reports whether unknown top-level argument names are errors:
// when additionalProperties is false, or when properties are declared and
// additionalProperties is not given at all (tools rarely accept arguments
// they do not declare, and a misspelt name silently ignored is worse).
func (s *schema) strictTop() bool {
	return !s.open && (s.addlFalse || (len(s.props) > 0 && !s.addlGiven))
}

// jsonType names the JSON type of a Starlark value.
func jsonType(v starlark.Value) string {
	switch x := v.(type) {
	case starlark.NoneType:
		return "null"
	case starlark.Bool:
		return "boolean"
	case starlark.Int:
		return "integer"
	case starlark.Float:
		return "number"
	case starlark.String:
		return "string"
	case *starlark.List, starlark.Tuple:
		return "array"
	case *starlark.Dict:
		if _, ok := literalText(x); ok {
			return "number"
		}
		return "object"
	case *starlarkstruct.Struct:
		return "object"
	}
	return v.Type()
}

func typeMatches(t string, v starlark.Value) bool {
	got := jsonType(v)
	switch t {
	case got:
		return true
	case "number":
		return got == "integer"
	case "integer":
		if f, ok := v.(starlark.Float); ok {
			return float64(f) == float64(int64(f))
		}
	}
	return false
}

// validate checks v against s; path names the argument for messages.
func (s *schema) validate(v starlark.Value, path string) error {
	if s == nil || s.open {
		return nil
	}
	if len(s.anyOf) > 0 {
		var first error
		ok := false
		for _, a := range s.anyOf {
			if err := a.validate(v, path); err == nil {
				ok = true
				break
			} else if first == nil {
				first = err
			}
		}
		if !ok {
			return fmt.Errorf("%s matches none of the allowed forms (%s): %v", path, s.pyType(), first)
		}
	}
	if len(s.types) > 0 {
		ok := false
		for _, t := range s.types {
			if typeMatches(t, v) {
				ok = true
				break
			}
		}
		if !ok {
			return fmt.Errorf("%s must be %s, got %s", path, strings.Join(s.types, " or "), jsonType(v))
		}
	}
	if len(s.enum) > 0 {
		got, err := toJSON(v, 1<<16)
		if err == nil {
			found := false
			for _, e := range s.enum {
				if jsonEqual(got, e) {
					found = true
					break
				}
			}
			if !found {
				alts := make([]string, 0, len(s.enum))
				for _, e := range s.enum {
					alts = append(alts, string(e))
				}
				return fmt.Errorf("%s must be one of %s, got %s", path, strings.Join(alts, ", "), got)
			}
		}
	}
	switch x := v.(type) {
	case *starlark.Dict:
		if _, lit := literalText(x); lit {
			return nil
		}
		present := map[string]bool{}
		for _, kv := range x.Items() {
			k, ok := kv[0].(starlark.String)
			if !ok {
				return fmt.Errorf("%s has a %s key; object keys must be strings", path, kv[0].Type())
			}
			present[string(k)] = true
			if ps := s.prop(string(k)); ps != nil {
				if err := ps.validate(kv[1], path+"."+string(k)); err != nil {
					return err
				}
			} else if s.addlFalse {
				return fmt.Errorf("%s has unknown field %q%s", path, string(k), s.suggest(string(k)))
			}
		}
		for _, r := range s.required {
			if !present[r] {
				return fmt.Errorf("%s is missing required field %q", path, r)
			}
		}
	case *starlark.List, starlark.Tuple:
		seq := x.(starlark.Indexable)
		for i := 0; i < seq.Len(); i++ {
			es := s.items
			if i < len(s.prefixItems) {
				es = s.prefixItems[i]
			}
			if es != nil {
				if err := es.validate(seq.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// validateArgs checks the top-level argument dict of a tool call.
func (s *schema) validateArgs(fn string, args *starlark.Dict) error {
	if s == nil || s.open {
		return nil
	}
	present := map[string]bool{}
	for _, kv := range args.Items() {
		k, ok := kv[0].(starlark.String)
		if !ok {
			return fmt.Errorf("%s: argument names must be strings, got %s", fn, kv[0].Type())
		}
		name := string(k)
		present[name] = true
		ps := s.prop(name)
		if ps == nil {
			if s.strictTop() {
				return fmt.Errorf("%s: unknown argument %q%s", fn, name, s.suggest(name))
			}
			continue
		}
		if err := ps.validate(kv[1], "argument '"+name+"'"); err != nil {
			return fmt.Errorf("%s: %v", fn, err)
		}
	}
	var missing []string
	for _, r := range s.required {
		if !present[r] {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: missing required argument %s (signature: %s)", fn, quoteList(missing), s.params())
	}
	return nil
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return strings.Join(q, ", ")
}

// suggest returns ` (did you mean "x"?; known: a, b)` for an unknown name.
func (s *schema) suggest(name string) string {
	names := make([]string, 0, len(s.props))
	for _, p := range s.props {
		names = append(names, p.name)
	}
	if best := closest(name, names); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	if len(names) > 0 {
		return " (known: " + strings.Join(names, ", ") + ")"
	}
	return ""
}

// closest returns the candidate within edit distance 2 (or a
// case-insensitive match), or "".
func closest(name string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if strings.EqualFold(c, name) {
			return c
		}
		if d := editDistance(name, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (by bytes; 99 for
// words over 64 bytes). The gateway's own suggestions use
// gateway/internal/suggest; the sandbox is a leaf and keeps this copy.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// jsonEqual compares two JSON texts semantically (numbers by value).
func jsonEqual(a, b []byte) bool {
	va, erra := fromJSON(a)
	vb, errb := fromJSON(b)
	if erra != nil || errb != nil {
		return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
	}
	return valuesEqual(va, vb)
}

func valuesEqual(a, b starlark.Value) bool {
	if ta, ok := literalText(a); ok {
		if tb, ok := literalText(b); ok {
			return sameDecimal(ta, tb)
		}
	}
	if isNum(a) && isNum(b) {
		return sameDecimal(numText(a), numText(b))
	}
	eq, err := starlark.Equal(a, b)
	return err == nil && eq
}

func isNum(v starlark.Value) bool {
	switch v.(type) {
	case starlark.Int, starlark.Float:
		return true
	}
	_, ok := literalText(v)
	return ok
}

func numText(v starlark.Value) string {
	b, _ := toJSON(v, 0)
	return string(b)
}

// pyType renders s as a Python-style type for signatures.
func (s *schema) pyType() string {
	if s == nil || s.open && len(s.types) == 0 {
		return "Any"
	}
	var parts []string
	add := func(t string) {
		for _, p := range parts {
			if p == t {
				return
			}
		}
		parts = append(parts, t)
	}
	for _, t := range s.types {
		switch t {
		case "string":
			add("str")
		case "integer":
			add("int")
		case "number":
			add("float")
		case "boolean":
			add("bool")
		case "null":
			add("None")
		case "object":
			add("dict")
		case "array":
			if s.items != nil && !s.items.open {
				add("list[" + s.items.pyType() + "]")
			} else {
				add("list")
			}
		default:
			add("Any")
		}
	}
	for _, a := range s.anyOf {
		for _, p := range strings.Split(a.pyType(), " | ") {
			add(p)
		}
	}
	if lit := s.literalType(); lit != "" && (len(parts) == 0 || len(parts) == 1 && parts[0] == "str") {
		return lit
	}
	if len(parts) == 0 {
		if len(s.props) > 0 {
			return "dict"
		}
		return "Any"
	}
	return strings.Join(parts, " | ")
}

// literalType renders a short enum of strings as Literal["a", "b"].
func (s *schema) literalType() string {
	if len(s.enum) == 0 || len(s.enum) > 8 {
		return ""
	}
	vals := make([]string, 0, len(s.enum))
	for _, e := range s.enum {
		var str string
		if json.Unmarshal(e, &str) != nil || len(str) > 40 {
			return ""
		}
		vals = append(vals, strconv.Quote(str))
	}
	return "Literal[" + strings.Join(vals, ", ") + "]"
}

// returnsHint renders the top-level fields of an object output schema:
// "{rows: list, sql: str}" (at most 10 fields).
func (s *schema) returnsHint() string {
	if s == nil || len(s.props) == 0 {
		return ""
	}
	var parts []string
	for i, p := range s.props {
		if i == 10 {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, p.name+": "+p.s.pyType())
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// params renders the parameter list: required first (declaration order),
// then optional ones with their default (or None).
func (s *schema) params() string {
	if s == nil || s.open && len(s.props) == 0 {
		return "**kwargs"
	}
	req := map[string]bool{}
	for _, r := range s.required {
		req[r] = true
	}
	var out []string
	for _, p := range s.props {
		if req[p.name] {
			out = append(out, Ident(p.name)+": "+p.s.pyType())
		}
	}
	for _, p := range s.props {
		if !req[p.name] {
			out = append(out, Ident(p.name)+": "+p.s.pyType()+" = "+defaultLiteral(p.s.def))
		}
	}
	if !s.addlFalse && (s.addlGiven || len(s.props) == 0) {
		out = append(out, "**kwargs")
	}
	return strings.Join(out, ", ")
}

// defaultLiteral renders a JSON default as a short Starlark literal.
func defaultLiteral(def json.RawMessage) string {
	d := strings.TrimSpace(string(def))
	switch {
	case d == "" || d == "null":
		return "None"
	case d == "true":
		return "True"
	case d == "false":
		return "False"
	case len(d) <= 40 && (d[0] == '"' || d[0] == '-' || (d[0] >= '0' && d[0] <= '9')):
		return d
	}
	return "None"
}

// sortedKeys is a small helper for deterministic output.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
