package config

// What the gateway does when a server's tool definitions differ from the
// reviewed baseline (onToolChange).
//
// # Why onToolChange is not in the digest
//
// It changes how the gateway treats a server's listing, not what runs or
// where it connects, like actionClass and stdoutNoise. It cannot weaken a
// project server: a project declaration may only say hold (the default),
// because a repository must not be able to wave through changes to its own
// tools; warn and accept are for servers the user declared.
const (
	ToolChangeHold   = "hold"   // changed, added and renamed tools are withheld until reviewed (default)
	ToolChangeWarn   = "warn"   // the change is reported but the tools stay callable
	ToolChangeAccept = "accept" // every listing becomes the new baseline
)

func (p *parser) onToolChange(s *Server, f kv, field string) {
	v, ok := p.enum(f.v, field, ToolChangeHold, ToolChangeWarn, ToolChangeAccept)
	if !ok {
		return
	}
	if p.scope == ScopeProject && v != ToolChangeHold {
		p.errf(f.v, field, "remove it (project servers always hold changed tools), or declare the server in your user config to choose warn or accept", "onToolChange: %s is only allowed in user config", v)
		return
	}
	s.OnToolChange = v
}

// ToolChangePolicy is the server's onToolChange, with the default applied.
func (s *Server) ToolChangePolicy() string {
	if s.OnToolChange == "" {
		return ToolChangeHold
	}
	return s.OnToolChange
}
