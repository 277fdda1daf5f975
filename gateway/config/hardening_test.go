package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRelativeOverridesRefused(t *testing.T) {
	for _, c := range []struct {
		v string
		f func(func(string) string) (string, error)
	}{{"SLUICE_HOME", ConfigDir}, {"SLUICE_CACHE_DIR", CacheDir}} {
		for _, val := range []string{".sluice", "rel/dir", "./x", "~/x"} {
			got, err := c.f(envFunc(map[string]string{c.v: val, "HOME": "/h"}))
			var oe *OverrideError
			if !errors.As(err, &oe) || !errors.Is(err, ErrRelativeOverride) || oe.Var != c.v || got != "" {
				t.Errorf("%s=%q: got %q, %v; want an OverrideError", c.v, val, got, err)
				continue
			}
			if !strings.Contains(err.Error(), "absolute path") || !strings.Contains(err.Error(), c.v) {
				t.Errorf("%s=%q: message lacks the fix: %v", c.v, val, err)
			}
		}
		if got, err := c.f(envFunc(map[string]string{c.v: "/abs/dir/", "HOME": "/h"})); err != nil || got != "/abs/dir" {
			t.Errorf("%s absolute: %q %v", c.v, got, err)
		}
	}
}

// A repository whose .sluice/mcp.yaml would become user scope through a
// relative SLUICE_HOME loads nothing in user scope.
func TestRelativeSluiceHomeDoesNotMakeTheProjectUserScope(t *testing.T) {
	repo := t.TempDir()
	mkdirs(t, filepath.Join(repo, ".git"))
	write(t, filepath.Join(repo, ".sluice", "mcp.yaml"), "servers:\n  evil: {command: /bin/true}\n")
	t.Chdir(repo)
	l := Load(LoadOptions{Cwd: repo, Getenv: envFunc(map[string]string{"SLUICE_HOME": ".sluice", "HOME": "/h"})})
	for _, s := range l.Servers {
		if s.Scope == ScopeUser {
			t.Fatalf("server %s loaded in user scope from %s", s.ID, s.File)
		}
	}
	if !l.Errors() || !strings.Contains(dump(l.Diagnostics), "SLUICE_HOME=\".sluice\" is a relative path") {
		t.Fatalf("want a diagnostic naming SLUICE_HOME:%s", dump(l.Diagnostics))
	}
}

func TestProjectEnvDenyList(t *testing.T) {
	denied := []string{"PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "DYLD_INSERT_LIBRARIES", "NODE_OPTIONS", "NODE_PATH",
		"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONWARNINGS", "PERL5LIB", "PERL5OPT", "RUBYOPT", "RUBYLIB",
		"GEM_PATH", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "BASH_ENV", "ENV", "IFS", "GIT_SSH_COMMAND", "GIT_EXEC_PATH",
		"GIT_CONFIG_COUNT", "NPM_CONFIG_REGISTRY", "UV_INDEX_URL", "HOME", "XDG_CONFIG_HOME", "OPENSSL_CONF",
		"NODE_EXTRA_CA_CERTS", "GOFLAGS", "RUSTC_WRAPPER", "CARGO_BUILD_RUSTC_WRAPPER", "LUA_INIT", "PHPRC",
		"SLUICE_HOME", "EDITOR", "SHELL", "BASH_FUNC_X"}
	for _, key := range denied {
		src := "servers:\n  web:\n    command: node\n    env:\n      OK_VAR: \"1\"\n      " + key + ": \"x\"\n"
		servers, _, diags := Parse([]byte(src), "p.yaml", ScopeProject, t.TempDir())
		if len(servers) != 0 {
			t.Errorf("%s: the server loaded; nothing from it may run", key)
		}
		found := false
		for _, d := range diags {
			if d.Severity == SeverityError && d.Line == 6 && d.Column == 7 && d.Field == "servers.web.env."+key &&
				strings.Contains(d.Message, "may not set "+key) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: want an error at p.yaml:6:7:%s", key, dump(diags))
		}
		// User scope: the operator is the author.
		if servers, _, diags := Parse([]byte(src), "u.yaml", ScopeUser, t.TempDir()); len(servers) != 1 {
			t.Errorf("%s in user scope was refused:%s", key, dump(diags))
		}
	}
	for _, key := range []string{"PYTHONUNBUFFERED", "NODE_ENV", "API_TOKEN", "NPM_TOKEN", "LOG_LEVEL", "GOMAXPROCS", "DEBUG"} {
		src := "servers:\n  web:\n    command: node\n    env:\n      " + key + ": \"1\"\n"
		if servers, _, diags := Parse([]byte(src), "p.yaml", ScopeProject, t.TempDir()); len(servers) != 1 {
			t.Errorf("%s was refused in project scope:%s", key, dump(diags))
		}
	}
}

