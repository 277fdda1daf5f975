package gateway

import (
	"path"

	"sluice/sandbox"
)

// Sep joins a server id and a tool name into a capability name.
const Sep = "__"

// Capability composes the capability name of a server's tool.
func Capability(server, tool string) string { return server + Sep + tool }

// SplitCapability splits a capability at the first "__". Server ids never
// contain "__", so ownership is never ambiguous. It is the sandbox's split
// (scripts name capabilities too), so the rule exists once.
func SplitCapability(c string) (server, tool string, ok bool) { return sandbox.SplitCapability(c) }

// matchGlob reports whether capability c matches glob g ("*" and "?" and
// character classes as in path.Match; "*" also crosses "__").
func matchGlob(g, c string) bool {
	if g == "*" || g == c {
		return true
	}
	ok, err := path.Match(g, c)
	return err == nil && ok
}

func matchAny(globs []string, c string) bool {
	for _, g := range globs {
		if matchGlob(g, c) {
			return true
		}
	}
	return false
}
