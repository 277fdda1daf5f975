package gateway

// This file shows what the expose globs expose: 'sluice servers' (the
// globs of the configuration) and the dashboard's Servers page (a running
// serve's own set, its --expose flags included).
//
// # Why servers shows the configuration's set
//
// serve --expose is a flag of one serve process; another process cannot
// know it. So 'sluice servers' reports what the declarations expose (the
// user file's top-level expose: and each server's own expose:), and the
// dashboard of a running serve reports that serve's live set. Both are
// worked out as List works it out: only listed tools (trusted, visible
// through tools: and the profile, not held for review) can be exposed.

import (
	"sort"
)

// ExposedTool is a tool an expose glob lists directly beside the gateway
// tools, with the globs that name it.
type ExposedTool struct {
	Capability string `json:"capability"`
	// Globs are "GLOB (SOURCE)" of every glob naming the tool.
	Globs []string `json:"globs"`
}

// ExposeGlob is one expose glob in force and the tools it exposes now.
type ExposeGlob struct {
	Glob   string `json:"glob"`
	Source string `json:"source"` // expose[0] (FILE:LINE), servers.ID.expose[0] (FILE:LINE), --expose
	// Tools are the capabilities it exposes now; none when it matches no
	// listed tool (untrusted, hidden, held, or not in the catalog yet).
	Tools []string `json:"tools"`
}

// exposureOf works out what rules built from views and extra (serve
// --expose globs) expose among the trusted servers' listed tools: every
// glob with its tools, and each server's exposed tools.
func (g *Gateway) exposureOf(views []ServerView, extra []string) ([]ExposeGlob, map[string][]ExposedTool) {
	var trusted []ServerView
	for _, v := range views {
		if v.Trusted() {
			trusted = append(trusted, v)
		}
	}
	rules := exposeRules(g.reload(), trusted, extra)
	if len(rules) == 0 {
		return nil, nil
	}
	globs := make([]ExposeGlob, len(rules))
	for i, r := range rules {
		globs[i] = ExposeGlob{Glob: r.glob, Source: r.source, Tools: []string{}}
		if r.server != "" {
			globs[i].Glob = r.tool
		}
	}
	by := map[string][]ExposedTool{}
	for _, v := range trusted {
		if !mayExpose(rules, v.ID) {
			continue
		}
		for _, t := range g.known(v).tools {
			var names []string
			for i, r := range rules {
				if r.matches(v.ID, t.Name) {
					capability := Capability(v.ID, t.Name)
					globs[i].Tools = append(globs[i].Tools, capability)
					names = append(names, globs[i].Glob+" ("+r.source+")")
				}
			}
			if names != nil {
				by[v.ID] = append(by[v.ID], ExposedTool{Capability: Capability(v.ID, t.Name), Globs: names})
			}
		}
	}
	for id := range by {
		sort.Slice(by[id], func(a, b int) bool { return by[id][a].Capability < by[id][b].Capability })
	}
	for i := range globs {
		sort.Strings(globs[i].Tools)
	}
	return globs, by
}

// AddExposure fills rep.Expose and each server's Exposed from the expose
// globs of the declarations (serve --expose is per process: see the
// dashboard of a running serve for its live set). It never launches.
func (g *Gateway) AddExposure(rep *Report) {
	globs, by := g.exposureOf(rep.Servers, nil)
	rep.Expose = globs
	for i := range rep.Servers {
		rep.Servers[i].Exposed = by[rep.Servers[i].ID]
	}
}

// exposure is what this serve exposes now: its views, its --expose globs.
func (f *frontend) exposure() ([]ExposeGlob, map[string][]ExposedTool) {
	return f.g.exposureOf(f.views(), f.o.Expose)
}
