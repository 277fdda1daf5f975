package gateway

// This file decides which tools 'sluice serve' exposes directly beside the
// gateway tools: the top-level expose: capability globs, each server's
// expose: tool globs and serve --expose. front names and registers them
// (gateway/front/flat.go), exactly as flat mode's tools.
//
// # Why exposing is decided on the flat listing
//
// An exposed tool must never be something flat mode would not list: it is
// chosen from frontend.List, which holds only trusted servers' tools that
// their tools: subset and the active profile keep visible and that are not
// held for review. A glob can therefore only pick among those; it never
// widens a subset, reaches an untrusted server or shows a held tool.

import (
	"fmt"
	"strings"
	"time"

	"sluice/gateway/config"
	"sluice/gateway/front"
	"sluice/gateway/trust"
)

// exposeRule is one expose glob with where it came from.
type exposeRule struct {
	glob   string // a capability glob (SERVER__TOOL), per-server globs prefixed
	source string // for logs: "expose[1] (FILE:LINE)", "servers.fs.expose[0]", "--expose"
	// server and tool are set for a server's own glob: it names only that
	// server's tools, by their tool name. Matched as the prefixed glob, a
	// server a's "*" (a__*) would also name the tools of a server a_
	// (a___x), which a's declaration has no say over.
	server, tool string
}

// matches reports whether the rule names tool of server.
func (r exposeRule) matches(server, tool string) bool {
	if r.server != "" {
		return server == r.server && config.MatchGlob(r.tool, tool)
	}
	return config.MatchGlob(r.glob, server+"__"+tool)
}

// CheckExpose validates serve --expose globs against the declarations: a
// malformed glob (its position named) or a literal server part that is
// not declared is a bad-input error.
func (g *Gateway) CheckExpose(globs []string) error {
	l := g.reload()
	var ids []string
	declared := map[string]bool{}
	for _, ss := range [][]config.Server{l.Servers, l.Disabled} {
		for _, s := range ss {
			if !declared[s.ID] {
				declared[s.ID] = true
				ids = append(ids, s.ID)
			}
		}
	}
	for _, glob := range globs {
		if err := checkExposeFlag(glob); err != nil {
			return err
		}
		srv := config.ExposeServer(glob)
		if srv == "" || declared[srv] {
			continue
		}
		msg := fmt.Sprintf("--expose %s: no server %q is declared", glob, srv)
		remedy := "name a declared server (sluice servers lists them), or use a glob such as *__" + strings.TrimPrefix(glob, srv+"__")
		if s := Suggest(srv, ids); s != "" {
			msg += fmt.Sprintf("; did you mean %s?", s)
		}
		return &Error{Kind: KindBadInput, Message: msg, Remedy: fixText(remedy)}
	}
	return nil
}

// checkExposeFlag validates one --expose glob's syntax.
func checkExposeFlag(glob string) error {
	switch {
	case glob == "":
		return &Error{Kind: KindBadInput, Message: "--expose needs a capability glob", Remedy: fixText("pass SERVER__TOOL or a glob such as fs__read_*")}
	case strings.ContainsAny(glob, " \t\r\n"):
		return &Error{Kind: KindBadInput, Message: fmt.Sprintf("--expose %q contains whitespace", glob), Remedy: fixText("pass one glob per --expose flag")}
	}
	if err := config.CheckGlob(glob); err != nil {
		return &Error{Kind: KindBadInput, Message: "--expose: " + err.Error(), Remedy: fixText("fix the glob: * ? [..] [^..] and \\ escapes are supported")}
	}
	if !strings.Contains(glob, "__") && !strings.ContainsAny(glob, "*?[") {
		return &Error{Kind: KindBadInput, Message: fmt.Sprintf("--expose %s names no server: it takes capability globs (SERVER__TOOL)", glob),
			Remedy: fixText("write e.g. fs__" + glob)}
	}
	return nil
}

