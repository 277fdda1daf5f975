package trust

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// Scope says where a declaration comes from (plain values; this package
// never sees config types).
type Scope string

// Scopes.
const (
	ScopeUser    Scope = "user"
	ScopeProject Scope = "project"
)

// Verdict is the outcome of trust resolution.
type Verdict string

// Verdicts.
const (
	Trusted   Verdict = "trusted"   // may launch
	Untrusted Verdict = "untrusted" // project server without a record: never launched
	Stale     Verdict = "stale"     // record exists but the declaration changed: never launched
)

// Decl is what Resolve needs to know about one declared server.
type Decl struct {
	Scope        Scope
	ProjectRoot  string            // canonical project root (CanonicalRoot); project scope only
	ID           string            // server id
	Digest       string            // declaration digest
	FieldDigests map[string]string // per-field digests, to name changed fields
	ActionClass  string            // user scope: the declared class ("" = unknown)
	// Program is the absolute path the command resolves to now ("" when
	// it is not found, or the declaration has no command). Project scope:
	// it must equal the record's.
	Program string
}

// Status is the trust status of one declaration.
type Status struct {
	Status      Verdict
	ActionClass string // read | execute | unknown; unknown unless trusted
	// ClassSet reports that ActionClass was set by the declaration (user
	// scope) or the trust record (project scope). When it is false the
	// class is "unknown" by default, and a gateway may let a trusted
	// server's tool annotations (readOnlyHint) decide.
	ClassSet bool
	Reason   string   // why, for people and models; "" when trusted
	Remedy   string   // the exact command that trusts the declaration; "" when trusted
	Review   string   // for stale: the command that shows the declaration to review first
	Changed  []string // for stale: the fields whose digests differ, sorted; nil if unknown
}

// Resolve decides the trust status of a declaration. User-scope
// declarations are trusted by authorship. A project-scope declaration is
// trusted only when a record binds its canonical project root, id and
// current digest; the record's action class is then the server's.
func Resolve(decl Decl, st *State) Status {
	switch decl.Scope {
	case ScopeUser:
		return Status{Status: Trusted, ActionClass: classOr(decl.ActionClass), ClassSet: decl.ActionClass != ""}
	case ScopeProject:
	default:
		return Status{Status: Untrusted, ActionClass: ActionUnknown,
			Reason: fmt.Sprintf("server %q has unknown scope %q", decl.ID, decl.Scope)}
	}
	if decl.ProjectRoot == "" || !filepath.IsAbs(decl.ProjectRoot) {
		return Status{Status: Untrusted, ActionClass: ActionUnknown,
			Reason: fmt.Sprintf("project server %q has no absolute project root to bind trust to", decl.ID),
			Remedy: "sluice trust " + decl.ID + " --project DIR"}
	}
	root := filepath.Clean(decl.ProjectRoot)
	if c, err := CanonicalRoot(root); err == nil {
		root = c
	}
	remedy := RemedyCommand(decl.ID, root)
	rec, ok := st.Find(root, decl.ID)
	if !ok {
		reason := fmt.Sprintf("project server %q in %s has no trust record; nothing from a project config runs until you trust it", decl.ID, root)
		if st != nil && len(st.Diagnostics) > 0 {
			reason += " (the trust file could not be read: " + st.Diagnostics[0].Message + ")"
		}
		return Status{Status: Untrusted, ActionClass: ActionUnknown, Reason: reason, Remedy: remedy}
	}
	// A declaration without a command (a cli block) has no program on
	// either side; one with a command has one in every record written
	// since programs were bound, so an older record is stale.
	sameProgram := rec.Program == decl.Program
	if rec.Digest == decl.Digest && sameProgram {
		return Status{Status: Trusted, ActionClass: classOr(rec.ActionClass), ClassSet: rec.ActionClass != ""}
	}
	var changed []string
	var whats []string
	if rec.Digest != decl.Digest {
		changed = changedFields(rec.Fields, decl.FieldDigests)
		what := "its declaration changed"
		if len(changed) > 0 {
			what = "its declaration changed (" + strings.Join(changed, ", ") + ")"
		}
		whats = append(whats, what)
	}
	if !sameProgram {
		switch {
		case rec.Program == "":
			whats = append(whats, "the record names no program (it predates binding the program a command resolves to)")
		case decl.Program == "":
			whats = append(whats, fmt.Sprintf("its command no longer resolves to a program (it ran %s)", rec.Program))
		default:
			whats = append(whats, fmt.Sprintf("its command now runs %s, not %s", decl.Program, rec.Program))
		}
		changed = append(changed, "program")
		sort.Strings(changed)
	}
	what := strings.Join(whats, " and ")
	review := ReviewCommand(root)
	return Status{
		Status:      Stale,
		ActionClass: ActionUnknown,
		Reason: fmt.Sprintf("project server %q in %s was trusted on %s but %s; review it with `%s` before trusting it again",
			decl.ID, root, rec.TrustedAt.UTC().Format("2006-01-02"), what, review),
		Remedy:  remedy,
		Review:  review,
		Changed: changed,
	}
}

// changedFields lists the fields whose digests differ. It returns nil when
// either side has no per-field digests (nothing can be said).
func changedFields(old, cur map[string]string) []string {
	if len(old) == 0 || len(cur) == 0 {
		return nil
	}
	set := map[string]bool{}
	for k, v := range old {
		if cur[k] != v {
			set[k] = true
		}
	}
	for k, v := range cur {
		if old[k] != v {
			set[k] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func classOr(c string) string {
	switch c {
	case ActionRead, ActionExecute, ActionUnknown:
		return c
	}
	return ActionUnknown
}

// RemedyCommand is the command that trusts server id in project root.
func RemedyCommand(id, root string) string {
	return "sluice trust " + shellQuote(id) + " --project " + shellQuote(root)
}

// untrustCommand is the command that removes the record of server id in
// project root.
func untrustCommand(id, root string) string {
	return "sluice untrust " + shellQuote(id) + " --project " + shellQuote(root)
}

// ReviewCommand is the command that shows a project's declarations.
func ReviewCommand(root string) string {
	return "sluice servers --project " + shellQuote(root)
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe
// characters, so a remedy can be pasted as is.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
