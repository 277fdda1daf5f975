package config

import (
	"os"
	"path/filepath"
	"strings"
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

// TestWindowsResolveProgram: a declared command resolves as Windows runs
// it (PATHEXT, .exe and .com only; no execute bit to look for), and a
// hard link to cmd.exe under another name is refused by file identity.
func TestWindowsResolveProgram(t *testing.T) {
	dir := winTempDir(t)
	for _, f := range []string{"tool.exe", "script.cmd", "plain"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("MZ"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATHEXT", ".COM;.EXE;.BAT;.CMD")
	exe := filepath.Join(dir, "tool.exe")
	for _, c := range []struct{ command, want string }{
		{"tool", exe},
		{"TOOL.EXE", filepath.Join(dir, "TOOL.EXE")},
		{exe, exe},
		{filepath.ToSlash(exe), exe},
		{"script", ""},
		{filepath.Join(dir, "script.cmd"), ""},
		{filepath.Join(dir, "plain"), ""},
		{"missing", ""},
	} {
		got := ResolveProgram(c.command, `relative;`+dir)
		if !strings.EqualFold(got, c.want) {
			t.Errorf("ResolveProgram(%q) = %q, want %q", c.command, got, c.want)
		}
	}
	cmdExe := filepath.Join(os.Getenv("SystemRoot"), "System32", "cmd.exe")
	if p := CheckProgram(ScopeUser, cmdExe, nil); !strings.Contains(p, "shell") {
		t.Errorf("CheckProgram(%s) = %q", cmdExe, p)
	}
	link := filepath.Join(dir, "innocent.exe")
	if err := os.Link(cmdExe, link); err != nil {
		t.Fatalf("hard link to cmd.exe: %v", err)
	}
	if p := CheckProgram(ScopeUser, link, nil); !strings.Contains(p, "same file as") {
		t.Errorf("CheckProgram(hard link to cmd.exe) = %q", p)
	}
}

// winTempDir is t.TempDir with a cleanup that removes file by file: Wine
// lacks the file-disposition call os.RemoveAll makes on Windows.
func winTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sluice-config-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				t.Error(err)
			}
		}
		if err := os.Remove(dir); err != nil {
			t.Error(err)
		}
	})
	return dir
}
