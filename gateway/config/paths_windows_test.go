package config

import (
	"path/filepath"
	"testing"
)

func TestWindowsDirs(t *testing.T) {
	env := map[string]string{`APPDATA`: `C:\Users\u\AppData\Roaming`, `LOCALAPPDATA`: `C:\Users\u\AppData\Local`}
	getenv := func(k string) string { return env[k] }
	for _, c := range []struct {
		name string
		f    func(func(string) string) (string, error)
		want string
	}{
		{"config", ConfigDir, `C:\Users\u\AppData\Roaming\sluice`},
		{"cache", CacheDir, `C:\Users\u\AppData\Local\sluice\cache`},
		{"state", StateDir, `C:\Users\u\AppData\Local\sluice\state`},
	} {
		got, err := c.f(getenv)
		if err != nil || got != filepath.Clean(c.want) {
			t.Errorf("%s dir = %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	// The overrides and XDG variables still come first.
	env["SLUICE_HOME"] = `D:\sluice-home`
	env["XDG_CACHE_HOME"] = `D:\xdg-cache`
	if d, _ := ConfigDir(getenv); d != `D:\sluice-home` {
		t.Errorf("SLUICE_HOME ignored: %q", d)
	}
	if d, _ := CacheDir(getenv); d != `D:\xdg-cache\sluice` {
		t.Errorf("XDG_CACHE_HOME ignored: %q", d)
	}
	// A relative value is ignored, as for XDG.
	delete(env, "SLUICE_HOME")
	env["APPDATA"] = `relative\dir`
	if d, err := ConfigDir(getenv); err == nil {
		t.Errorf("relative APPDATA used: %q", d)
	}
}
