package config

import (
	"bytes"
	"sort"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// hiddenPart stands, in a shown line, for the part of a masked value that
// its masked form does not replace (the later lines of a value written
// over several lines); it is the listings' marker.
const hiddenPart = "(hidden)"

// span is a byte range of one line, shown as text.
type span struct {
	from, to int
	text     string
}

// nodeSpans adds to out, keyed by a line's text (without its line break),
// the spans of data's lines that hold a value m hides: every env and
// header value, arg and url of a server whose masked form differs from it,
// and an oauth block's literal clientSecret and privateKey; found is
// told each such value and its masked form. A value is located by its
// YAML node and its token's extent in the source (the quotes and escapes
// of a quoted scalar, every line of a block scalar or of a plain scalar
// written over several lines), so the way the file writes it does not
// decide whether it is shown.
//
// # Why by node
//
// The value as decoded is often not the text of the file: 'it”s',
// "pa\"ss", "\x41", a | block. A text search for the decoded value misses
// those, and the removed line of an update would show the credential.
func (m *ShownMask) nodeSpans(data []byte, out map[string][]span, found func(value, shown string)) {
	if len(data) == 0 {
		return
	}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil {
		return
	}
	type masked struct {
		n     *yaml.Node
		shown string
	}
	var hide []masked
	add := func(n *yaml.Node, shown string) {
		if n.Kind == yaml.ScalarNode && shown != n.Value {
			hide = append(hide, masked{n, shown})
		}
	}
	for _, srv := range pairsOf(rootMapping(&doc), "servers") {
		var command string
		var args []*yaml.Node
		for i := 0; i+1 < len(srv.Content); i += 2 {
			k, v := srv.Content[i], resolved(srv.Content[i+1])
			switch k.Value {
			case "command":
				command = v.Value
			case "args":
				if v.Kind == yaml.SequenceNode {
					args = v.Content
				}
			case "env", "headers":
				if v.Kind == yaml.MappingNode {
					for j := 0; j+1 < len(v.Content); j += 2 {
						e := resolved(v.Content[j+1])
						add(e, m.Value(v.Content[j].Value, e.Value))
					}
				}
			case "url":
				add(v, m.URL(v.Value))
			case "oauth":
				for j := 0; j+1 < len(v.Content) && v.Kind == yaml.MappingNode; j += 2 {
					if k := v.Content[j].Value; k == "clientSecret" || k == "privateKey" {
						e := resolved(v.Content[j+1])
						add(e, m.oauthShown(k, e.Value))
					}
				}
			case "cli":
				for _, tool := range pairsOf(v, "tools") {
					for j := 0; j+1 < len(tool.Content); j += 2 {
						if tool.Content[j].Value != "argv" {
							continue
						}
						elems := argvScalars(resolved(tool.Content[j+1]), nil, 0)
						texts := make([]string, len(elems))
						for i, e := range elems {
							texts[i] = e.Value
						}
						for i, shown := range m.argvShown(texts) {
							if shown != "" {
								add(elems[i], shown)
							}
						}
					}
				}
			}
		}
		if len(args) > 0 {
			vals := make([]string, len(args))
			for i, a := range args {
				args[i] = resolved(a)
				vals[i] = args[i].Value
			}
			shown := m.Args(command, vals)
			for i, a := range args {
				if i < len(shown) {
					add(a, shown[i])
				}
			}
		}
	}
	if len(hide) == 0 {
		return
	}
	for _, h := range hide {
		found(h.n.Value, h.shown)
	}
	src := newSource(data)
	if src.odd {
		// Line breaks YAML counts that a diff's lines do not: no position
		// can be trusted, so every line's value part is hidden.
		for l := range src.starts {
			line := src.line(l)
			if from := valuePart(line); strings.TrimSpace(line[from:]) != "" {
				out[line] = append(out[line], span{from, len(line), hiddenPart})
			}
		}
		return
	}
	var pos []int
	walkNodes(&doc, func(n *yaml.Node) {
		if o, ok := src.offset(n.Line, n.Column); ok {
			pos = append(pos, o)
		}
	})
	sort.Ints(pos)
	for _, h := range hide {
		o, ok := src.offset(h.n.Line, h.n.Column)
		if !ok {
			continue
		}
		bound := len(data)
		if i := sort.SearchInts(pos, o+1); i < len(pos) {
			bound = pos[i]
		}
		shown := h.shown
		if strings.ContainsAny(shown, "\r\n") {
			shown = scalar(shown)
		}
		end, exact := src.tokenEnd(h.n, o, bound)
		src.spans(o, end, exact, shown, out)
	}
}

// argvScalars appends to out the scalars of a cli tool's argv template in
// order, the elements of its optional groups (nested lists) in place, as
// clitool flattens it.
func argvScalars(n *yaml.Node, out []*yaml.Node, depth int) []*yaml.Node {
	switch {
	case n.Kind == yaml.ScalarNode:
		return append(out, n)
	case n.Kind == yaml.SequenceNode && depth < 8:
		for _, c := range n.Content {
			out = argvScalars(resolved(c), out, depth+1)
		}
	}
	return out
}

// rootMapping is the document's top mapping, or nil.
func rootMapping(doc *yaml.Node) *yaml.Node {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	return n
}

// pairsOf is the mapping values of the mapping under key in m.
func pairsOf(m *yaml.Node, key string) []*yaml.Node {
	if m == nil {
		return nil
	}
	var out []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != key {
			continue
		}
		v := resolved(m.Content[i+1])
		for j := 0; j+1 < len(v.Content) && v.Kind == yaml.MappingNode; j += 2 {
			if s := resolved(v.Content[j+1]); s.Kind == yaml.MappingNode {
				out = append(out, s)
			}
		}
	}
	return out
}

