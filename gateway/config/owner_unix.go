//go:build unix

package config

import (
	"os"
	"syscall"
)

// foreignOwner reports the owner of path (not following a final symlink)
// when it is neither this user nor root: a directory another user can
// write, such as /tmp, can hold a .sluice of theirs above this user's
// working directory.
func foreignOwner(path string) (int, bool) {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0, false
	}
	return foreignInfo(fi)
}

// foreignInfo is foreignOwner of a file already stat'ed (an open file's
// Stat, which no later rename can change).
func foreignInfo(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	uid := int(st.Uid)
	return uid, uid != 0 && uid != os.Getuid()
}
