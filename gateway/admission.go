package gateway

import (
	"fmt"

	"sluice/gateway/config"
)

// Admission is the decision point every call passes, from any surface: the
// CLI, sluice serve, and scripts.
type Admission struct {
	Class    string // effective action class: read | execute | unknown
	Source   string // where the class came from: declaration, trust-record, annotation, default
	Approved bool   // runs without asking (read, or matched by an approve glob)
	Reason   string
	Remedy   string // fix, rendered for the CLI (describe shows it)
	fix      Remedy
}

func (a Admission) decision() string {
	if a.Approved {
		return "run"
	}
	return "approval-required"
}

// admission computes the effective action class of one tool: the
// declaration's (user scope) or trust record's (project scope) class; if
// none and the server is trusted, a tool annotated readOnlyHint: true counts
// as read; otherwise unknown. read runs; execute and unknown need approval,
// unless an approve glob in user config names the capability.
func (g *Gateway) admission(v ServerView, t toolInfo) Admission {
	a := Admission{Class: v.ActionClass}
	switch {
	case v.ClassSet:
		// An operator's class, even "unknown", beats the server's own hints.
		a.Source = "declaration"
		if v.Scope == string(config.ScopeProject) {
			a.Source = "trust-record"
		}
	case t.readOnly():
		a.Class, a.Source = "read", "annotation"
	default:
		a.Class, a.Source = "unknown", "default"
	}
	if a.Class == "read" {
		a.Approved = true
		return a
	}
	capName := Capability(v.ID, t.Name)
	g.mu.Lock()
	globs := g.loaded.Settings.Approve
	g.mu.Unlock()
	if matchAny(globs, capName) {
		a.Approved = true
		a.Source += "+approve"
		return a
	}
	a.Reason = fmt.Sprintf("%s has action class %s (%s) and needs approval", capName, a.Class, a.Source)
	var how string
	if v.Scope == string(config.ScopeProject) {
		how = fmt.Sprintf("record a class on the trust record: 'sluice trust %s --action-class read'", v.ID)
	} else {
		how = fmt.Sprintf("set 'actionClass: read' on server %s in %s", v.ID, v.File)
	}
	a.fix = Remedy{Step: StepApprove, After: fmt.Sprintf(", add %q to the 'approve:' list in %s, or %s", capName, g.UserFile(), how)}
	a.Remedy = a.fix.String()
	return a
}

// refusal is the admission error.
func refusal(capName string, a Admission) error {
	server, _, _ := SplitCapability(capName)
	return &Error{Kind: KindRefused, Server: server, Capability: capName, Message: "not approved: " + a.Reason, Remedy: a.fix}
}
