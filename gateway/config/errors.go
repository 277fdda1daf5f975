package config

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels for branch points. Typed errors below wrap them so callers can
// use errors.Is without parsing text.
var (
	// ErrNoConfigDir means none of SLUICE_HOME, XDG_CONFIG_HOME or HOME is set.
	ErrNoConfigDir = errors.New("config: cannot locate the config directory")
	// ErrNoCacheDir means none of SLUICE_CACHE_DIR, XDG_CACHE_HOME or HOME is set.
	ErrNoCacheDir = errors.New("config: cannot locate the cache directory")
	// ErrNoStateDir means neither XDG_STATE_HOME nor HOME is set.
	ErrNoStateDir = errors.New("config: cannot locate the state directory")
	// ErrProjectRoot means the --project value is not a usable directory.
	ErrProjectRoot = errors.New("config: invalid project root")
	// ErrEnvMissing means an ${env:NAME} reference names a variable that is
	// not set in the gateway's environment.
	ErrEnvMissing = errors.New("config: referenced environment variable is not set")
	// ErrEnvSyntax means an env value holds a malformed ${...} reference.
	ErrEnvSyntax = errors.New("config: malformed environment reference")
	// ErrTooLarge means a file exceeds its size cap.
	ErrTooLarge = errors.New("config: file exceeds its size cap")
	// ErrEscapes means a working directory leaves its containment root.
	ErrEscapes = errors.New("config: directory escapes its root")
	// ErrRelativeOverride means SLUICE_HOME or SLUICE_CACHE_DIR holds a
	// relative path (see OverrideError).
	ErrRelativeOverride = errors.New("config: directory override is a relative path")
)

// Severity grades a Diagnostic. An error drops what it is attached to (a
// server, a setting or the whole file); a warning drops nothing.
type Severity string

// Severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Diagnostic is one problem found while loading declarations. It names the
// place (File, Line, Column; 0 when unknown), the dotted Field path (for
// example "servers.fs.command" or "filters[0].module"), what is wrong and how
// to fix it. Messages never contain env values.
type Diagnostic struct {
	Severity Severity
	File     string
	Line     int
	Column   int
	Field    string
	Message  string
	Fix      string
}

// String renders "file:line:col: severity: field: message (fix: ...)".
func (d Diagnostic) String() string {
	var b strings.Builder
	if d.File != "" {
		b.WriteString(d.File)
		if d.Line > 0 {
			fmt.Fprintf(&b, ":%d", d.Line)
			if d.Column > 0 {
				fmt.Fprintf(&b, ":%d", d.Column)
			}
		}
		b.WriteString(": ")
	}
	b.WriteString(string(d.Severity))
	b.WriteString(": ")
	if d.Field != "" {
		b.WriteString(d.Field)
		b.WriteString(": ")
	}
	b.WriteString(d.Message)
	if d.Fix != "" {
		b.WriteString(" (fix: ")
		b.WriteString(d.Fix)
		b.WriteString(")")
	}
	return b.String()
}

// Error makes a Diagnostic usable as an error value.
func (d Diagnostic) Error() string { return d.String() }

// EnvRefError reports an ${env:NAME} reference that could not be expanded.
// It names the server, the env key and the referenced variable, never a
// value. It wraps ErrEnvMissing or ErrEnvSyntax.
type EnvRefError struct {
	Server string // server id; "" when expanded without a server
	Key    string // the declared env key
	Var    string // the referenced variable name ("" for syntax errors)
	Err    error
}

func (e *EnvRefError) Error() string {
	who := "env"
	if e.Server != "" {
		who = fmt.Sprintf("server %q: env", e.Server)
	}
	if errors.Is(e.Err, ErrEnvMissing) {
		return fmt.Sprintf("%s %s references ${env:%s}, which is not set in the gateway's environment; export %s before starting sluice or remove the reference", who, e.Key, e.Var, e.Var)
	}
	return fmt.Sprintf("%s %s: %v", who, e.Key, e.Err)
}

func (e *EnvRefError) Unwrap() error { return e.Err }

// PathError reports a directory that is missing, unreadable or outside its
// containment root.
type PathError struct {
	Op   string // "cwd", "project"
	Path string
	Root string
	Err  error
}

func (e *PathError) Error() string {
	if e.Root != "" {
		return fmt.Sprintf("%s %s (root %s): %v", e.Op, e.Path, e.Root, e.Err)
	}
	return fmt.Sprintf("%s %s: %v", e.Op, e.Path, e.Err)
}

func (e *PathError) Unwrap() error { return e.Err }

// OverrideError reports a directory override variable (SLUICE_HOME,
// SLUICE_CACHE_DIR) holding a relative path. It wraps ErrRelativeOverride.
type OverrideError struct {
	Var   string // the variable name
	Value string // its value (a path, never a secret)
}

func (e *OverrideError) Error() string {
	return fmt.Sprintf("%s=%q is a relative path; it would mean a different directory in every working directory, and inside a repository it would make the repository's files yours; set %s to an absolute path or unset it", e.Var, e.Value, e.Var)
}

func (e *OverrideError) Unwrap() error { return ErrRelativeOverride }

// EditError refuses an edit: the file is left untouched.
type EditError struct {
	File        string
	Message     string
	Diagnostics []Diagnostic // the problems the edited file would have
	Err         error        // the file system's error, when reading or writing failed
}

func (e *EditError) Unwrap() error { return e.Err }

func (e *EditError) Error() string {
	s := e.File + ": " + e.Message
	for _, d := range e.Diagnostics {
		s += "\n  " + d.String()
	}
	return s
}

// Sentinels for branch points of edits.
var (
	ErrServerExists   = errors.New("config: server already declared")
	ErrServerNotFound = errors.New("config: server not declared in this file")
)
