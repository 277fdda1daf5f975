package gateway

// This file manages declarations from the CLI ('sluice add', 'update',
// 'remove', 'enable', 'disable', 'tools'): it picks the file (user, or the
// project's with project set), hands the edit to config (which keeps the
// file's text as written, validates like Load and writes atomically) and
// turns refusals into gateway errors.

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"sluice/gateway/config"
)

// ServerSpec is what 'sluice add' declares and 'sluice update' changes.
type ServerSpec = config.ServerSpec

// EnvVar is one KEY=VALUE of a ServerSpec.
type EnvVar = config.EnvVar

// Change is a written edit of a declaration file: which file, and the
// changed lines.
type Change = config.Change

// shownMask hides in an edit's diff what the listings hide.
var shownMask = &config.ShownMask{Value: MaskValue, Args: MaskCommand, URL: maskServerURL}

func (g *Gateway) editTarget(project bool) (config.EditTarget, error) {
	l := g.reload()
	if !project {
		base := g.configDir
		if c, err := config.CanonicalDir(g.configDir); err == nil {
			base = c
		}
		return config.EditTarget{File: g.UserFile(), Scope: config.ScopeUser, Base: base, Getenv: g.opts.Getenv, Shown: shownMask}, nil
	}
	if l.ProjectRoot == "" {
		return config.EditTarget{}, &Error{Kind: KindBadInput, Message: "no project root: run inside a project (a directory with .sluice or .git) or pass --project-dir DIR"}
	}
	file := filepath.Join(l.ProjectRoot, config.ProjectDirName, config.ProjectFileName)
	if l.Foreign != nil {
		return config.EditTarget{}, &Error{Kind: KindBadInput, Message: file + ": " + config.ForeignEditMessage(*l.Foreign, config.ForeignEditFix)}
	}
	return config.EditTarget{File: file, Scope: config.ScopeProject,
		Base: l.ProjectRoot, Getenv: g.opts.Getenv, Discovered: g.opts.Project == "", Shown: shownMask}, nil
}

func (g *Gateway) applyEdit(project bool, id string, fn func(config.EditTarget) (*Change, error)) (*Change, error) {
	if !config.ValidID(id) || strings.Contains(id, Sep) {
		return nil, &Error{Kind: KindBadInput, Server: id, Message: fmt.Sprintf("%q is not a server id: use lowercase letters, digits, _ and -, starting with a letter or digit, at most 32 characters, no __ and no trailing _", id)}
	}
	t, err := g.editTarget(project)
	if err != nil {
		return nil, err
	}
	ch, err := fn(t)
	if err != nil {
		var ee *config.EditError
		switch {
		case errors.As(err, &ee):
			msg := ee.Message
			for _, d := range ee.Diagnostics {
				msg += "\n  " + d.String()
			}
			return nil, &Error{Kind: KindBadInput, Server: id, Message: ee.File + ": " + msg, Err: err}
		case errors.Is(err, config.ErrServerNotFound):
			return nil, g.notInFile(project, id, t.File)
		}
		return nil, &Error{Kind: KindGateway, Server: id, Message: err.Error(), Err: err}
	}
	g.reload()
	return ch, nil
}

// notInFile is the error of an edit of server id that the file it edits
// does not declare: it names the other file when that one declares id
// (the --project flag was left out or added by mistake), else the closest
// id the file does declare.
func (g *Gateway) notInFile(project bool, id, file string) error {
	l := g.reload()
	want, flag, other := config.ScopeUser, "", "with --project"
	if project {
		want, flag, other = config.ScopeProject, " --project", "without --project"
	}
	var ids []string
	for _, list := range [][]config.Server{l.Servers, l.Disabled} {
		for _, s := range list {
			switch {
			case s.Scope == want:
				ids = append(ids, s.ID)
			case s.ID == id:
				return &Error{Kind: KindUnknown, Server: id, Message: fmt.Sprintf("no server %s is declared in %s; %s declares it", id, file, s.File),
					Remedy: fixUser(fmt.Sprintf("run the command again %s", other))}
			}
		}
	}
	msg := fmt.Sprintf("no server %s is declared in %s", id, file)
	if near := Suggest(id, ids); near != "" {
		msg += "; did you mean " + near + "?"
	}
	return &Error{Kind: KindUnknown, Server: id, Message: msg,
		Remedy: fixUser(fmt.Sprintf("declare it with 'sluice add %s%s -- COMMAND [ARGS...]'", id, flag))}
}

// AddServer declares server id in the user file (project: the project's
// .sluice/mcp.yaml, whose servers then need 'sluice trust').
func (g *Gateway) AddServer(project bool, id string, spec ServerSpec) (*Change, error) {
	if (spec.Command == "") == (spec.URL == "") {
		return nil, &Error{Kind: KindBadInput, Server: id, Message: "give the server's command after --, or --url URL for a remote server (one of them)"}
	}
	return g.applyEdit(project, id, func(t config.EditTarget) (*Change, error) { return config.AddServer(t, id, spec) })
}

// UpdateServer changes fields of a declared server.
func (g *Gateway) UpdateServer(project bool, id string, spec ServerSpec) (*Change, error) {
	return g.applyEdit(project, id, func(t config.EditTarget) (*Change, error) { return config.UpdateServer(t, id, spec) })
}

// RemoveServer deletes a server's declaration.
func (g *Gateway) RemoveServer(project bool, id string) (*Change, error) {
	ch, err := g.applyEdit(project, id, func(t config.EditTarget) (*Change, error) { return config.RemoveServer(t, id) })
	if err == nil {
		for _, p := range g.reload().Settings.ProfilesNaming(id) {
			ch.Warnings = append(ch.Warnings, config.Diagnostic{Severity: config.SeverityWarning, File: g.UserFile(), Field: "profiles." + p + ".servers",
				Message: fmt.Sprintf("profile %s still names server %s", p, id), Fix: "remove it from the profile"})
		}
	}
	return ch, err
}

// SetEnabled enables (removes enabled: false) or disables a server.
func (g *Gateway) SetEnabled(project bool, id string, enabled bool) (*Change, error) {
	return g.applyEdit(project, id, func(t config.EditTarget) (*Change, error) { return config.SetEnabled(t, id, enabled) })
}

// SetTools sets a server's tool subset (nil list: unchanged; reset: all
// tools visible again).
func (g *Gateway) SetTools(project bool, id string, allow, deny []string, reset bool) (*Change, error) {
	return g.applyEdit(project, id, func(t config.EditTarget) (*Change, error) { return config.SetTools(t, id, allow, deny, reset) })
}
