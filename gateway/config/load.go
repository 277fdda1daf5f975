package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
)

// LoadOptions says where to look. Every zero value means "from the
// environment": Getenv nil = os.Getenv, Cwd "" = os.Getwd, ConfigDir "" =
// ConfigDir(Getenv), Project "" = discovered from Cwd.
type LoadOptions struct {
	Cwd       string
	Project   string // the --project flag
	ConfigDir string
	Getenv    func(string) string
}

// Loaded is the merged result of both scopes.
type Loaded struct {
	Servers []Server // user servers first, then project servers, each in file order
	// Disabled are the valid declarations with enabled: false, in the
	// same order; they are not loaded, but a disabled user server still
	// shadows a project server of the same id.
	Disabled    []Server
	Settings    Settings // user scope only
	Diagnostics []Diagnostic
	UserFile    string // path looked at ("" if the config dir is unknown)
	ProjectFile string // path looked at ("" if the project root is unknown)
	ProjectRoot string // canonical (symlink-free) project root, "" if unknown
	ConfigDir   string
	// Foreign is set when the discovered project was skipped because it
	// belongs to another user; an edit of its file is refused too.
	Foreign *Foreign
}

// Foreign names what made a discovered project another user's: the
// .sluice directory or file, and its owner.
type Foreign struct {
	Path string
	UID  int
}

// Owner names the owner for a message: "uid N", with the login name when
// it is known ("alice (uid N)").
func (f Foreign) Owner() string {
	if u, err := user.LookupId(strconv.Itoa(f.UID)); err == nil && u.Username != "" {
		return fmt.Sprintf("%s (uid %d)", u.Username, f.UID)
	}
	return fmt.Sprintf("uid %d", f.UID)
}