// resolved follows an alias to the node it names (where the value is
// written).
func resolved(n *yaml.Node) *yaml.Node {
	for i := 0; i < 8 && n.Kind == yaml.AliasNode && n.Alias != nil; i++ {
		n = n.Alias
	}
	return n
}

func walkNodes(n *yaml.Node, fn func(*yaml.Node)) {
	if n.Kind != yaml.DocumentNode {
		fn(n)
	}
	for _, c := range n.Content {
		walkNodes(c, fn)
	}
}

// source is a file's bytes with the offsets of its lines.
type source struct {
	data   []byte
	starts []int
	odd    bool // a line break other than \n and \r\n, or a byte order mark
}

func newSource(data []byte) *source {
	s := &source{data: data, starts: []int{0}}
	for i, c := range data {
		if c == '\n' && i+1 < len(data) {
			s.starts = append(s.starts, i+1)
		}
		if c == '\r' && (i+1 == len(data) || data[i+1] != '\n') {
			s.odd = true
		}
	}
	s.odd = s.odd || bytes.HasPrefix(data, []byte("\uFEFF")) || bytes.Contains(data, []byte("\u0085")) ||
		bytes.Contains(data, []byte("\u2028")) || bytes.Contains(data, []byte("\u2029"))
	return s
}

// lineEnd is the offset of line l's break (its \r\n or \n), or the end.
func (s *source) lineEnd(l int) int {
	e := len(s.data)
	if i := bytes.IndexByte(s.data[s.starts[l]:], '\n'); i >= 0 {
		e = s.starts[l] + i
		if e > s.starts[l] && s.data[e-1] == '\r' {
			e--
		}
	}
	return e
}

func (s *source) line(l int) string { return string(s.data[s.starts[l]:s.lineEnd(l)]) }

// lineOf is the line holding offset o.
func (s *source) lineOf(o int) int { return sort.SearchInts(s.starts, o+1) - 1 }

// offset is the byte offset of a node's 1-based line and column (YAML
// counts columns in characters).
func (s *source) offset(line, col int) (int, bool) {
	if line < 1 || line > len(s.starts) || col < 1 {
		return 0, false
	}
	i, end := s.starts[line-1], s.lineEnd(line-1)
	for c := 1; c < col; c++ {
		if i >= end {
			return 0, false
		}
		_, w := utf8.DecodeRune(s.data[i:end])
		i += w
	}
	return i, true
}

