package gateway

// This file is the operator's narrowing of what is exposed: per-server
// tool subsets (servers.ID.tools), disabled declarations (enabled: false)
// and profiles (Options.Profile). A hidden tool is not listed, not found,
// not callable and not a code-mode function, and every refusal says it is
// hidden by configuration rather than unknown. Nothing here changes a
// declaration's digest: it only ever narrows.

import (
	"fmt"
	"sort"
	"strings"

	"sluice/gateway/config"
)

// scope is the active profile as of the loaded declarations.
type scope struct {
	name    string // "" = no profile
	profile config.Profile
	missing bool // the profile named in Options is not declared (any more): nothing is visible
}

func (g *Gateway) scopeOf(l *config.Loaded) scope {
	if g.opts.Profile == "" {
		return scope{}
	}
	p, ok := l.Settings.Profiles[g.opts.Profile]
	return scope{name: g.opts.Profile, profile: p, missing: !ok}
}

// Profile is the active profile's name ("" = none).
func (g *Gateway) Profile() string { return g.opts.Profile }

// Profiles returns the declared profiles, by name (for the dashboard).
func (g *Gateway) Profiles() map[string]config.Profile {
	return g.reload().Settings.Profiles
}

func (s scope) hasServer(id string) bool {
	if s.name == "" {
		return true
	}
	return !s.missing && s.profile.HasServer(id)
}

// checkProfile refuses a profile that is not declared (Open).
func checkProfile(name string, l *config.Loaded) error {
	if name == "" {
		return nil
	}
	if _, ok := l.Settings.Profiles[name]; ok {
		return nil
	}
	msg := fmt.Sprintf("no profile %q is declared", name)
	if names := l.Settings.ProfileNames(); len(names) > 0 {
		msg += " (profiles: " + strings.Join(names, ", ") + ")"
	}
	return &Error{Kind: KindBadInput, Message: msg, Remedy: fixUser("declare it under profiles: in " + l.UserFile + ", or pass one of the declared names")}
}

// hiddenServerErr: server id is declared but not exposed (disabled, or
// outside the active profile). ok is false when id is not hidden.
func (g *Gateway) hiddenServerErr(l *config.Loaded, id string) (*Error, bool) {
	for _, d := range l.Disabled {
		if d.ID == id {
			return &Error{Kind: KindHidden, Server: id,
				Message: fmt.Sprintf("server %s is disabled by configuration (enabled: false)", id),
				Remedy:  fixUser("run 'sluice enable " + id + "' to load it")}, true
		}
	}
	sc := g.scopeOf(l)
	if _, declared := l.Server(id); declared && !sc.hasServer(id) {
		msg := fmt.Sprintf("server %s is hidden by configuration: profile %s does not include it", id, sc.name)
		if sc.missing {
			msg = fmt.Sprintf("server %s is hidden by configuration: profile %s is no longer declared", id, sc.name)
		}
		return &Error{Kind: KindHidden, Server: id, Message: msg,
			Remedy: fixUser("add it to profiles." + sc.name + ".servers in the user config, or serve another profile")}, true
	}
	return nil, false
}

// hiddenTool says why a tool of v is hidden ("" = visible).
func (g *Gateway) hiddenTool(v ServerView, tool string) string {
	if why := v.decl.Tools.Hidden(tool); why != "" {
		return fmt.Sprintf("servers.%s.%s", v.ID, why)
	}
	g.mu.Lock()
	l := g.loaded
	g.mu.Unlock()
	sc := g.scopeOf(l)
	if sc.name == "" {
		return ""
	}
	if sc.missing {
		return "profile " + sc.name + " is no longer declared"
	}
	if !sc.profile.HasCapability(Capability(v.ID, tool)) {
		return "profile " + sc.name + " does not include it"
	}
	return ""
}

// hiddenToolErr is the refusal for a hidden capability.
func hiddenToolErr(v ServerView, tool, why string) *Error {
	c := Capability(v.ID, tool)
	return &Error{Kind: KindHidden, Server: v.ID, Capability: c,
		Message: fmt.Sprintf("%s is hidden by configuration (%s)", c, why),
		Remedy:  fixUser("change servers." + v.ID + ".tools or the profile in the user config ('sluice tools " + v.ID + "' edits the subset)")}
}

// visible drops the hidden tools of a listing and names them in hidden.
func (g *Gateway) visible(v ServerView, l listing) listing {
	if v.decl.Tools.IsZero() && g.opts.Profile == "" {
		return l
	}
	out := l.tools[:0:0]
	for _, t := range l.tools {
		if g.hiddenTool(v, t.Name) == "" {
			out = append(out, t)
		}
	}
	// all keeps the hidden tools: the operator's review of a changed
	// listing (hold.go) compares and records every tool the server lists.
	for _, t := range l.all {
		if g.hiddenTool(v, t.Name) != "" {
			l.hidden = append(l.hidden, t.Name)
		}
	}
	sort.Strings(l.hidden)
	l.tools = out
	return l
}
