package proc

import "os"

func resolveCommand(cmd, path string) (string, error) {
	return resolveWindows(cmd, path, os.Getenv("PATHEXT"), func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.Mode().IsRegular()
	})
}
