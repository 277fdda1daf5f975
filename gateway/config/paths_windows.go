package config

// windowsDir returns a Windows known-folder variable (APPDATA for
// configuration, which roams with the profile; LOCALAPPDATA for cache and
// state, which stay on the machine). It is consulted after the SLUICE_*
// and XDG_* variables and before HOME, which Windows does not set.
func windowsDir(getenv func(string) string, name string) (string, bool) {
	return xdgEnv(getenv, name)
}
