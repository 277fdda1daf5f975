package sandbox

import (
	"fmt"
	"strings"
)

// Signature renders a tool as a Python-style signature derived from its
// schemas, e.g. `def read_text_file(path: str, head: int = None) -> dict`.
// Required parameters come first. The return type comes from the output
// schema; without one it is `Any` (one text item comes back as str, several
// as list, see the package comment).
func Signature(t Tool) string {
	return signatureAs(Ident(t.Name), t)
}

func signatureAs(fn string, t Tool) string {
	in := parseSchema(t.InputSchema)
	ret := "Any"
	if len(t.OutputSchema) > 0 {
		ret = parseSchema(t.OutputSchema).pyType()
	}
	return fmt.Sprintf("def %s(%s) -> %s", fn, in.params(), ret)
}

// Summary is the first sentence of a tool's description, on one line, at
// most 120 bytes.
func Summary(t Tool) string {
	d := strings.Join(strings.Fields(t.Description), " ")
	if i := strings.Index(d, ". "); i >= 0 {
		d = d[:i+1]
	}
	if len(d) > 120 {
		cut := 117
		for cut > 0 && d[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
			cut--
		}
		d = d[:cut] + "..."
	}
	return d
}

// Docs lists a whole server compactly, .pyi style: a header naming the
// module, then one signature per tool (sorted by name) with its summary as a
// docstring. Names are the mangled ones a script uses.
func Docs(s Server) string {
	n := Mangle([]Server{s})
	return docsWith(n, s)
}

// Docs is like the package function Docs but uses names computed for the
// whole set of servers (so module names match what scripts see).
func (n *Names) Docs(s Server) string { return docsWith(n, s) }

func docsWith(n *Names, s Server) string {
	var b strings.Builder
	mod := n.Modules[s.ID]
	noun := "tools"
	if len(s.Tools) == 1 {
		noun = "tool"
	}
	fmt.Fprintf(&b, "# module %s: server %q, %d %s; call as %s.<tool>(name=value, ...)\n", mod, s.ID, len(s.Tools), noun, mod)
	tools := append([]Tool(nil), s.Tools...)
	sortTools(tools)
	for _, t := range tools {
		fn := n.funcs[s.ID][t.Name]
		b.WriteString(signatureAs(fn, t))
		b.WriteString(":")
		doc := Summary(t)
		if len(t.OutputSchema) > 0 {
			if h := parseSchema(t.OutputSchema).returnsHint(); h != "" {
				doc = strings.TrimSpace(doc + " Returns " + h + ".")
			}
		}
		if doc != "" {
			fmt.Fprintf(&b, "\n    %q", doc)
		} else {
			b.WriteString(" ...")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func sortTools(ts []Tool) {
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j].Name < ts[j-1].Name; j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}
