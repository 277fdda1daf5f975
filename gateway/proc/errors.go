package proc

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
)

// Sentinels for branch points. Typed errors below wrap one of them, so
// callers can use errors.Is for the class and errors.As for the details.
var (
	// ErrEnvDenied: a declared or passed variable is on the deny-list.
	ErrEnvDenied = errors.New("environment variable denied")
	// ErrEnvInvalid: a variable name or value cannot be placed in an environment.
	ErrEnvInvalid = errors.New("environment variable invalid")
	// ErrCwdEscape: the working directory leaves its containment root.
	ErrCwdEscape = errors.New("working directory escapes its root")
	// ErrCwdInvalid: the working directory or root does not exist or is not a directory.
	ErrCwdInvalid = errors.New("working directory invalid")
	// ErrCommandNotAllowed: the command is not on the operator's allow-list.
	ErrCommandNotAllowed = errors.New("command not allowed")
	// ErrCommandNotFound: a bare command name was not found on PATH.
	ErrCommandNotFound = errors.New("command not found")
	// ErrCommandInvalid: the command is neither an absolute path nor a bare name.
	ErrCommandInvalid = errors.New("command invalid")
	// ErrSpawn: the operating system refused to start the process.
	ErrSpawn = errors.New("spawn failed")
	// ErrSys: a process-wide system setting could not be applied.
	ErrSys = errors.New("system call failed")
	// ErrUnsupported: this platform cannot launch local servers.
	ErrUnsupported = errors.New("platform not supported")
	// ErrNotPrivate: a directory meant for private files lets others in
	// and belongs to someone else, so MkdirPrivate does not change it.
	ErrNotPrivate = errors.New("directory is not private")
)

// Reason codes carried by the typed errors. They are stable strings that
// callers may log, count or show.
const (
	ReasonEnvInvalidName    = "env-invalid-name"
	ReasonEnvInvalidValue   = "env-invalid-value"
	ReasonEnvDeniedLoader   = "env-denied-loader"
	ReasonEnvDeniedInterp   = "env-denied-interpreter"
	ReasonEnvDeniedShell    = "env-denied-shell"
	ReasonEnvDeniedInternal = "env-denied-internal"

	ReasonCwdEscapes        = "cwd-escapes-root"
	ReasonCwdEscapesSymlink = "cwd-escapes-root-via-symlink"
	ReasonCwdNotFound       = "cwd-not-found"
	ReasonCwdNotDir         = "cwd-not-directory"
	ReasonRootInvalid       = "root-invalid"

	ReasonCommandNotAllowed = "command-not-allowed"
	ReasonCommandNotFound   = "command-not-found"
	ReasonCommandInvalid    = "command-invalid"
	// ReasonCommandShell: the command is a shell or a script host
	// (refused on Windows, where cmd /c and PowerShell are the shells).
	ReasonCommandShell = "command-shell"
	// ReasonCommandBatch: on Windows the command is (or resolves to) a
	// .bat or .cmd file, which Windows runs through cmd.exe.
	ReasonCommandBatch = "command-batch-file"
	// ReasonCommandNotProgram: on Windows the command is (or resolves to)
	// a file Windows does not start directly (only .exe and .com).
	ReasonCommandNotProgram = "command-not-a-program"

	// ReasonGroupSurvived is Outcome.Reason when the group outlived SIGKILL.
	ReasonGroupSurvived = "group-survived-sigkill"
)

// EnvError names one refused environment variable. It never carries the
// value: values can be secrets.
type EnvError struct {
	Server string // server id, may be empty
	Name   string // the variable name as declared
	Source string // "env" (declared) or "passEnv"
	Reason string // one of the ReasonEnv* codes
	Err    error  // ErrEnvDenied or ErrEnvInvalid
}

func (e *EnvError) Error() string {
	var hint string
	switch e.Reason {
	case ReasonEnvInvalidName:
		hint = "names must match [A-Za-z_][A-Za-z0-9_]*"
	case ReasonEnvInvalidValue:
		hint = "values must not contain NUL bytes"
	case ReasonEnvDeniedLoader:
		hint = "it changes how the dynamic loader links every program; remove it from the declaration"
	case ReasonEnvDeniedInterp:
		hint = "it injects code or modules into an interpreter or package manager; remove it from the declaration"
	case ReasonEnvDeniedShell:
		hint = "it makes shells run code at startup; remove it from the declaration"
	default:
		hint = "it is reserved; remove it from the declaration"
	}
	return fmt.Sprintf("%s%s variable %q refused (%s): %s", prefix(e.Server), e.Source, e.Name, e.Reason, hint)
}

func (e *EnvError) Unwrap() error { return e.Err }

// CwdError reports a working directory that cannot be used.
type CwdError struct {
	Server string
	Root   string
	Dir    string
	Reason string // one of the ReasonCwd* codes or ReasonRootInvalid
	Err    error  // ErrCwdEscape or ErrCwdInvalid, possibly joined with an OS error
}

func (e *CwdError) Error() string {
	switch e.Reason {
	case ReasonCwdEscapes:
		return fmt.Sprintf("%scwd %q escapes its root %q (%s): use a directory inside the root", prefix(e.Server), e.Dir, e.Root, e.Reason)
	case ReasonCwdEscapesSymlink:
		return fmt.Sprintf("%scwd %q resolves through a symbolic link to a place outside its root %q (%s): use a directory inside the root", prefix(e.Server), e.Dir, e.Root, e.Reason)
	case ReasonRootInvalid:
		return fmt.Sprintf("%scontainment root %q is unusable (%s): %v", prefix(e.Server), e.Root, e.Reason, e.Err)
	default:
		return fmt.Sprintf("%scwd %q is unusable (%s): %v", prefix(e.Server), e.Dir, e.Reason, e.Err)
	}
}

