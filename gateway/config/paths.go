package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sluice/gateway/internal/files"
	"sluice/gateway/proc"
)

// File and directory names.
const (
	UserFileName    = "mcp.yaml"
	ProjectDirName  = ".sluice"
	ProjectFileName = "mcp.yaml"
	AppName         = "sluice"
)

func envOr(getenv func(string) string) func(string) string {
	if getenv == nil {
		return os.Getenv
	}
	return getenv
}

// overrideEnv returns the value of a sluice directory override when it is
// set. A relative value is an *OverrideError, never resolved against the
// working directory: SLUICE_HOME=.sluice run inside a repository would turn
// the repository's .sluice/mcp.yaml into user scope (trusted by
// authorship), and a relative cache directory would let a repository ship
// catalogs and compiled filter code.
func overrideEnv(getenv func(string) string, name string) (string, bool, error) {
	v := getenv(name)
	if v == "" {
		return "", false, nil
	}
	if !filepath.IsAbs(v) {
		return "", false, &OverrideError{Var: name, Value: v}
	}
	return filepath.Clean(v), true, nil
}

// xdgEnv returns an XDG base directory variable. The XDG spec says relative
// values are invalid and must be ignored.
func xdgEnv(getenv func(string) string, name string) (string, bool) {
	v := getenv(name)
	if v == "" || !filepath.IsAbs(v) {
		return "", false
	}
	return filepath.Clean(v), true
}

// ConfigDir returns the user config directory: $SLUICE_HOME, else
// $XDG_CONFIG_HOME/sluice, else $HOME/.config/sluice. getenv nil means
// os.Getenv. A relative SLUICE_HOME is an *OverrideError; relative XDG and
// HOME values are ignored, as the XDG specification says.
func ConfigDir(getenv func(string) string) (string, error) {
	getenv = envOr(getenv)
	if d, ok, err := overrideEnv(getenv, "SLUICE_HOME"); err != nil || ok {
		return d, err
	}
	if d, ok := xdgEnv(getenv, "XDG_CONFIG_HOME"); ok {
		return filepath.Join(d, AppName), nil
	}
	if d, ok := windowsDir(getenv, "APPDATA"); ok {
		return filepath.Join(d, AppName), nil
	}
	if h, ok := xdgEnv(getenv, "HOME"); ok {
		return filepath.Join(h, ".config", AppName), nil
	}
	return "", fmt.Errorf("%w: set SLUICE_HOME, XDG_CONFIG_HOME or HOME", ErrNoConfigDir)
}

// CacheDir returns the cache directory: $SLUICE_CACHE_DIR, else
// $XDG_CACHE_HOME/sluice, else $HOME/.cache/sluice. A relative
// SLUICE_CACHE_DIR is an *OverrideError.
func CacheDir(getenv func(string) string) (string, error) {
	getenv = envOr(getenv)
	if d, ok, err := overrideEnv(getenv, "SLUICE_CACHE_DIR"); err != nil || ok {
		return d, err
	}
	if d, ok := xdgEnv(getenv, "XDG_CACHE_HOME"); ok {
		return filepath.Join(d, AppName), nil
	}
	if d, ok := windowsDir(getenv, "LOCALAPPDATA"); ok {
		return filepath.Join(d, AppName, "cache"), nil
	}
	if h, ok := xdgEnv(getenv, "HOME"); ok {
		return filepath.Join(h, ".cache", AppName), nil
	}
	return "", fmt.Errorf("%w: set SLUICE_CACHE_DIR, XDG_CACHE_HOME or HOME", ErrNoCacheDir)
}

// StateDir returns the state directory: $XDG_STATE_HOME/sluice, else
// $HOME/.local/state/sluice.
func StateDir(getenv func(string) string) (string, error) {
	getenv = envOr(getenv)
	if d, ok := xdgEnv(getenv, "XDG_STATE_HOME"); ok {
		return filepath.Join(d, AppName), nil
	}
	if d, ok := windowsDir(getenv, "LOCALAPPDATA"); ok {
		return filepath.Join(d, AppName, "state"), nil
	}
	if h, ok := xdgEnv(getenv, "HOME"); ok {
		return filepath.Join(h, ".local", "state", AppName), nil
	}
	return "", fmt.Errorf("%w: set XDG_STATE_HOME or HOME", ErrNoStateDir)
}

// ProjectRoot picks the project root. flag (the --project value, relative to
// cwd when not absolute) wins and must be an existing directory. Otherwise it
// is the nearest ancestor of cwd (cwd included) holding a .sluice directory,
// else the nearest holding .git (a directory, or a file in worktrees), else
// cwd itself. The result is absolute and cleaned but not symlink-resolved;
// see CanonicalDir.
func ProjectRoot(cwd, flag string) (string, error) {
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrProjectRoot, err)
		}
		cwd = wd
	}
	cwd, err := filepath.Abs(cwd)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrProjectRoot, err)
	}
	if flag != "" {
		p := flag
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		p = filepath.Clean(p)
		st, err := os.Stat(p)
		if err != nil {
			return "", &PathError{Op: "project", Path: p, Err: fmt.Errorf("%w: %v; pass an existing directory to --project", ErrProjectRoot, errors.Unwrap(err))}
		}
		if !st.IsDir() {
			return "", &PathError{Op: "project", Path: p, Err: fmt.Errorf("%w: not a directory; pass a directory to --project", ErrProjectRoot)}
		}
		return p, nil
	}
	if d, ok := nearest(cwd, ProjectDirName, true); ok {
		return d, nil
	}
	if d, ok := nearest(cwd, ".git", false); ok {
		return d, nil
	}
	return cwd, nil
}

// nearest walks from dir to the filesystem root and returns the first
// directory that contains name (a directory when wantDir).
func nearest(dir, name string, wantDir bool) (string, bool) {
	for {
		st, err := os.Stat(filepath.Join(dir, name))
		if err == nil && (!wantDir || st.IsDir()) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// CanonicalDir returns the absolute, symlink-free form of dir.
func CanonicalDir(dir string) (string, error) { return files.Canonical(dir) }

// Contain checks that dir stays inside root by the one containment rule
// (proc.Resolve: lexically and after resolving every symlink; the part of
// dir that does not exist yet is checked lexically below its deepest
// existing ancestor). A relative dir is taken relative to root; exists
// reports whether the whole path exists. The returned path is absolute and
// symlink-free (up to the missing tail).
//
// proc.Contain applies the same rule again at spawn (the boundary that
// matters); this call gives early feedback with a file position.
func Contain(root, dir string) (resolved string, exists bool, err error) {
	if a, aerr := filepath.Abs(root); aerr == nil {
		root = a
	}
	resolved, exists, err = proc.Resolve(root, dir)
	if err == nil {
		return resolved, exists, nil
	}
	var ce *proc.CwdError
	if errors.As(err, &ce) {
		switch ce.Reason {
		case proc.ReasonCwdEscapes, proc.ReasonCwdEscapesSymlink:
			return "", false, &PathError{Op: "cwd", Path: dir, Root: root, Err: ErrEscapes}
		}
		cause := ce.Err
		if j, ok := cause.(interface{ Unwrap() []error }); ok {
			if errs := j.Unwrap(); len(errs) > 0 {
				cause = errs[len(errs)-1] // the OS error beside proc's sentinel
			}
		}
		return "", false, &PathError{Op: "cwd", Path: dir, Root: root, Err: cause}
	}
	return "", false, &PathError{Op: "cwd", Path: dir, Root: root, Err: err}
}
