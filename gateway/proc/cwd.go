package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Contain is the containment rule of a server's working directory, the
// one check for it: dir must stay inside root, lexically and after
// resolving every symbolic link in both (Resolve), and exist as a
// directory. It returns the resolved directory. A relative dir is taken
// relative to root; "" means root itself. root must be absolute. Errors are
// *CwdError with a reason code. Start calls it at spawn, which is the check
// that matters; configuration loading calls Resolve for early feedback.
func Contain(root, dir string) (string, error) {
	rd, _, err := Resolve(root, dir)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(rd)
	if err != nil {
		return "", &CwdError{Root: root, Dir: dir, Reason: ReasonCwdNotFound, Err: errors.Join(ErrCwdInvalid, err)}
	}
	if !fi.IsDir() {
		return "", &CwdError{Root: root, Dir: dir, Reason: ReasonCwdNotDir, Err: ErrCwdInvalid}
	}
	return rd, nil
}

// Resolve applies Contain's rule to a dir that need not exist yet: the
// missing part is checked lexically below its deepest existing ancestor,
// which must resolve inside root (a dangling symlink on the way is refused:
// its target could be created anywhere later). exists reports whether the
// whole path exists; resolved is absolute and symlink-free up to the
// missing tail.
func Resolve(root, dir string) (resolved string, exists bool, err error) {
	if root == "" || !filepath.IsAbs(root) {
		return "", false, &CwdError{Root: root, Dir: dir, Reason: ReasonRootInvalid, Err: fmt.Errorf("%w: root must be an absolute path", ErrCwdInvalid)}
	}
	croot := filepath.Clean(root)
	d := dir
	if d == "" {
		d = croot
	} else if !filepath.IsAbs(d) {
		d = filepath.Join(croot, d)
	}
	d = filepath.Clean(d)
	rroot, err := filepath.EvalSymlinks(croot)
	if err != nil {
		return "", false, &CwdError{Root: root, Dir: dir, Reason: ReasonRootInvalid, Err: errors.Join(ErrCwdInvalid, err)}
	}
	if !within(croot, d) && !within(rroot, d) {
		return "", false, &CwdError{Root: root, Dir: dir, Reason: ReasonCwdEscapes, Err: ErrCwdEscape}
	}
	head, tail := d, ""
	for {
		r, err := filepath.EvalSymlinks(head)
		if err == nil {
			resolved = r
			if tail != "" {
				resolved = filepath.Join(r, tail)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", false, &CwdError{Root: root, Dir: dir, Reason: ReasonCwdNotFound, Err: errors.Join(ErrCwdInvalid, err)}
		}
		if _, lerr := os.Lstat(head); lerr == nil {
			return "", false, &CwdError{Root: root, Dir: dir, Reason: ReasonCwdNotFound, Err: fmt.Errorf("%w: %s is a dangling symlink", ErrCwdInvalid, head)}
		}
		parent := filepath.Dir(head)
		if parent == head {
			return "", false, &CwdError{Root: root, Dir: dir, Reason: ReasonCwdNotFound, Err: errors.Join(ErrCwdInvalid, err)}
		}
		tail = filepath.Join(filepath.Base(head), tail)
		head = parent
	}
	if !within(rroot, resolved) {
		return "", false, &CwdError{Root: root, Dir: dir, Reason: ReasonCwdEscapesSymlink, Err: ErrCwdEscape}
	}
	return resolved, tail == "", nil
}

// within reports whether p is root or below it; both must be clean.
// Names are compared exactly, also where the file system ignores case
// (macOS, Windows): a different spelling is refused, loudly, rather than
// a case-folding comparison accepting a different directory on a
// case-sensitive volume.
func within(root, p string) bool {
	if p == root {
		return true
	}
	sep := string(filepath.Separator)
	if strings.HasSuffix(root, sep) { // "/" or a volume root such as `C:\`
		return strings.HasPrefix(p, root)
	}
	return strings.HasPrefix(p, root+sep)
}