// tokenEnd is where the scalar n that starts at o ends, exact when its
// extent is known from its quotes or its plain text; otherwise bound (the
// next node), not exact.
func (s *source) tokenEnd(n *yaml.Node, o, bound int) (int, bool) {
	d := s.data[:bound]
	i := o
	for i < len(d) && (d[i] == '&' || d[i] == '!') { // an anchor or a tag before the value
		for i < len(d) && d[i] != ' ' && d[i] != '\t' && d[i] != '\n' && d[i] != '\r' {
			i++
		}
		for i < len(d) && (d[i] == ' ' || d[i] == '\t') {
			i++
		}
	}
	if i >= len(d) {
		return bound, false
	}
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0 && d[i] == '"':
		for j := i + 1; j < len(d); j++ {
			switch d[j] {
			case '\\':
				j++
			case '"':
				return j + 1, true
			}
		}
	case n.Style&yaml.SingleQuotedStyle != 0 && d[i] == '\'':
		for j := i + 1; j < len(d); j++ {
			if d[j] == '\'' {
				if j+1 < len(d) && d[j+1] == '\'' {
					j++
					continue
				}
				return j + 1, true
			}
		}
	case n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0:
		if n.Value != "" && bytes.HasPrefix(d[i:], []byte(n.Value)) && !strings.ContainsAny(n.Value, "\r\n") {
			return i + len(n.Value), true
		}
	}
	return bound, false
}

// spans adds the spans of [from, to) line by line: the first line's part
// shows shown, a later line's part shows hiddenPart (its indentation
// kept). Not exact: to is the next node, and its line's part before it is
// hidden only when it holds more than indentation and a sequence dash.
func (s *source) spans(from, to int, exact bool, shown string, out map[string][]span) {
	first, last := s.lineOf(from), s.lineOf(to)
	for l := first; l <= last && l < len(s.starts); l++ {
		start, end := s.starts[l], s.lineEnd(l)
		a, b, text := start, end, hiddenPart
		if l == first {
			a, text = from, shown
		} else {
			for a < end && (s.data[a] == ' ' || s.data[a] == '\t') {
				a++
			}
		}
		if l == last && to < end {
			b = to
		}
		if b <= a {
			continue
		}
		part := string(s.data[a:b])
		if l != first && (strings.TrimSpace(part) == "" || !exact && l == last && strings.Trim(part, " \t-?") == "") {
			continue
		}
		line := s.line(l)
		out[line] = append(out[line], span{a - start, b - start, text})
	}
}

// valuePart is where a line's value starts: after its key's ": " or its
// sequence dash, at the end of a key that opens a block, else after its
// indentation. A ": " after text that is no plain key (the later line of
// a quoted value, "…\"", LAST: x}") does not start the value: the line
// is hidden from its indentation.
func valuePart(line string) int {
	i := len(line) - len(strings.TrimLeft(line, " \t"))
	if strings.HasPrefix(line[i:], "- ") {
		return i + 2
	}
	if j := strings.Index(line[i:], ": "); j >= 0 {
		if strings.Trim(line[i:i+j], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.") != "" {
			return i
		}
		return i + j + 2
	}
	if strings.HasSuffix(line, ":") && !strings.HasPrefix(line[i:], "#") {
		return len(line) // a key that opens a block
	}
	return i
}

// hideSpans shows line with each span's bytes replaced by its text;
// overlapping spans are hidden together.
func hideSpans(line string, sp []span) string {
	sp = append([]span(nil), sp...)
	sort.Slice(sp, func(i, j int) bool { return sp[i].from < sp[j].from })
	var b strings.Builder
	at := 0
	for i := 0; i < len(sp); i++ {
		cur := sp[i]
		for i+1 < len(sp) && sp[i+1].from < cur.to {
			i++
			if sp[i].to > cur.to || sp[i].text != cur.text {
				cur.to, cur.text = max(cur.to, sp[i].to), hiddenPart
			}
		}
		cur.to = min(cur.to, len(line))
		if cur.from < at || cur.from >= cur.to {
			continue
		}
		b.WriteString(line[at:cur.from])
		b.WriteString(cur.text)
		at = cur.to
	}
	b.WriteString(line[at:])
	return b.String()
}

// oauthShown is an oauth block's clientSecret or privateKey as shown:
// masked by m.Value, and hidden whole when that would show a literal (a
// user file may hold one; sluice warns, and no listing shows it).
func (m *ShownMask) oauthShown(key, v string) string {
	shown := m.Value(key, v)
	if shown != v {
		return shown
	}
	rest := v
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			break
		}
		rest = rest[:i] + rest[i+j+1:]
	}
	if rest != "" {
		return hiddenPart
	}
	return v
}
