//go:build !windows

package proc

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

func mkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// Check and tighten the directory that was opened, so a rename in
	// between cannot point the chmod at another one.
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if !openToOthers(fi) {
		return nil
	}
	open := fmt.Sprintf("mode %04o", fi.Mode().Perm())
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return &PrivateDirError{Dir: dir, Open: open, Why: fmt.Sprintf("belongs to uid %d, not to you (uid %d)", st.Uid, os.Geteuid())}
	}
	// A sticky or setgid directory is made to be shared (like /tmp, or a
	// team's directory): tightening it would break the others using it.
	if fi.Mode()&(fs.ModeSticky|fs.ModeSetgid) != 0 {
		bit := "sticky"
		if fi.Mode()&fs.ModeSticky == 0 {
			bit = "setgid"
		}
		return &PrivateDirError{Dir: dir, Open: open, Why: "is made to be shared (its " + bit + " bit is set)"}
	}
	// The current user's directory: drop every group and world bit.
	if err := f.Chmod(fi.Mode().Perm() &^ 0o077); err != nil {
		return fmt.Errorf("making %s private (mode %04o lets others in): %w", dir, fi.Mode().Perm(), err)
	}
	return nil
}

// privateFix is the command that makes dir private.
func privateFix(dir string) string { return "chmod 700 " + shellWord(dir) }

// shellWord quotes s for a POSIX shell unless it is plain.
func shellWord(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '/' || r == '.' || r == '_' || r == '-') {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

func openToOthers(fi fs.FileInfo) bool { return fi.Mode().Perm()&0o077 != 0 }

func checkPrivateDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if openToOthers(fi) {
		return fmt.Errorf("%s has mode %v: group or others may read or enter it", dir, fi.Mode().Perm())
	}
	return nil
}
