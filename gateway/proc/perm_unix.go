//go:build !windows

package proc

import (
	"fmt"
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
