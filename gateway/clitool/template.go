package clitool

import (
	"fmt"
	"strings"
)

// Caps on templates.
const (
	MaxElems     = 256 // argv elements in one template, groups' included
	MaxElemBytes = 4096
	MaxDepth     = 8 // nesting of optional groups
)

// Elem is one argv template element: either Text (literal text mixed with
// {name} placeholders, or exactly "{name...}") or, when Group is non-nil,
// an optional group of elements.
type Elem struct {
	Text  string
	Group []Elem
}

// node is a compiled Elem.
type node struct {
	field   string // "argv[3]" or "argv[3][1]"
	segs    []seg  // text element
	literal bool   // no placeholder: segs is one literal (or empty)
	expand  *param // "{name...}"
	group   []node
	isGroup bool
	// direct lists the params deciding a group: those placed in its own
	// elements (not in nested groups).
	direct []*param
}

// seg is a literal (p == nil) or a placeholder.
type seg struct {
	lit string
	p   *param
}

// rawSeg is a parsed piece of element text: a literal, or a placeholder
// by name.
type rawSeg struct {
	lit    string
	name   string
	expand bool // {name...}
	ph     bool
}

// Literal is the text an element without a placeholder passes (its
// "{{name}}" read as "{name}"); false for one with a placeholder.
func Literal(text string) (string, bool) {
	var b strings.Builder
	for _, r := range parseText(text) {
		if r.ph {
			return "", false
		}
		b.WriteString(r.lit)
	}
	return b.String(), true
}

// parseText splits one element's text into segments. A placeholder is
// {name} or {name...} with name an identifier; "{{name}}" is the literal
// text "{name}"; every other brace is literal, so `{{.Name}}` (a Go
// template) or `a{b` need no escaping.
func parseText(s string) []rawSeg {
	var segs []rawSeg
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			segs = append(segs, rawSeg{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		if s[i] != '{' {
			lit.WriteByte(s[i])
			i++
			continue
		}
		if strings.HasPrefix(s[i:], "{{") {
			if n, ok := placeholderAt(s[i+1:]); ok && strings.HasPrefix(s[i+1+n:], "}") {
				lit.WriteString(s[i+1 : i+1+n]) // {{name}}: the literal {name}
				i += n + 2
				continue
			}
		}
		n, ok := placeholderAt(s[i:])
		if !ok {
			lit.WriteByte('{')
			i++
			continue
		}
		name, dots := strings.CutSuffix(s[i+1:i+n-1], "...")
		flush()
		segs = append(segs, rawSeg{name: name, expand: dots, ph: true})
		i += n
	}
	flush()
	return segs
}

// placeholderAt reports whether s starts with {ident} or {ident...}, and
// its length in bytes.
func placeholderAt(s string) (int, bool) {
	if len(s) < 3 || s[0] != '{' {
		return 0, false
	}
	end := strings.IndexByte(s, '}')
	if end < 0 {
		return 0, false
	}
	name := strings.TrimSuffix(s[1:end], "...")
	if !nameRe().MatchString(name) {
		return 0, false
	}
	return end + 1, true
}

type compiler struct {
	tool   string
	params map[string]*param
	used   map[string]bool
	count  int
}

func (c *compiler) errf(field, fix, format string, a ...any) error {
	return &SpecError{Tool: c.tool, Field: field, Msg: fmt.Sprintf(format, a...), Fix: fix}
}

// elems compiles a list of elements at a nesting depth; offset is the
// index of es[0] in its list (argv[0] is compiled apart).
func (c *compiler) elems(es []Elem, field string, depth, offset int) ([]node, []*param, error) {
	out := make([]node, 0, len(es))
	var direct []*param
	for i, e := range es {
		f := fmt.Sprintf("%s[%d]", field, i+offset)
		c.count++
		if c.count > MaxElems {
			return nil, nil, c.errf(f, fmt.Sprintf("keep at most %d elements", MaxElems), "argv has more than %d elements", MaxElems)
		}
		if e.Group != nil {
			if e.Text != "" {
				return nil, nil, c.errf(f, "", "internal: an element is either text or a group")
			}
			if depth+1 > MaxDepth {
				return nil, nil, c.errf(f, fmt.Sprintf("nest groups at most %d deep", MaxDepth), "optional groups nested too deep")
			}
			if len(e.Group) == 0 {
				return nil, nil, c.errf(f, "remove the empty list, or put elements in it", "an optional group is empty")
			}
			g, gd, err := c.elems(e.Group, f, depth+1, 0)
			if err != nil {
				return nil, nil, err
			}
			if len(gd) == 0 {
				return nil, nil, c.errf(f, "put a {name} placeholder in the group; it is rendered only when that input has a value (a boolean: when true)", "an optional group has no placeholder to decide it")
			}
			out = append(out, node{field: f, group: g, isGroup: true, direct: gd})
			continue
		}
		if len(e.Text) > MaxElemBytes {
			return nil, nil, c.errf(f, fmt.Sprintf("keep each element at most %d bytes", MaxElemBytes), "element is %d bytes", len(e.Text))
		}
		if strings.IndexByte(e.Text, 0) >= 0 {
			return nil, nil, c.errf(f, "remove the NUL character", "element contains NUL")
		}
		raw := parseText(e.Text)
		n := node{field: f, literal: true}
		for _, r := range raw {
			if !r.ph {
				n.segs = append(n.segs, seg{lit: r.lit})
				continue
			}
			name := r.name
			n.literal = false
			p, ok := c.params[name]
			if !ok {
				return nil, nil, c.errf(f, fmt.Sprintf("declare it under input, or write {{%s}} for the literal text", name), "placeholder {%s} names no input", name)
			}
			c.used[name] = true
			direct = append(direct, p)
			switch {
			case r.expand:
				if len(raw) != 1 {
					return nil, nil, c.errf(f, fmt.Sprintf("make \"{%s...}\" an element of its own", name), "{%s...} expands to one element per item, so it cannot be mixed with other text", name)
				}
				if p.Type != TypeArray {
					return nil, nil, c.errf(f, fmt.Sprintf("write {%s}, or make the input an array", name), "{%s...} needs an array input; %s is %s", name, name, article(p.Type))
				}
				n.expand = p
			case p.Type == TypeArray:
				return nil, nil, c.errf(f, fmt.Sprintf("write \"{%s...}\" as an element of its own", name), "input %s is an array; expand it with {%s...}", name, name)
			}
			if depth == 0 && !p.Required && p.def == nil && p.Type != TypeArray {
				return nil, nil, c.errf(f, fmt.Sprintf("put it in an optional group, e.g. [\"--%s={%s}\"], or make the input required or give it a default", name, name), "placeholder {%s} is outside any optional group but may have no value", name)
			}
			n.segs = append(n.segs, seg{p: p})
		}
		out = append(out, n)
	}
	return out, direct, nil
}
