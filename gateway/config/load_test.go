package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func envFunc(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDirs(t *testing.T) {
	cases := []struct {
		name                 string
		env                  map[string]string
		config, cache, state string
	}{
		{"sluice vars", map[string]string{"SLUICE_HOME": "/s/home", "SLUICE_CACHE_DIR": "/s/cache", "XDG_CONFIG_HOME": "/x/c", "XDG_CACHE_HOME": "/x/k", "XDG_STATE_HOME": "/x/s", "HOME": "/h"}, "/s/home", "/s/cache", "/x/s/sluice"},
		{"xdg", map[string]string{"XDG_CONFIG_HOME": "/x/c", "XDG_CACHE_HOME": "/x/k", "XDG_STATE_HOME": "/x/s", "HOME": "/h"}, "/x/c/sluice", "/x/k/sluice", "/x/s/sluice"},
		{"home", map[string]string{"HOME": "/h"}, "/h/.config/sluice", "/h/.cache/sluice", "/h/.local/state/sluice"},
		{"relative xdg ignored", map[string]string{"XDG_CONFIG_HOME": "rel", "XDG_CACHE_HOME": "rel", "XDG_STATE_HOME": "rel", "HOME": "/h"}, "/h/.config/sluice", "/h/.cache/sluice", "/h/.local/state/sluice"},
		{"nothing", map[string]string{}, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := envFunc(c.env)
			for _, x := range []struct {
				f    func(func(string) string) (string, error)
				want string
			}{{ConfigDir, c.config}, {CacheDir, c.cache}, {StateDir, c.state}} {
				got, err := x.f(g)
				if (err != nil) != (x.want == "") || got != x.want {
					t.Errorf("got %q, %v; want %q", got, err, x.want)
				}
			}
		})
	}
}