func TestCommandProblem(t *testing.T) {
	refused := []struct {
		scope Scope
		cmd   string
		args  []string
	}{
		{ScopeUser, "python3", []string{"-c", "import os"}},
		{ScopeUser, "python3.12", []string{"-I", "-c", "x"}},
		{ScopeUser, "/usr/bin/python", []string{"-Bc", "x"}},
		{ScopeUser, "python", []string{"-W", "ignore", "-c", "x"}},
		{ScopeUser, "pypy3", []string{"-c", "x"}},
		{ScopeUser, "perl", []string{"-e", "print 1"}},
		{ScopeUser, "perl", []string{"-lne", "print"}},
		{ScopeUser, "perl5.36", []string{"-E", "say 1"}},
		{ScopeUser, "perl", []string{"-Mstrict;system(q(id))", "x.pl"}},
		{ScopeUser, "node", []string{"-e", "1"}},
		{ScopeUser, "node", []string{"--eval", "1"}},
		{ScopeUser, "node", []string{"--eval=1"}},
		{ScopeUser, "node", []string{"-p", "1"}},
		{ScopeUser, "node", []string{"-pe", "1"}},
		{ScopeUser, "node", []string{"--print", "1"}},
		{ScopeUser, "node22", []string{"--no-warnings", "-e", "1"}},
		{ScopeUser, "node", []string{"--import", "data:text/javascript,1", "s.js"}},
		{ScopeUser, "node", []string{"--run", "start"}},
		{ScopeUser, "nodejs", []string{"-e", "1"}},
		{ScopeUser, "ruby", []string{"-e", "1"}},
		{ScopeUser, "ruby", []string{"-rjson", "-ne", "1"}},
		{ScopeUser, "awk", []string{"BEGIN{system(\"id\")}"}},
		{ScopeUser, "gawk", []string{"-f", "x.awk"}},
		{ScopeUser, "sed", []string{"e id"}},
		{ScopeUser, "find", []string{".", "-exec", "sh", "{}", ";"}},
		{ScopeUser, "find", []string{".", "-okdir", "x", ";"}},
		{ScopeUser, "xargs", []string{"sh"}},
		{ScopeUser, "env", []string{"node", "s.js"}},
		{ScopeUser, "/usr/bin/env", []string{"node"}},
		{ScopeUser, "deno", []string{"eval", "1"}},
		{ScopeUser, "deno", []string{"task", "start"}},
		{ScopeUser, "deno", []string{"run", "data:application/javascript,1"}},
		{ScopeUser, "bun", []string{"-e", "1"}},
		{ScopeUser, "bun", []string{"exec", "id"}},
		{ScopeUser, "php", []string{"-r", "echo 1;"}},
		{ScopeUser, "php8.3", []string{"-d", "x=1", "-B", "1"}},
		{ScopeUser, "lua", []string{"-e", "os.execute('id')"}},
		{ScopeUser, "lua5.4", []string{"-e", "1"}},
		{ScopeUser, "Rscript", []string{"-e", "1"}},
		{ScopeUser, "julia", []string{"-e", "1"}},
		{ScopeUser, "elixir", []string{"-e", "1"}},
		{ScopeUser, "erl", []string{"-noshell", "-eval", "1"}},
		{ScopeUser, "osascript", []string{"-e", "x"}},
		{ScopeUser, "npx", []string{"-c", "id"}},
		{ScopeUser, "npx", []string{"-y", "bash", "-c", "id"}},
		{ScopeUser, "npx", []string{"-y", "node@22", "-e", "1"}},
		{ScopeUser, "npm", []string{"exec", "--", "sh", "-c", "id"}},
		{ScopeUser, "npm", []string{"run", "start"}},
		{ScopeUser, "npm", []string{"start"}},
		{ScopeUser, "uv", []string{"run", "python", "-c", "1"}},
		{ScopeUser, "uv", []string{"run", "--with", "x", "--", "bash", "-c", "1"}},
		{ScopeUser, "uv", []string{"tool", "run", "sh"}},
		{ScopeUser, "uvx", []string{"--from", "pkg", "python", "-c", "1"}},
		{ScopeUser, "pipx", []string{"run", "bash"}},
		{ScopeUser, "yarn", []string{"run", "build"}},
		{ScopeUser, "yarn", []string{"build"}},                             // a script by its bare name
		{ScopeUser, "yarn", []string{"--cwd", "pkg", "serve-mcp"}},         // after an option with a value
		{ScopeUser, "yarn", []string{"workspace", "server", "start"}},      // a workspace's script
		{ScopeUser, "yarn", []string{"node", "-e", "1"}},                   // yarn node is node
		{ScopeUser, "yarn", []string{"dlx", "-p", "x", "bash", "-c", "1"}}, // dlx's inner program
		{ScopeProject, "node", []string{"--env-file=.env", "s.js"}},
		{ScopeProject, "uv", []string{"run", "--env-file", ".env", "s.py"}},
	}
	for _, c := range refused {
		if p := CommandProblem(c.scope, c.cmd, c.args); p == "" {
			t.Errorf("%s %s %q: allowed, want refused", c.scope, c.cmd, c.args)
		}
	}
	allowed := []struct {
		cmd  string
		args []string
	}{
		{"python3", []string{"server.py", "-c", "config.yaml"}},
		{"python3", []string{"-m", "mcp_server", "-c", "x"}},
		{"python", []string{"-u", "-W", "ignore", "server.py"}},
		{"perl", []string{"-Ilib", "-MJSON::PP", "server.pl", "-e", "x"}},
		{"node", []string{"server.js", "-e", "x"}},
		{"node", []string{"--require", "./setup.js", "dist/index.js"}},
		{"node", []string{"--max-old-space-size=4096", "s.js"}},
		{"ruby", []string{"server.rb", "-e"}},
		{"deno", []string{"run", "--allow-read", "server.ts"}},
		{"bun", []string{"run", "server.ts"}},
		{"npx", []string{"-y", "@modelcontextprotocol/server-filesystem", "/tmp"}},
		{"npx", []string{"-y", "@playwright/mcp@latest"}},
		{"uvx", []string{"mcp-server-fetch"}},
		{"uv", []string{"run", "server.py"}},
		{"uv", []string{"--directory", "x", "run", "server.py"}},
		{"find-mcp", []string{"-exec"}},
		{"lua", []string{"server.lua", "-e"}},
		{"node", []string{"--env-file=.env", "s.js"}}, // user scope
		{"docker", []string{"run", "-i", "--rm", "mcp/fetch"}},
		{"yarn", []string{"dlx", "@modelcontextprotocol/server-filesystem", "/tmp"}},
		{"yarn", []string{"node", "dist/server.js"}},
		{"yarn", []string{"install"}},
	}
	for _, c := range allowed {
		if p := CommandProblem(ScopeUser, c.cmd, c.args); p != "" {
			t.Errorf("%s %q: refused (%s), want allowed", c.cmd, c.args, p)
		}
	}
}

