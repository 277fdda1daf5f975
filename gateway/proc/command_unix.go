//go:build !windows

package proc

func resolveCommand(cmd, path string) (string, error) { return resolveUnix(cmd, path) }
