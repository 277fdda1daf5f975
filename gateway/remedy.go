package gateway

import (
	"encoding/json"
	"strings"
)

// Remedy is how to fix an error, kept typed so that each surface renders
// it in its own terms: a person at a terminal reads CLI commands ('sluice
// find --server fx --refresh', --yes), a model reads the MCP tool calls
// that do the same (find with {"server":"fx","refresh":true}) and is told
// what only its user can do, and a script is never offered approval.
//
// A remedy reads Before, then its Step, then After, joined by spaces (After
// attaches directly when it starts with punctuation). The zero Remedy is
// "no remedy".
//
// # Why a typed remedy instead of rewriting text
//
// Remedies used to be CLI sentences that the MCP surface rewrote with
// regular expressions; every new remedy had to match one of them or
// reached the model speaking of flags it cannot pass. A Step says what
// kind of fix it is, so a surface cannot miss one.
type Remedy struct {
	Before string // surface-neutral prose before the step ("fix the server, then")
	Step   Step   // the part with a per-surface form; StepNone: prose only
	Server string // the server StepFindServer and StepRefresh name
	After  string // surface-neutral prose after the step ("to list its tools")
}

// Step is the kind of action a Remedy asks for.
type Step int

const (
	// StepNone: the remedy is prose every surface shows as is.
	StepNone Step = iota
	// StepFind: list the capabilities ('sluice find' / the find tool).
	StepFind
	// StepFindServer: list one server's tools.
	StepFindServer
	// StepRefresh: launch one server once and record its catalog.
	StepRefresh
	// StepDescribe: show a capability's schema ('sluice describe' / the
	// describe tool).
	StepDescribe
	// StepServers: see every declaration with its trust and diagnostics.
	StepServers
	// StepApprove: approve this one call (--yes in the CLI; elicitation
	// through an agent's client; impossible in a script). After holds the
	// lasting alternatives.
	StepApprove
	// StepUser: only the user can do this, outside any agent: the prose
	// (Before) names CLI commands or files to edit.
	StepUser
	// StepReview: a server's tool definitions changed since they were
	// reviewed; only the user reviews and accepts ('sluice review').
	StepReview
)

// Surface is where a remedy is shown.
type Surface int

const (
	SurfaceCLI    Surface = iota // a person or script at a terminal
	SurfaceModel                 // a model, through the MCP tools
	SurfaceScript                // a code-mode script run from the CLI
	// SurfaceScriptModel is a code-mode script a model submitted (the
	// execute tool): it cannot be approved call by call, and what the
	// script cannot do is its user's to do.
	SurfaceScriptModel
)

// IsZero reports whether r is no remedy.
func (r Remedy) IsZero() bool { return r == Remedy{} }

// String is the CLI rendering.
func (r Remedy) String() string { return r.For(SurfaceCLI) }

// For renders r for surface s.
func (r Remedy) For(s Surface) string {
	model := s == SurfaceModel || s == SurfaceScriptModel
	script := s == SurfaceScript || s == SurfaceScriptModel
	if r.Step == StepApprove && script {
		// A script cannot ask: only the lasting alternatives remain, and
		// those are the user's to make.
		rest := strings.TrimSpace(strings.TrimLeft(r.After, ",; "))
		if model && rest != "" {
			return "the user must do this outside the agent: " + rest
		}
		return rest
	}
	if r.Step == StepReview {
		cmd := "sluice review " + r.Server
		if model {
			return "the user must review the change outside the agent: '" + cmd + "' shows it and '" + cmd + " --accept' accepts it"
		}
		return join(r.Before, "run '"+cmd+"' to see the change and '"+cmd+" --accept' to accept it", r.After)
	}
	if r.Step == StepUser && model {
		return "the user must do this outside the agent: " + join(r.Before, "", r.After)
	}
	return join(r.Before, r.step(model), r.After)
}

// step renders the step alone.
func (r Remedy) step(model bool) string {
	q, _ := json.Marshal(r.Server)
	switch r.Step {
	case StepFind:
		if model {
			return "call find"
		}
		return "run 'sluice find'"
	case StepFindServer:
		if model {
			return `call find with {"server":` + string(q) + `}`
		}
		return "run 'sluice find --server " + r.Server + "'"
	case StepRefresh:
		if model {
			return `call find with {"server":` + string(q) + `,"refresh":true}`
		}
		return "run 'sluice find --server " + r.Server + " --refresh'"
	case StepDescribe:
		if model {
			return "call describe"
		}
		return "run 'sluice describe'"
	case StepServers:
		if model {
			return "call find: its servers list shows every declared server, its trust and state"
		}
		return "run 'sluice servers' to see every declaration and its diagnostics"
	case StepApprove:
		if model {
			return "the user must approve this call when sluice asks through the client (elicitation)"
		}
		return "approve this call (--yes in the CLI)"
	}
	return ""
}

// join puts the parts of a remedy together: spaces between, none before
// a part that starts with punctuation.
func join(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if b.Len() > 0 && !strings.ContainsAny(p[:1], ",;:.)") {
			b.WriteByte(' ')
		}
		b.WriteString(p)
	}
	return b.String()
}

// fixText is a prose-only remedy.
func fixText(s string) Remedy { return Remedy{Before: s} }

// fixUser is a remedy only the user can carry out (it names CLI commands
// or files).
func fixUser(s string) Remedy { return Remedy{Before: s, Step: StepUser} }