func (e *CwdError) Unwrap() error { return e.Err }

// CommandError reports a command that may not or cannot be run.
type CommandError struct {
	Server   string
	Command  string
	Resolved string // the file the command resolved to, when that file is the problem
	Reason   string // one of the ReasonCommand* codes
	Err      error
}

func (e *CommandError) Error() string {
	switch e.Reason {
	case ReasonCommandNotAllowed:
		return fmt.Sprintf("%scommand %q is not on the allow-list (%s): add its basename to SLUICE_ALLOW_COMMANDS or use an allowed command", prefix(e.Server), e.Command, e.Reason)
	case ReasonCommandNotFound:
		if filepath.IsAbs(e.Command) {
			return fmt.Sprintf("%scommand %q does not exist or is not an executable file (%s): fix the path", prefix(e.Server), e.Command, e.Reason)
		}
		return fmt.Sprintf("%scommand %q was not found on PATH (%s): install it or declare an absolute path", prefix(e.Server), e.Command, e.Reason)
	case ReasonCommandShell:
		return fmt.Sprintf("%scommand %q is a shell or script host (%s): commands are never run through a shell; declare the server's own program with its arguments in args", prefix(e.Server), e.Command, e.Reason)
	case ReasonCommandBatch:
		return fmt.Sprintf("%scommand %q resolves to the batch file %q, which Windows runs through cmd.exe (%s): declare the program it starts instead (npx.cmd, for one, starts node with npx-cli.js as its first argument)", prefix(e.Server), e.Command, e.Resolved, e.Reason)
	case ReasonCommandNotProgram:
		return fmt.Sprintf("%scommand %q resolves to %q, which Windows does not start directly (%s): declare the .exe that runs it", prefix(e.Server), e.Command, e.Resolved, e.Reason)
	default:
		return fmt.Sprintf("%scommand %q is invalid (%s): %v", prefix(e.Server), e.Command, e.Reason, e.Err)
	}
}

func (e *CommandError) Unwrap() error { return e.Err }

// SpawnError reports that the operating system refused to start the process.
type SpawnError struct {
	Server  string
	Command string
	Err     error
}

func (e *SpawnError) Error() string {
	return fmt.Sprintf("%sstarting %q failed: %v", prefix(e.Server), e.Command, e.Err)
}

func (e *SpawnError) Unwrap() []error { return []error{ErrSpawn, e.Err} }

func prefix(server string) string {
	if server == "" {
		return ""
	}
	return "server " + server + ": "
}

// ExitError describes how a leader that did not exit cleanly ended.
type ExitError struct {
	Server string
	Code   int            // exit status, or -1 when killed by a signal
	Signal syscall.Signal // the signal that ended it, or 0
}

func (e *ExitError) Error() string {
	if e.Signal != 0 {
		return fmt.Sprintf("%sprocess killed by signal %s", prefix(e.Server), signalName(e.Signal))
	}
	return fmt.Sprintf("%sprocess exited with status %d", prefix(e.Server), e.Code)
}

// SysError reports a system call that failed outside any one server's
// life cycle (a process-wide setting such as SetNonDumpable).
type SysError struct {
	Op  string // the call, as a person would look it up
	Err error
}

func (e *SysError) Error() string { return fmt.Sprintf("%s failed: %v", e.Op, e.Err) }

func (e *SysError) Unwrap() []error { return []error{ErrSys, e.Err} }

// PrivateDirError reports a directory MkdirPrivate was asked to make
// private that lets others in (a group or world mode bit on Linux and
// macOS, an access list that is not owner-only on Windows) and is not the
// current user's to tighten — it belongs to someone else, or its mode
// marks it as shared (sticky or setgid) — so it is left exactly as it was.
type PrivateDirError struct {
	Dir  string
	Open string // what lets others in: "mode 0755", "an access list that is not owner-only"
	Why  string // why it is not tightened: "belongs to uid 1001, not to you (uid 1000)"
}

func (e *PrivateDirError) Error() string {
	return fmt.Sprintf("%s is not private (%s lets others in) and %s, so it was left as it is; "+
		"sluice keeps private files there (trust records, tokens, caches, results): point sluice at a directory of your own "+
		"(SLUICE_HOME, SLUICE_CACHE_DIR, XDG_STATE_HOME, results.dir) or have its owner make it private (%s)",
		e.Dir, e.Open, e.Why, privateFix(e.Dir))
}

func (e *PrivateDirError) Unwrap() error { return ErrNotPrivate }

// SupportedPlatforms are the GOOS values whose process groups, teardown
// and watchdog this package implements.
var SupportedPlatforms = []string{"linux", "darwin", "windows"}

// UnsupportedError: a launch on a platform this package has no process
// groups for. It wraps ErrUnsupported.
type UnsupportedError struct {
	GOOS string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("launching local servers is not supported on %s: sluice runs them in process groups it can tear down whole only on %s; run sluice on one of those, or use remote servers (url:) here",
		e.GOOS, strings.Join(SupportedPlatforms, ", "))
}

func (e *UnsupportedError) Unwrap() error { return ErrUnsupported }