func mkdirs(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	mkdirs(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestProjectRoot(t *testing.T) {
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	inner := filepath.Join(repo, "pkg", "inner")
	mkdirs(t, filepath.Join(repo, ".git"), filepath.Join(repo, "pkg", ".sluice"), filepath.Join(inner, "deep"), filepath.Join(tmp, "plain", "x"))
	cases := []struct{ cwd, flag, want string }{
		{filepath.Join(inner, "deep"), "", filepath.Join(repo, "pkg")}, // nearest .sluice wins over git root
		{repo, "", repo}, // git root
		{filepath.Join(tmp, "plain", "x"), "", filepath.Join(tmp, "plain", "x")}, // nothing: cwd
		{inner, repo, repo},        // explicit flag
		{repo, "pkg/inner", inner}, // relative flag
	}
	for _, c := range cases {
		got, err := ProjectRoot(c.cwd, c.flag)
		if err != nil || got != c.want {
			t.Errorf("ProjectRoot(%q, %q) = %q, %v; want %q", c.cwd, c.flag, got, err, c.want)
		}
	}
	if _, err := ProjectRoot(repo, "missing"); err == nil || !strings.Contains(err.Error(), "--project") {
		t.Errorf("missing flag dir: %v", err)
	}
	write(t, filepath.Join(repo, "file"), "")
	if _, err := ProjectRoot(repo, "file"); err == nil {
		t.Error("file as project root accepted")
	}
}

func TestProjectCwdSymlinks(t *testing.T) {
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	outside := filepath.Join(tmp, "outside")
	mkdirs(t, filepath.Join(repo, "real", "sub"), outside)
	write(t, filepath.Join(repo, "file.txt"), "x")
	links := map[string]string{
		"out":      outside,                    // absolute symlink leaving the repo
		"rel-out":  "../outside",               // relative symlink leaving the repo
		"in":       "real",                     // symlink staying inside
		"dangling": filepath.Join(tmp, "nope"), // target that does not exist
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(repo, name)); err != nil {
			t.Fatal(err)
		}
	}
	crepo, _ := CanonicalDir(repo)
	cases := []struct {
		cwd     string
		ok      bool
		dir     string
		warning bool
	}{
		{"real/sub", true, filepath.Join(crepo, "real", "sub"), false},
		{"in/sub", true, filepath.Join(crepo, "real", "sub"), false},
		{"in/../real", true, filepath.Join(crepo, "real"), false},
		{"out", false, "", false},
		{"out/x", false, "", false},
		{"rel-out", false, "", false},
		{"dangling", false, "", false},
		{"dangling/x", false, "", false},
		{"not/yet", true, filepath.Join(crepo, "not", "yet"), true},
		{".", true, crepo, false},
		{"file.txt", false, "", false},
		{"~/x", false, "", false},
		{"\"a\\tb\"", false, "", false},
	}
	for _, c := range cases {
		t.Run(c.cwd, func(t *testing.T) {
			ss, _, ds := Parse([]byte("servers:\n  s:\n    command: x\n    cwd: "+c.cwd+"\n"), "p.yaml", ScopeProject, repo)
			if c.ok != (len(ss) == 1) {
				t.Fatalf("kept=%v;%s", len(ss) == 1, dump(ds))
			}
			if !c.ok {
				if ds[0].Line != 4 || ds[0].Column != 10 || ds[0].Field != "servers.s.cwd" {
					t.Errorf("position:%s", dump(ds))
				}
				return
			}
			if ss[0].Dir != c.dir || ss[0].Root != crepo {
				t.Errorf("Dir %q Root %q, want %q %q", ss[0].Dir, ss[0].Root, c.dir, crepo)
			}
			if c.warning != (len(ds) == 1 && ds[0].Severity == SeverityWarning) {
				t.Errorf("warning want %v;%s", c.warning, dump(ds))
			}
		})
	}
	// The repository root itself reached through a symlink is fine.
	link := filepath.Join(tmp, "repolink")
	if err := os.Symlink(repo, link); err != nil {
		t.Fatal(err)
	}
	ss, _, ds := Parse([]byte("servers:\n  s: {command: x, cwd: in}\n"), "p.yaml", ScopeProject, link)
	if len(ss) != 1 || ss[0].Dir != filepath.Join(crepo, "real") {
		t.Errorf("via symlinked root:%s", dump(ds))
	}
}

func TestUserCwd(t *testing.T) {
	cfg := t.TempDir()
	abs := t.TempDir()
	mkdirs(t, filepath.Join(cfg, "work"))
	ccfg, _ := CanonicalDir(cfg)
	cabs, _ := CanonicalDir(abs)
	ss, _, ds := Parse([]byte("servers:\n  a: {command: x, cwd: work}\n  b: {command: x, cwd: "+abs+"}\n  c: {command: x}\n"), "u.yaml", ScopeUser, cfg)
	if len(ss) != 3 {
		t.Fatalf("%s", dump(ds))
	}
	if ss[0].Dir != filepath.Join(ccfg, "work") || ss[0].Root != ccfg {
		t.Errorf("a: %q %q", ss[0].Dir, ss[0].Root)
	}
	if ss[1].Dir != cabs || ss[1].Root != cabs || ss[1].Cwd != abs {
		t.Errorf("b: %q %q", ss[1].Dir, ss[1].Root)
	}
	if ss[2].Dir != ccfg || ss[2].Root != ccfg {
		t.Errorf("c: %q %q", ss[2].Dir, ss[2].Root)
	}
}

func TestLoad(t *testing.T) {
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	repo := filepath.Join(tmp, "repo")
	mkdirs(t, filepath.Join(repo, ".git"), filepath.Join(repo, "src"))
	write(t, filepath.Join(home, "mcp.yaml"), "servers:\n  shared: {command: /usr/bin/a, actionClass: read}\n  mine: {command: b}\nidleTimeoutMs: 5\n")
	write(t, filepath.Join(repo, ".sluice", "mcp.yaml"), "servers:\n  shared: {command: evil}\n  proj: {command: c, cwd: src}\n  bad: {command: sh}\n")
	l := Load(LoadOptions{Cwd: filepath.Join(repo, "src"), Getenv: envFunc(map[string]string{"SLUICE_HOME": home})})
	crepo, _ := CanonicalDir(repo)
	if l.ProjectRoot != crepo || l.UserFile != filepath.Join(home, "mcp.yaml") || l.ProjectFile != filepath.Join(repo, ".sluice", "mcp.yaml") {
		t.Errorf("paths: %+v", l)
	}
	if got := strings.Join(ids(l.Servers), ","); got != "shared,mine,proj" {
		t.Fatalf("servers %s;%s", got, dump(l.Diagnostics))
	}
	if s, _ := l.Server("shared"); s.Scope != ScopeUser || s.Command != "/usr/bin/a" {
		t.Errorf("user did not win: %+v", s)
	}
	if s, _ := l.Server("proj"); s.Scope != ScopeProject || s.Root != crepo || s.Dir != filepath.Join(crepo, "src") || s.ActionClass != "" {
		t.Errorf("proj: %+v", s)
	}
	if l.Settings.IdleTimeoutMs != 5 {
		t.Errorf("settings %+v", l.Settings)
	}
	var shadow, shell bool
	for _, d := range l.Diagnostics {
		if d.Field == "servers.shared" && d.Line == 2 && strings.Contains(d.Message, "user declaration wins") {
			shadow = true
		}
		if d.Field == "servers.bad.command" && d.Line == 4 {
			shell = true
		}
	}
	if !shadow || !shell || !l.Errors() {
		t.Errorf("diagnostics:%s", dump(l.Diagnostics))
	}

	// An oversized project file contributes nothing; the user file still loads.
	write(t, filepath.Join(repo, ".sluice", "mcp.yaml"), "servers:\n  p: {command: c}\n#"+strings.Repeat("x", MaxFileBytes))
	l = Load(LoadOptions{Cwd: repo, Getenv: envFunc(map[string]string{"SLUICE_HOME": home})})
	if got := strings.Join(ids(l.Servers), ","); got != "shared,mine" || len(l.Diagnostics) != 1 || !strings.Contains(l.Diagnostics[0].Message, "cap") {
		t.Errorf("oversized: %s;%s", got, dump(l.Diagnostics))
	}
	// A malformed user file contributes nothing, settings included.
	write(t, filepath.Join(home, "mcp.yaml"), "servers: [\nidleTimeoutMs: 5\n")
	l = Load(LoadOptions{Cwd: tmp, Project: repo, Getenv: envFunc(map[string]string{"SLUICE_HOME": home})})
	if l.Settings.IdleTimeoutMs != 0 || !l.Errors() {
		t.Errorf("malformed user file: %+v", l)
	}
	// Missing files are not problems.
	empty := t.TempDir()
	l = Load(LoadOptions{Cwd: empty, Getenv: envFunc(map[string]string{"HOME": filepath.Join(empty, "h")})})
	if len(l.Servers) != 0 || len(l.Diagnostics) != 0 || l.UserFile != filepath.Join(empty, "h", ".config", "sluice", "mcp.yaml") {
		t.Errorf("missing: %+v", l)
	}
	// No config dir at all: a diagnostic, project scope still loads.
	l = Load(LoadOptions{Cwd: repo, Getenv: envFunc(nil)})
	if l.UserFile != "" || len(l.Diagnostics) == 0 {
		t.Errorf("no config dir: %+v", l)
	}
	// A directory where the file should be is a diagnostic, not a hang.
	mkdirs(t, filepath.Join(empty, "cfg", "mcp.yaml"))
	l = Load(LoadOptions{Cwd: empty, ConfigDir: filepath.Join(empty, "cfg")})
	if len(l.Diagnostics) != 1 || !strings.Contains(l.Diagnostics[0].Message, "regular file") {
		t.Errorf("dir as file:%s", dump(l.Diagnostics))
	}
}