// exposeRules collects the expose globs in force: the user config's, each
// trusted server's own and extra (serve --expose).
func exposeRules(l *config.Loaded, views []ServerView, extra []string) []exposeRule {
	var rules []exposeRule
	for i, glob := range l.Settings.Expose {
		rules = append(rules, exposeRule{glob: glob, source: fmt.Sprintf("expose[%d] (%s:%d)", i, l.Settings.ExposeFile, l.Settings.ExposeLine)})
	}
	for _, v := range views {
		for i, glob := range v.decl.Expose {
			rules = append(rules, exposeRule{glob: v.ID + "__" + glob, server: v.ID, tool: glob, source: fmt.Sprintf("servers.%s.expose[%d] (%s:%d)", v.ID, i, v.decl.File, v.decl.Line)})
		}
	}
	for _, glob := range extra {
		rules = append(rules, exposeRule{glob: glob, source: "--expose"})
	}
	return rules
}

// mayExpose reports whether a rule may name a tool of server id. It
// reads the glob's literal prefix (up to its first wildcard): when that
// holds "__" the server is literal and must be id, else "id__" must
// start with it. It may answer true for a glob that names none of id's
// tools, never false for one that does.
func mayExpose(rules []exposeRule, id string) bool {
	for _, r := range rules {
		if r.server != "" {
			if r.server == id {
				return true
			}
			continue
		}
		lit := r.glob
		if i := strings.IndexAny(lit, `*?[\`); i >= 0 {
			lit = lit[:i]
		}
		if srv, _, ok := strings.Cut(lit, "__"); ok {
			if srv == id {
				return true
			}
			continue
		}
		if strings.HasPrefix(id+"__", lit) {
			return true
		}
	}
	return false
}

// exposing reports whether any expose glob is in force.
func (f *frontend) exposing() bool {
	if len(f.o.Expose) > 0 {
		return true
	}
	l := f.g.reload()
	if len(l.Settings.Expose) > 0 {
		return true
	}
	for _, s := range l.Servers {
		if len(s.Expose) > 0 {
			return true
		}
	}
	return false
}

// markExposed sets Item.Expose on the tools an expose glob names, and logs
// (once per change of the set) the globs that name no listed tool: not an
// error, since a catalog may yet grow the tool, but a typo would otherwise
// expose nothing in silence.
func (f *frontend) markExposed(items []frontItem, rules []exposeRule) {
	if len(rules) == 0 {
		return
	}
	hits := make([]int, len(rules))
	for i := range items {
		for r, rule := range rules {
			if rule.matches(items[i].server, items[i].tool) {
				items[i].expose = true
				hits[r]++
			}
		}
	}
	var idle []string
	for r, rule := range rules {
		if hits[r] == 0 {
			idle = append(idle, rule.glob+" from "+rule.source)
		}
	}
	key := strings.Join(idle, "\n")
	f.mu.Lock()
	changed := key != f.exposeIdle
	f.exposeIdle = key
	f.mu.Unlock()
	if changed && len(idle) > 0 {
		f.log.Warn("expose: globs match no listed tool (untrusted, hidden, held for review, or not in the catalog yet); they expose nothing for now", "globs", idle)
	}
}

// frontItem is one listed tool while List decides what it exposes.
type frontItem struct {
	server, tool string
	expose       bool
}

// watchDeclarations follows the declaration files and the trust records
// while serving (one stat of each a second): what they say decides what
// is listed (expose globs, tools: subsets, profiles, servers, trust), so a
// change relists and the agent hears tools/list_changed when its list
// changed. It returns when stop is closed.
func (f *frontend) watchDeclarations(stop <-chan struct{}) {
	trustFile := trust.FilePath(f.g.configDir)
	last, lastTrust := f.g.reload(), stampOf(trustFile)
	t := time.NewTicker(baselineWatchEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		l, ts := f.g.reload(), stampOf(trustFile)
		if l == last && ts == lastTrust {
			continue
		}
		last, lastTrust = l, ts
		f.log.Info("declarations or trust records changed; relisting")
		for _, k := range []front.EventKind{front.EventFeaturesChanged, front.EventToolsChanged, front.EventResourcesChanged, front.EventPromptsChanged} {
			f.emit(front.Event{Kind: k})
		}
		go f.updateStates()
	}
}
