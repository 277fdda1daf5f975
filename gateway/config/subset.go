package config

import (
	"fmt"
	"path"
	"sort"

	"gopkg.in/yaml.v3"
)

// Caps of tool subsets and profiles.
const (
	MaxToolGlobs       = 128 // entries of tools.allow and of tools.deny
	MaxProfiles        = 32
	MaxProfileServers  = MaxServers * 2 // both files together
	MaxProfileCapGlobs = 256
)

// ToolSubset narrows the tools of one server: a tool is visible when it
// matches an Allow glob (or Allow is empty) and no Deny glob. Globs are
// path.Match patterns over the upstream tool name (not the capability).
// It is not part of the declaration digest: hiding a tool narrows what a
// trusted server exposes and never widens it, so trust records stay valid.
type ToolSubset struct {
	Allow []string // nil = every tool
	Deny  []string
	// Line is where the tools block starts (0 = none), for error texts
	// that point at the configuration hiding a tool.
	Line int
}

// IsZero reports whether the subset hides nothing.
func (t ToolSubset) IsZero() bool { return len(t.Allow) == 0 && len(t.Deny) == 0 }

// Hidden says why tool is hidden by the subset ("" = visible): the
// field (tools.deny or tools.allow) and the glob that decided.
func (t ToolSubset) Hidden(tool string) string {
	for _, g := range t.Deny {
		if globMatch(g, tool) {
			return fmt.Sprintf("tools.deny matches %q", g)
		}
	}
	if len(t.Allow) == 0 {
		return ""
	}
	for _, g := range t.Allow {
		if globMatch(g, tool) {
			return ""
		}
	}
	return "not matched by tools.allow"
}

// Profile is a named subset of servers and capabilities for one client or
// agent ('sluice serve --profile NAME'). Empty Servers means every
// declared server; empty Capabilities means every (otherwise visible)
// capability of those servers.
type Profile struct {
	Name         string
	Servers      []string // server ids
	Capabilities []string // capability globs (SERVER__TOOL, path.Match syntax)
	File         string
	Line         int
}

// HasServer reports whether the profile includes server id.
func (p Profile) HasServer(id string) bool {
	if len(p.Servers) == 0 {
		return true
	}
	for _, s := range p.Servers {
		if s == id {
			return true
		}
	}
	return false
}

// HasCapability reports whether the profile includes capability c (its
// server must be included too; see HasServer).
func (p Profile) HasCapability(c string) bool {
	if len(p.Capabilities) == 0 {
		return true
	}
	for _, g := range p.Capabilities {
		if globMatch(g, c) {
			return true
		}
	}
	return false
}

// ProfileNames returns the declared profile names, sorted.
func (s Settings) ProfileNames() []string {
	names := make([]string, 0, len(s.Profiles))
	for n := range s.Profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func globMatch(g, s string) bool {
	if g == "*" || g == s {
		return true
	}
	ok, err := path.Match(g, s)
	return err == nil && ok
}

var subsetKeys = []string{"allow", "deny"}
var profileKeys = []string{"servers", "capabilities"}

// toolSubset parses a server's tools: {allow: [...], deny: [...]} block.
func (p *parser) toolSubset(s *Server, n *yaml.Node, field string) {
	pairs, dup, ok := p.mapping(n, field)
	if !ok {
		return
	}
	t := ToolSubset{Line: n.Line}
	for _, f := range pairs {
		if dup[f.key] {
			continue
		}
		ff := joinField(field, f.key)
		switch f.key {
		case "allow", "deny":
			g, ok := p.globs(f.v, ff, MaxToolGlobs)
			if !ok {
				continue
			}
			if f.key == "allow" {
				if len(g) == 0 {
					p.errf(f.v, ff, "list at least one tool name or glob, or remove allow to expose every tool", "allow is empty, which would hide every tool")
					continue
				}
				t.Allow = g
			} else {
				t.Deny = g
			}
		default:
			p.unknown(f.k, field, f.key, subsetKeys)
		}
	}
	s.Tools = t
}

// profiles parses the top-level profiles: {NAME: {servers, capabilities}}.
func (p *parser) profiles(st *Settings, n *yaml.Node) {
	pairs, dup, ok := p.mapping(n, "profiles")
	if !ok {
		return
	}
	if len(pairs) > MaxProfiles {
		p.errf(n, "profiles", fmt.Sprintf("declare at most %d profiles", MaxProfiles), "declares %d profiles, over the cap of %d", len(pairs), MaxProfiles)
		return
	}
	out := map[string]Profile{}
	for _, kv := range pairs {
		if dup[kv.key] {
			continue
		}
		field := "profiles." + kv.key
		if !ValidID(kv.key) {
			p.errf(kv.k, field, "use lowercase letters, digits, _ and -, starting with a letter or digit (at most 32 characters)", "profile name %q does not match %s", kv.key, idRe().String())
			continue
		}
		pr := Profile{Name: kv.key, File: p.file, Line: kv.k.Line}
		good := true
		fs, fdup, ok := p.mapping(kv.v, field)
		if !ok {
			continue
		}
		for _, f := range fs {
			if fdup[f.key] {
				continue
			}
			ff := joinField(field, f.key)
			switch f.key {
			case "servers":
				ids, ok := p.strList(f.v, ff, MaxProfileServers, MaxIDChars)
				if !ok {
					good = false
					continue
				}
				for i, id := range ids {
					if !ValidID(id) || containsDoubleUnderscore(id) {
						p.errf(f.v.Content[i], fmt.Sprintf("%s[%d]", ff, i), "write a declared server id", "%q is not a server id", id)
						good = false
					}
				}
				pr.Servers = ids
			case "capabilities":
				g, ok := p.globs(f.v, ff, MaxProfileCapGlobs)
				if !ok {
					good = false
					continue
				}
				pr.Capabilities = g
			default:
				p.unknown(f.k, field, f.key, profileKeys)
				good = false
			}
		}
		if good {
			out[kv.key] = pr
		}
	}
	st.Profiles = out
}

// checkProfiles warns about profile entries naming no declared server
// (declared after all, or disabled, they would include nothing).
func (l *Loaded) checkProfiles() {
	declared := map[string]bool{}
	for _, s := range l.Servers {
		declared[s.ID] = true
	}
	for _, s := range l.Disabled {
		declared[s.ID] = true
	}
	for _, name := range l.Settings.ProfileNames() {
		pr := l.Settings.Profiles[name]
		for _, id := range pr.Servers {
			if !declared[id] {
				l.Diagnostics = append(l.Diagnostics, Diagnostic{Severity: SeverityWarning, File: pr.File, Line: pr.Line,
					Field: "profiles." + name + ".servers", Message: fmt.Sprintf("profile %s names server %q, which is not declared", name, id),
					Fix: "declare the server or remove it from the profile"})
			}
		}
	}
}
