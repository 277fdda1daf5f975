package sandbox

import (
	"fmt"
	"sort"
	"strings"
)

// keywords are Starlark's keywords and reserved words; an identifier equal
// to one of them gets a "_" prefix.
var keywords = map[string]bool{
	"and": true, "break": true, "continue": true, "def": true, "elif": true, "else": true,
	"for": true, "if": true, "in": true, "lambda": true, "load": true, "not": true, "or": true,
	"pass": true, "return": true, "while": true,
	"as": true, "assert": true, "async": true, "await": true, "class": true, "del": true,
	"except": true, "finally": true, "from": true, "global": true, "import": true, "is": true,
	"nonlocal": true, "raise": true, "try": true, "with": true, "yield": true,
	"True": true, "False": true, "None": true,
}

// Ident turns any name into a Starlark identifier: every character outside
// [A-Za-z0-9_] becomes "_", and a leading digit or a keyword gets a "_"
// prefix. The empty name becomes "_".
func Ident(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
			b.WriteByte(c)
		case c >= 0x80:
			// one "_" per UTF-8 sequence, not per byte
			if c >= 0xC0 || i == 0 {
				b.WriteByte('_')
			}
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if s == "" {
		return "_"
	}
	if (s[0] >= '0' && s[0] <= '9') || keywords[s] {
		s = "_" + s
	}
	return s
}

// Names is the mapping from sluice names to Starlark names for one set of
// servers. It is deterministic: the same servers give the same names.
type Names struct {
	Modules map[string]string            // server id -> module name
	Tools   map[string]string            // capability "<id>__<tool>" -> "module.function"
	funcs   map[string]map[string]string // server id -> tool name -> function name
	hidden  map[string]string            // "module.function" of a hidden tool -> its capability
	// Collisions lists every name that had to be changed to stay unique,
	// e.g. `server "my_db" is module my_db_2 (my_db is server "my-db")`.
	Collisions []string
}

// Mangle computes the Starlark names of servers and tools. Module names also
// avoid the sandbox's own predeclared names (call, parallel, json, ...) and
// Starlark's built-ins (len, str, ...), which get a "_" prefix. Within a
// collision group the names are handed out in byte order of the original
// names: the first keeps the base name, the others get _2, _3, ...
func Mangle(servers []Server) *Names {
	n := &Names{Modules: map[string]string{}, Tools: map[string]string{}, funcs: map[string]map[string]string{}, hidden: map[string]string{}}
	ids := make([]string, 0, len(servers))
	byID := map[string]Server{}
	for _, s := range servers {
		if _, dup := byID[s.ID]; dup {
			continue
		}
		byID[s.ID] = s
		ids = append(ids, s.ID)
	}
	sort.Strings(ids)
	taken := map[string]string{}
	for _, id := range ids {
		base := Ident(id)
		if reservedName(base) {
			base = "_" + base
		}
		name := unique(base, taken)
		taken[name] = id
		if name != base {
			n.Collisions = append(n.Collisions, fmt.Sprintf("server %q is module %s (%s is server %q)", id, name, base, taken[base]))
		}
		n.Modules[id] = name
	}
	for _, id := range ids {
		s := byID[id]
		tools := make([]string, 0, len(s.Tools))
		seen := map[string]bool{}
		for _, t := range s.Tools {
			if !seen[t.Name] {
				seen[t.Name] = true
				tools = append(tools, t.Name)
			}
		}
		sort.Strings(tools)
		ftaken := map[string]string{}
		fm := map[string]string{}
		for _, t := range tools {
			base := Ident(t)
			name := unique(base, ftaken)
			ftaken[name] = t
			if name != base {
				n.Collisions = append(n.Collisions, fmt.Sprintf("tool %s__%s is %s.%s (%s.%s is tool %q)", id, t, n.Modules[id], name, n.Modules[id], base, ftaken[base]))
			}
			fm[t] = name
			n.Tools[id+"__"+t] = n.Modules[id] + "." + name
		}
		n.funcs[id] = fm
		for _, t := range s.Hidden {
			if fn := n.Modules[id] + "." + Ident(t); !seen[t] {
				if _, taken := ftaken[Ident(t)]; !taken {
					n.hidden[fn] = id + "__" + t
				}
			}
		}
	}
	return n
}

// hiddenError is the message for a script naming a hidden tool.
func hiddenError(fn, capability string) string {
	return fmt.Sprintf("%s (%s) is hidden by configuration: the operator does not expose it", fn, capability)
}

func unique(base string, taken map[string]string) string {
	if _, ok := taken[base]; !ok {
		return base
	}
	for i := 2; ; i++ {
		c := fmt.Sprintf("%s_%d", base, i)
		if _, ok := taken[c]; !ok {
			return c
		}
	}
}

// SplitCapability splits "<server>__<tool>" at the first "__".
func SplitCapability(c string) (server, tool string, ok bool) {
	i := strings.Index(c, "__")
	if i <= 0 || i+2 >= len(c) {
		return "", "", false
	}
	return c[:i], c[i+2:], true
}
