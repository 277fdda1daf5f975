package config

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"sluice/gateway/internal/suggest"
)

// Exposed tools: capabilities served as direct tools beside the gateway
// tools (find, describe, call, execute, read_result). Two places name
// them, both globs in path.Match syntax:
//
//	expose: [github__search_issues, fs__read_*]   # top level, user config: capability globs
//	servers:
//	  fs:
//	    command: ...
//	    expose: [read_text_file, list_*]          # per server: tool-name globs
//
// Exposing never widens what a gateway serves: only tools the gateway
// would list in flat mode (trusted, visible through tools: and the
// profile, not held for review) can be exposed. Neither key is part of
// the declaration digest.

// MaxExposeGlobs caps the entries of the top-level expose list and of
// each server's.
const MaxExposeGlobs = 256

// GlobError is a malformed glob: what is wrong and where (Offset is the
// 1-based character position of the problem in Glob).
type GlobError struct {
	Glob   string
	Offset int
	Reason string
}

func (e *GlobError) Error() string {
	return fmt.Sprintf("glob %q is malformed: %s at character %d", e.Glob, e.Reason, e.Offset)
}

// CheckGlob validates one glob in path.Match syntax (* ? [..] [^..] and \
// escapes) and reports the first problem with its position.
func CheckGlob(g string) error {
	// One entry per character; a byte that is not UTF-8 is one character
	// that path.Match refuses inside a class.
	var rs []rune
	bad := map[int]bool{}
	for i := 0; i < len(g); {
		r, n := utf8.DecodeRuneInString(g[i:])
		if r == utf8.RuneError && n == 1 {
			bad[len(rs)] = true
		}
		rs = append(rs, r)
		i += n
	}
	at := func(i int, why string) error { return &GlobError{Glob: g, Offset: i + 1, Reason: why} }
	for i := 0; i < len(rs); i++ {
		switch rs[i] {
		case '\\':
			if i+1 == len(rs) {
				return at(i, `"\" escapes nothing`)
			}
			i++
		case ']':
			// path.Match treats a lone ] as a literal; say nothing.
		case '[':
			open := i
			i++
			if i < len(rs) && rs[i] == '^' {
				i++
			}
			n := 0
			for {
				if i >= len(rs) {
					return at(open, `"[" is never closed by "]"`)
				}
				if rs[i] == ']' && n > 0 {
					break
				}
				lo, next, err := classChar(rs, bad, i, at)
				if err != nil {
					return err
				}
				i = next
				if i < len(rs) && rs[i] == '-' {
					hi, next, err := classChar(rs, bad, i+1, at)
					if err != nil {
						return err
					}
					if hi < lo {
						return at(i, fmt.Sprintf("range %q-%q runs backwards", lo, hi))
					}
					i = next
				}
				n++
			}
		}
	}
	return nil
}

// classChar reads one character of a [..] class at i (an escape counts
// as one) and returns it and the index after it.
func classChar(rs []rune, bad map[int]bool, i int, at func(int, string) error) (rune, int, error) {
	if i >= len(rs) {
		return 0, i, at(i-1, "a character class ends without its closing \"]\"")
	}
	notUTF8 := "a byte that is not UTF-8 in a character class"
	switch rs[i] {
	case '\\':
		if i+1 == len(rs) {
			return 0, i, at(i, `"\" escapes nothing`)
		}
		if bad[i+1] {
			return 0, i, at(i+1, notUTF8)
		}
		return rs[i+1], i + 2, nil
	case '-':
		return 0, i, at(i, `"-" has no character before it in a class (escape it as \-)`)
	case ']':
		return 0, i, at(i, `"]" ends an empty class or range`)
	}
	if bad[i] {
		return 0, i, at(i, notUTF8)
	}
	return rs[i], i + 1, nil
}

// MatchGlob reports whether glob g (path.Match syntax) matches s; a
// malformed glob matches nothing.
func MatchGlob(g, s string) bool { return globMatch(g, s) }

// ExposeServer is the server part of a top-level expose glob when it is
// literal ("fs" of "fs__read_*"), else "" (a wildcard in the server part,
// or no "__" at all).
func ExposeServer(g string) string {
	srv, _, ok := strings.Cut(g, "__")
	if !ok || strings.ContainsAny(srv, `*?[\`) {
		return ""
	}
	return srv
}

// Exposes reports whether the top-level expose list names capability c
// (SERVER__TOOL).
func (s Settings) Exposes(c string) bool {
	for _, g := range s.Expose {
		if globMatch(g, c) {
			return true
		}
	}
	return false
}

// Exposes reports whether the server's own expose list names tool (its
// upstream name).
func (s Server) Exposes(tool string) bool {
	for _, g := range s.Expose {
		if globMatch(g, tool) {
			return true
		}
	}
	return false
}

// exposeGlobs validates an expose list: capability globs at top level
// (capability true), tool-name globs on a server.
func (p *parser) exposeGlobs(n *yaml.Node, field string, capability bool) ([]string, bool) {
	gs, ok := p.strList(n, field, MaxExposeGlobs, MaxGlobBytes)
	if !ok {
		return nil, false
	}
	example := "read_*"
	if capability {
		example = "fs__read_*"
	}
	good := true
	for i, g := range gs {
		ff := fmt.Sprintf("%s[%d]", field, i)
		pos := n.Content[i]
		switch {
		case g == "":
			p.errf(pos, ff, "write a name or glob such as "+example, "glob is empty")
			good = false
		case strings.ContainsAny(g, " \t\r\n") || hasControl(g):
			p.errf(pos, ff, "remove whitespace and control characters", "glob %q contains whitespace or control characters", g)
			good = false
		default:
			if err := CheckGlob(g); err != nil {
				p.errf(pos, ff, "fix the glob: * ? [..] [^..] and \\ escapes are supported", "%v", err)
				good = false
				continue
			}
			if capability && !strings.Contains(g, "__") && !strings.ContainsAny(g, `*?[`) {
				p.errf(pos, ff, fmt.Sprintf("write SERVER__TOOL, e.g. fs__%s, or list the tool under servers.<id>.expose", g),
					"%q names no server: a top-level expose entry is a capability glob (SERVER__TOOL)", g)
				good = false
			}
		}
	}
	return gs, good
}

// checkExpose warns about top-level expose globs whose (literal) server
// is not declared: a server of another project may be meant, so it is
// not an error, but a typo would otherwise expose nothing in silence.
func (l *Loaded) checkExpose() {
	if len(l.Settings.Expose) == 0 {
		return
	}
	declared := map[string]bool{}
	var ids []string
	for _, ss := range [][]Server{l.Servers, l.Disabled} {
		for _, s := range ss {
			if !declared[s.ID] {
				declared[s.ID] = true
				ids = append(ids, s.ID)
			}
		}
	}
	for i, g := range l.Settings.Expose {
		srv := ExposeServer(g)
		if srv == "" || declared[srv] {
			continue
		}
		fix := "declare the server, or remove the entry"
		if s := suggest.Closest(srv, ids); s != "" {
			fix = fmt.Sprintf("did you mean %s? (%s)", s, strings.Replace(g, srv, s, 1))
		}
		l.Diagnostics = append(l.Diagnostics, Diagnostic{Severity: SeverityWarning, File: l.Settings.ExposeFile, Line: l.Settings.ExposeLine,
			Field: fmt.Sprintf("expose[%d]", i), Message: fmt.Sprintf("expose entry %q names server %q, which is not declared; it exposes nothing", g, srv), Fix: fix})
	}
}
