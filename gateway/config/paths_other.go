//go:build !windows

package config

// windowsDir: only Windows has %APPDATA% and %LOCALAPPDATA%.
func windowsDir(getenv func(string) string, name string) (string, bool) { return "", false }
