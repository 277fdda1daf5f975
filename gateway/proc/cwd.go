package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Contain checks that dir stays inside root, first lexically and then
// after resolving every symbolic link in both, and returns the resolved
// directory. A relative dir is taken relative to root; "" means root
// itself. root must be absolute. Errors are *CwdError with a reason code.
// The gateway calls it when a declaration is loaded (early feedback) and
// Start calls it again at spawn, which is the check that matters.
func Contain(root, dir string) (string, error) {
	if root == "" || !filepath.IsAbs(root) {
		return "", &CwdError{Root: root, Dir: dir, Reason: ReasonRootInvalid, Err: fmt.Errorf("%w: root must be an absolute path", ErrCwdInvalid)}
	}
	croot := filepath.Clean(root)
	d := dir
	if d == "" {
		d = croot
	} else if !filepath.IsAbs(d) {
		d = filepath.Join(croot, d)
	}
	d = filepath.Clean(d)
	if !within(croot, d) {
		return "", &CwdError{Root: root, Dir: dir, Reason: ReasonCwdEscapes, Err: ErrCwdEscape}
	}
	rroot, err := filepath.EvalSymlinks(croot)
	if err != nil {
		return "", &CwdError{Root: root, Dir: dir, Reason: ReasonRootInvalid, Err: errors.Join(ErrCwdInvalid, err)}
	}
	rd, err := filepath.EvalSymlinks(d)
	if err != nil {
		return "", &CwdError{Root: root, Dir: dir, Reason: ReasonCwdNotFound, Err: errors.Join(ErrCwdInvalid, err)}
	}
	if !within(rroot, rd) {
		return "", &CwdError{Root: root, Dir: dir, Reason: ReasonCwdEscapesSymlink, Err: ErrCwdEscape}
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
