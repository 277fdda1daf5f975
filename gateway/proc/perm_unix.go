//go:build !windows

package proc

import (
	"io/fs"
	"os"
)

func mkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return nil
}

func openToOthers(fi fs.FileInfo) bool { return fi.Mode().Perm()&0o077 != 0 }
