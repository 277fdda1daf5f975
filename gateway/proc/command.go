package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ResolveCommand turns a declared command into an absolute executable path.
// cmd must be an absolute path or a bare name (no separator); a bare name
// is looked up in path (a PATH-style list; empty entries and relative
// entries are skipped, never the current directory). The command is never
// handed to a shell. On Windows a bare name is tried with each PATHEXT
// extension, only .exe and .com files are accepted, and shells, script
// hosts and batch files are refused (see resolveWindows). Errors are
// *CommandError.
func ResolveCommand(cmd string, path string) (string, error) { return resolveCommand(cmd, path) }

// resolveUnix is ResolveCommand on Linux and macOS.
func resolveUnix(cmd string, path string) (string, error) {
	if cmd == "" || strings.IndexByte(cmd, 0) >= 0 || strings.TrimSpace(cmd) != cmd {
		return "", &CommandError{Command: cmd, Reason: ReasonCommandInvalid, Err: fmt.Errorf("%w: empty, padded or containing NUL", ErrCommandInvalid)}
	}
	if strings.HasPrefix(cmd, "/") {
		if err := checkExecutable(cmd); err != nil {
			return "", &CommandError{Command: cmd, Reason: ReasonCommandNotFound, Err: errors.Join(ErrCommandNotFound, err)}
		}
		return filepath.Clean(cmd), nil
	}
	if strings.ContainsRune(cmd, '/') {
		return "", &CommandError{Command: cmd, Reason: ReasonCommandInvalid, Err: fmt.Errorf("%w: use an absolute path or a bare name, not a relative path", ErrCommandInvalid)}
	}
	if cmd == "." || cmd == ".." {
		return "", &CommandError{Command: cmd, Reason: ReasonCommandInvalid, Err: ErrCommandInvalid}
	}
	for _, dir := range strings.Split(path, ":") {
		if !strings.HasPrefix(dir, "/") {
			continue
		}
		p := filepath.Join(dir, cmd)
		if checkExecutable(p) == nil {
			return p, nil
		}
	}
	return "", &CommandError{Command: cmd, Reason: ReasonCommandNotFound, Err: ErrCommandNotFound}
}

func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory", p)
	}
	if fi.Mode()&0o111 == 0 {
		return fs.ErrPermission
	}
	return nil
}

// AllowList is an operator policy naming the commands servers may run, by
// basename, case-insensitively (Unicode simple case folding). A nil *AllowList allows everything.
type AllowList struct {
	names []string // lower-case basenames, sorted
}

// ParseAllowList parses the SLUICE_ALLOW_COMMANDS value: comma-separated
// basenames such as "npx,uvx,node". Entries are trimmed and compared
// case-insensitively. "*" (or any glob), paths and otherwise invalid entries
// are denied and reported as warnings; they never widen the list. An empty
// or all-invalid value yields a list that allows nothing.
func ParseAllowList(csv string) (*AllowList, []string) {
	a := &AllowList{}
	var warnings []string
	for _, raw := range strings.Split(csv, ",") {
		e := strings.TrimSpace(raw)
		switch {
		case e == "":
			continue
		case strings.ContainsAny(e, "*?["):
			warnings = append(warnings, fmt.Sprintf("allow-list entry %q denied: wildcards are not supported; name each command", e))
		case strings.ContainsAny(e, `/\`):
			warnings = append(warnings, fmt.Sprintf("allow-list entry %q denied: give a basename, not a path", e))
		case e == "." || e == ".." || !printableName(e):
			warnings = append(warnings, fmt.Sprintf("allow-list entry %q denied: not a valid command name", e))
		default:
			l := strings.ToLower(e)
			if !slices.Contains(a.names, l) {
				a.names = append(a.names, l)
			}
		}
	}
	slices.Sort(a.names)
	return a, warnings
}

func printableName(s string) bool {
	for _, r := range s {
		if r <= ' ' || r == 0x7f || r == '"' || r == '\'' {
			return false
		}
	}
	return true
}

// Allows reports whether command (a bare name or a path; its basename is
// compared) is on the list. A nil list allows everything.
func (a *AllowList) Allows(command string) bool {
	if a == nil {
		return true
	}
	base := filepath.Base(command)
	for _, n := range a.names {
		if strings.EqualFold(n, base) {
			return true
		}
	}
	return false
}

// Names returns the allowed basenames (lower case, sorted).
func (a *AllowList) Names() []string {
	if a == nil {
		return nil
	}
	return slices.Clone(a.names)
}

// AllowCommandsEnv names the environment variable holding the operator's
// command allow-list.
const AllowCommandsEnv = "SLUICE_ALLOW_COMMANDS"

// AllowListFromEnv parses $SLUICE_ALLOW_COMMANDS. Unset or blank means no
// policy (nil, which allows every command); otherwise see ParseAllowList.
func AllowListFromEnv() (*AllowList, []string) {
	v := os.Getenv(AllowCommandsEnv)
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	return ParseAllowList(v)
}