// TestParseRefusesInlineCode: the parser reports inline code at the
// command's position and drops the server.
func TestParseRefusesInlineCode(t *testing.T) {
	src := "servers:\n  x:\n    args: [\"-c\", \"import os; os.system('id')\"]\n    command: python3\n"
	servers, _, diags := Parse([]byte(src), "p.yaml", ScopeProject, t.TempDir())
	if len(servers) != 0 || len(diags) != 1 || diags[0].Line != 4 || diags[0].Field != "servers.x.command" ||
		!strings.Contains(diags[0].Message, "inline code (-c)") {
		t.Fatalf("servers %v:%s", servers, dump(diags))
	}
}

func fakeProgram(t *testing.T, path string) {
	t.Helper()
	mkdirs(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestCheckProgramResolvesSymlinks: a name that is a symlink to a shell
// or to an interpreter is judged by what it links to.
func TestCheckProgramResolvesSymlinks(t *testing.T) {
	dir := t.TempDir()
	fakeProgram(t, filepath.Join(dir, "lib", "python3.12"))
	fakeProgram(t, filepath.Join(dir, "lib", "bash"))
	fakeProgram(t, filepath.Join(dir, "lib", "mcp-server"))
	link := func(target, name string) string {
		p := filepath.Join(dir, "bin", name)
		mkdirs(t, filepath.Dir(p))
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	py := link(filepath.Join(dir, "lib", "python3.12"), "py")
	tool := link("../lib/bash", "tool")
	chain := link(tool, "tool2")
	good := link(filepath.Join(dir, "lib", "mcp-server"), "server")
	for _, c := range []struct {
		prog string
		args []string
	}{{py, []string{"-c", "1"}}, {tool, []string{"x"}}, {chain, nil}} {
		if p := CheckProgram(ScopeUser, c.prog, c.args); !strings.Contains(p, "is a symlink to") {
			t.Errorf("%s %q: got %q, want refused through the link", c.prog, c.args, p)
		}
	}
	if p := CheckProgram(ScopeUser, py, []string{"server.py"}); p != "" {
		t.Errorf("py server.py refused: %s", p)
	}
	if p := CheckProgram(ScopeUser, good, []string{"-c", "x"}); p != "" {
		t.Errorf("server refused: %s", p)
	}
	// The real shells on this machine are caught by file identity even
	// behind a hard link under another name, where one can be made.
	if sh := ResolveProgram("sh", "/bin:/usr/bin"); sh != "" {
		hard := filepath.Join(filepath.Dir(sh), ".sluice-test-hardlink")
		if err := os.Link(sh, hard); err == nil {
			defer os.Remove(hard)
			if p := CheckProgram(ScopeUser, hard, nil); !strings.Contains(p, "a shell") {
				t.Errorf("hard link to %s: got %q", sh, p)
			}
		}
	}
}

// TestLoadResolvesOnTheGatewaysPath: Program comes from the gateway's
// PATH, never from a PATH the declaration sets, and a symlinked shell
// found there drops the server with a diagnostic.
func TestLoadResolvesOnTheGatewaysPath(t *testing.T) {
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	gw, decl := filepath.Join(tmp, "gw"), filepath.Join(tmp, "decl")
	fakeProgram(t, filepath.Join(gw, "node"))
	fakeProgram(t, filepath.Join(decl, "node"))
	fakeProgram(t, filepath.Join(tmp, "real", "dash"))
	if err := os.Symlink(filepath.Join(tmp, "real", "dash"), filepath.Join(gw, "helper")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(home, "mcp.yaml"), "servers:\n  n:\n    command: node\n    env: {PATH: \""+decl+"\"}\n  h: {command: helper}\n  gone: {command: nowhere}\n")
	l := Load(LoadOptions{Cwd: tmp, Getenv: envFunc(map[string]string{"SLUICE_HOME": home, "PATH": "relative/bin:" + gw})})
	n, ok := l.Server("n")
	if !ok || n.Program != filepath.Join(gw, "node") {
		t.Fatalf("n: %+v (want Program on the gateway's PATH)%s", n, dump(l.Diagnostics))
	}
	if g, ok := l.Server("gone"); !ok || g.Program != "" {
		t.Errorf("gone: %+v", g)
	}
	if _, ok := l.Server("h"); ok || !strings.Contains(dump(l.Diagnostics), "is a symlink to") {
		t.Errorf("helper -> dash loaded:%s", dump(l.Diagnostics))
	}
}