// Errors reports whether any diagnostic has error severity.
func (l *Loaded) Errors() bool {
	for _, d := range l.Diagnostics {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Server returns the declaration with the given id.
func (l *Loaded) Server(id string) (Server, bool) {
	for _, s := range l.Servers {
		if s.ID == id {
			return s, true
		}
	}
	return Server{}, false
}

// Load reads the user file and the project file, validates both and merges
// them. It never fails as a whole: every problem is a Diagnostic, and a
// file with a fatal problem contributes nothing. A project server whose id
// is also declared in user scope is dropped (the user declaration wins).
func Load(opts LoadOptions) *Loaded {
	l := &Loaded{Servers: []Server{}}
	getenv := envOr(opts.Getenv)
	diag := func(file, msg, fix string) {
		l.Diagnostics = append(l.Diagnostics, Diagnostic{Severity: SeverityError, File: file, Message: msg, Fix: fix})
	}

	cfgDir := opts.ConfigDir
	if cfgDir == "" {
		d, err := ConfigDir(getenv)
		if err != nil {
			diag("", fmt.Sprintf("user config skipped: %v", err), "set SLUICE_HOME to the config directory")
		}
		cfgDir = d
	} else if a, err := filepath.Abs(cfgDir); err == nil {
		cfgDir = a
	}
	l.ConfigDir = cfgDir

	var user []Server
	if cfgDir != "" {
		l.UserFile = filepath.Join(cfgDir, UserFileName)
		base := cfgDir
		if c, err := CanonicalDir(cfgDir); err == nil {
			base = c
		}
		if data, ok := l.read(l.UserFile); ok {
			var st Settings
			var ds []Diagnostic
			user, st, ds = Parse(data, l.UserFile, ScopeUser, base)
			l.Settings = st
			l.Diagnostics = append(l.Diagnostics, ds...)
		}
	}

	root, err := ProjectRoot(opts.Cwd, opts.Project)
	if err != nil {
		diag("", fmt.Sprintf("project config skipped: %v", err), "pass an existing directory to --project")
	}
	var project []Server
	if root != "" {
		croot, err := CanonicalDir(root)
		if err != nil {
			diag("", fmt.Sprintf("project config skipped: cannot resolve project root %s: %v", root, err), "pass an existing directory to --project")
		} else {
			l.ProjectRoot = croot
			l.ProjectFile = filepath.Join(root, ProjectDirName, ProjectFileName)
			if l.UserFile != "" && sameFile(l.UserFile, l.ProjectFile) {
				l.Diagnostics = append(l.Diagnostics, Diagnostic{Severity: SeverityWarning, File: l.ProjectFile,
					Message: "project file is the user file; read once, in user scope", Fix: "point SLUICE_HOME elsewhere than <project>/.sluice"})
			} else if who, p, foreign := l.foreignProject(root, opts.Project); foreign {
				l.skipForeign(p, who)
			} else if data, ok := l.readProject(opts.Project == ""); ok {
				var ds []Diagnostic
				project, _, ds = Parse(data, l.ProjectFile, ScopeProject, croot)
				l.Diagnostics = append(l.Diagnostics, ds...)
			}
		}
	}

	path := getenv("PATH")
	var check programChecker // shared by both scopes: one look at each file
	user, project = l.resolve(user, path, &check), l.resolve(project, path, &check)

	seen := map[string]Server{}
	for _, s := range user {
		seen[s.ID] = s
		l.add(s)
	}
	for _, s := range project {
		if u, ok := seen[s.ID]; ok {
			l.Diagnostics = append(l.Diagnostics, Diagnostic{
				Severity: SeverityWarning, File: s.File, Line: s.Line, Column: s.Column,
				Field:   serverField(s.ID),
				Message: fmt.Sprintf("server %q is also declared in user config (%s:%d); the user declaration wins and this one is ignored", s.ID, u.File, u.Line),
				Fix:     "rename one of the two servers, or remove the duplicate",
			})
			continue
		}
		l.add(s)
	}
	l.checkProfiles()
	l.checkExpose()
	return l
}

// add files a declaration under Servers or, when disabled, Disabled.
func (l *Loaded) add(s Server) {
	if s.Disabled {
		l.Disabled = append(l.Disabled, s)
		return
	}
	l.Servers = append(l.Servers, s)
}

// resolve sets each server's Program: its command resolved on the
// gateway's PATH (never on a PATH the declaration sets), "" when not found
// (launching then fails with the launcher's "not found"). A program that turns out to be a shell or an interpreter given inline
// code once symlinks are resolved is an error and drops the server.
func (l *Loaded) resolve(servers []Server, path string, check *programChecker) []Server {
	out := servers[:0:0]
	for _, s := range servers {
		diag := func(sev Severity, msg, fix string) {
			l.Diagnostics = append(l.Diagnostics, Diagnostic{Severity: sev, File: s.File, Line: s.Line, Column: s.Column,
				Field: joinField(serverField(s.ID), "command"), Message: msg, Fix: fix})
		}
		if s.CLI != nil {
			if why, line, col := s.resolveCLI(path, check); why != "" {
				l.Diagnostics = append(l.Diagnostics, Diagnostic{Severity: SeverityError, File: s.File, Line: line, Column: col,
					Field: joinField(serverField(s.ID), "cli.tools"), Message: why + ", which is not allowed; the server is not loaded",
					Fix: "run a script file or a real program directly in argv"})
				continue
			}
			out = append(out, s)
			continue
		}
		s.Program = ResolveProgram(s.Command, path)
		if s.Program != "" {
			if why := check.check(s.Scope, s.Program, s.Args); why != "" {
				diag(SeverityError, why+", which is not allowed; the server is not loaded",
					"run the server's program directly: a script file or a package binary, with each argument in args")
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

// fileOwner is foreignOwner; tests replace it.
var fileOwner = foreignOwner

// foreignProject reports a discovered project whose root, the marker that
// made it one (.sluice or .git), or project file is owned by another user
// (and not root): anyone who can write a parent of the working directory
// (a shared /tmp) could otherwise put declarations, and the remedies that
// trust them, in front of this user and their agent, or have this user's
// edits (literal env values included) written into a directory of theirs.
// A root given with --project is taken as chosen.
func (l *Loaded) foreignProject(root, flag string) (int, string, bool) {
	if flag != "" {
		return 0, "", false
	}
	for _, p := range []string{root, filepath.Join(root, ProjectDirName), filepath.Join(root, ".git"), l.ProjectFile} {
		if uid, foreign := fileOwner(p); foreign {
			return uid, p, true
		}
	}
	return 0, "", false
}

// skipForeign notes a discovered project skipped because p is uid's.
func (l *Loaded) skipForeign(p string, uid int) {
	l.Foreign = &Foreign{Path: p, UID: uid}
	l.Diagnostics = append(l.Diagnostics, Diagnostic{Severity: SeverityWarning, File: l.ProjectFile,
		Message: fmt.Sprintf("project config skipped: %s belongs to another user (uid %d), and the project root was found by walking up from the working directory; its servers are not listed and nothing in it runs", p, uid),
		Fix:     "work in a directory of your own, or pass --project DIR to use it on purpose"})
}

// openedOwner is foreignInfo; tests replace it.
var openedOwner = foreignInfo

// foreignFileError: the project file, once open, is another user's.
type foreignFileError struct{ uid int }

func (e foreignFileError) Error() string { return fmt.Sprintf("owned by uid %d", e.uid) }

// readProject reads the project file. A discovered one is checked again
// on the open file: foreignProject looked at the path, which its owner
// could swap for a file of theirs between that look and this read.
func (l *Loaded) readProject(discovered bool) ([]byte, bool) {
	var check func(os.FileInfo) error
	if discovered {
		check = func(fi os.FileInfo) error {
			if uid, foreign := openedOwner(fi); foreign {
				return foreignFileError{uid}
			}
			return nil
		}
	}
	data, err := readFileCapped(l.ProjectFile, MaxFileBytes, check)
	var fe foreignFileError
	if errors.As(err, &fe) {
		l.skipForeign(l.ProjectFile, fe.uid)
		return nil, false
	}
	return l.readResult(l.ProjectFile, data, err)
}

// read reads a config file with the size cap. A missing file is not a
// problem; anything else unreadable is a diagnostic.
func (l *Loaded) read(file string) ([]byte, bool) {
	data, err := ReadFileCapped(file, MaxFileBytes)
	return l.readResult(file, data, err)
}

func (l *Loaded) readResult(file string, data []byte, err error) ([]byte, bool) {
	switch {
	case err == nil:
		return data, true
	case errors.Is(err, fs.ErrNotExist):
		return nil, false
	case errors.Is(err, ErrTooLarge):
		l.Diagnostics = append(l.Diagnostics, Diagnostic{Severity: SeverityError, File: file,
			Message: fmt.Sprintf("file is over the %d-byte cap; it contributes nothing", MaxFileBytes), Fix: "shrink the file"})
	default:
		l.Diagnostics = append(l.Diagnostics, Diagnostic{Severity: SeverityError, File: file,
			Message: fmt.Sprintf("cannot read: %v; it contributes nothing", err), Fix: "make it a readable regular file"})
	}
	return nil, false
}

// ReadFileCapped reads at most max bytes of a regular file; a longer file
// is ErrTooLarge (the rest is never read).
func ReadFileCapped(file string, max int64) ([]byte, error) {
	return readFileCapped(file, max, nil)
}

// readFileCapped is ReadFileCapped with check (nil: none) run on the open
// file's information before anything is read.
func readFileCapped(file string, max int64, check func(os.FileInfo) error) ([]byte, error) {
	// Stat first so a FIFO is refused before an open that would block.
	if st, err := os.Stat(file); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", file)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", file)
	}
	if check != nil {
		if err := check(st); err != nil {
			return nil, err
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, ErrTooLarge
	}
	return data, nil
}

func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	if err != nil {
		return false
	}
	return os.SameFile(sa, sb)
}
