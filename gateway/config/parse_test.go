package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func parseIn(t *testing.T, scope Scope, base, text string) ([]Server, Settings, []Diagnostic) {
	t.Helper()
	return Parse([]byte(text), "mcp.yaml", scope, base)
}

func ids(ss []Server) []string {
	out := []string{}
	for _, s := range ss {
		out = append(out, s.ID)
	}
	return out
}

func errCount(ds []Diagnostic) int {
	n := 0
	for _, d := range ds {
		if d.Severity == SeverityError {
			n++
		}
	}
	return n
}

func dump(ds []Diagnostic) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString("\n  " + d.String())
	}
	return b.String()
}

func TestParseValid(t *testing.T) {
	base := t.TempDir()
	if err := os.MkdirAll(filepath.Join(base, "sub", "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	text := `
servers:
  fs:
    command: npx
    args: [-y, "@modelcontextprotocol/server-filesystem", "."]
    cwd: sub/dir
    env: {TOKEN: "${env:MY_TOKEN}", PLAIN: "x-${env:A}-y"}
    passEnv: [SSH_AUTH_SOCK]
    timeoutMs: 60000
    actionClass: read
    stdoutNoise: fatal
    maxLineBytes: 8388608
  git:
    command: /usr/bin/git-mcp
approve: ["fs__read_*"]
idleTimeoutMs: 300000
sandbox: {maxSteps: 10000000, timeoutMs: 30000, maxCalls: 200, maxResultBytes: 1048576, maxLogBytes: 65536, maxOutputBytes: 1048576, maxMemoryBytes: 268435456, maxConcurrency: 8, maxDepth: 64}
filters:
  - module: builtin:shape
    capabilities: ["*"]
    stage: context
    config: {budgetBytes: 16384, big: 123456789012345678901234567890, hex: 0x1F, f: 1.5, list: [a, true, null]}
    onError: fail-open
  - module: filters/redact.wasm
    sha256: ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789
    timeoutMs: 2500
results: {dir: "", ttlMs: 86400000, quotaBytes: 268435456}
`
	ss, st, ds := parseIn(t, ScopeUser, base, text)
	if len(ds) != 0 {
		t.Fatalf("diagnostics: %s", dump(ds))
	}
	if got := strings.Join(ids(ss), ","); got != "fs,git" {
		t.Fatalf("servers = %s", got)
	}
	fs := ss[0]
	cbase, _ := CanonicalDir(base)
	if fs.Dir != filepath.Join(cbase, "sub", "dir") || fs.Root != cbase {
		t.Errorf("Dir=%q Root=%q", fs.Dir, fs.Root)
	}
	if fs.Line != 3 || fs.Column != 3 || fs.Scope != ScopeUser || fs.File != "mcp.yaml" {
		t.Errorf("position %d:%d scope %s file %s", fs.Line, fs.Column, fs.Scope, fs.File)
	}
	if fs.Env["TOKEN"] != "${env:MY_TOKEN}" || fs.ActionClass != "read" || fs.StdoutNoise != "fatal" || fs.MaxLineBytes != 8388608 || fs.TimeoutMs != 60000 {
		t.Errorf("fields: %+v", fs)
	}
	if len(fs.Digest) != 64 || fs.Digest != fs.ComputeDigest() {
		t.Errorf("digest %q", fs.Digest)
	}
	git := ss[1]
	if git.ActionClass != "" || git.StdoutNoise != NoiseIgnore || git.Dir != cbase || git.Args == nil || git.Env == nil || git.PassEnv == nil {
		t.Errorf("defaults: %+v", git)
	}
	if st.IdleTimeoutMs != 300000 || st.Sandbox.MaxSteps != 10000000 || st.Sandbox.MaxDepth != 64 || st.Results.TtlMs != 86400000 || len(st.Approve) != 1 {
		t.Errorf("settings: %+v", st)
	}
	if len(st.Filters) != 2 {
		t.Fatalf("filters: %+v", st.Filters)
	}
	f0 := st.Filters[0]
	if f0.Builtin != "shape" || f0.Stage != StageContext || f0.OnError != OnErrorOpen || f0.TimeoutMs != 0 {
		t.Errorf("filter 0: %+v", f0)
	}
	wantCfg := `{"budgetBytes":16384,"big":123456789012345678901234567890,"hex":31,"f":1.5,"list":["a",true,null]}`
	if string(f0.Config) != wantCfg {
		t.Errorf("config json\n got %s\nwant %s", f0.Config, wantCfg)
	}
	f1 := st.Filters[1]
	if f1.Path != filepath.Join(cbase, "filters", "redact.wasm") || f1.SHA256 != strings.ToLower(f1.SHA256) || f1.Stage != StageResult || f1.OnError != OnErrorClosed || f1.Capabilities[0] != "*" || f1.Config != nil || f1.TimeoutMs != 2500 {
		t.Errorf("filter 1: %+v", f1)
	}
	if len(st.Invalid) != 0 {
		t.Errorf("invalid: %v", st.Invalid)
	}
}

// TestParseConfigNumbersExact checks that filter config integers of any
// size and base survive exactly, and floats keep their text.
func TestParseConfigNumbersExact(t *testing.T) {
	cases := map[string]string{
		"9007199254740993":       "9007199254740993",
		"18446744073709551617":   "18446744073709551617",
		"-99999999999999999999":  "-99999999999999999999",
		"0o17":                   "15",
		"0b101":                  "5",
		"1_000":                  "1000",
		"+12":                    "12",
		"0777":                   "511",
		"0.10000000000000000001": "0.10000000000000000001",
		".5":                     "0.5",
		"-.5":                    "-0.5",
		"+1.5":                   "1.5",
	}
	for in, want := range cases {
		t.Run(in, func(t *testing.T) {
			_, st, ds := parseIn(t, ScopeUser, t.TempDir(), "filters:\n  - module: builtin:x\n    config: {n: "+in+"}\n")
			if len(ds) != 0 || len(st.Filters) != 1 {
				t.Fatalf("diagnostics: %s", dump(ds))
			}
			if got := string(st.Filters[0].Config); got != `{"n":`+want+`}` {
				t.Errorf("got %s want %s", got, want)
			}
			if !json.Valid(st.Filters[0].Config) {
				t.Errorf("invalid JSON %s", st.Filters[0].Config)
			}
		})
	}
}

// diagWant describes one expected diagnostic.
type diagWant struct {
	line, col int
	field     string
	msg       string // substring of Message
}

func TestParseRejections(t *testing.T) {
	type tc struct {
		name  string
		scope Scope
		text  string
		keep  []string // servers expected to survive
		want  diagWant
	}
	srv := func(body string) string { return "servers:\n  s:\n" + body }
	cases := []tc{
		{"unknown top-level", ScopeUser, "server:\n  s: {command: x}\n", []string{}, diagWant{1, 1, "server", `unknown field "server"`}},
		{"unknown server field", ScopeUser, srv("    command: x\n    comand: y\n"), []string{}, diagWant{4, 5, "servers.s.comand", `unknown field "comand"`}},
		{"command wrong type", ScopeUser, srv("    command: 12\n"), []string{}, diagWant{3, 14, "servers.s.command", "must be a string, got an integer"}},
		{"command list", ScopeUser, srv("    command: [a]\n"), []string{}, diagWant{3, 14, "servers.s.command", "must be a string, got a sequence"}},
		{"command missing", ScopeUser, srv("    args: []\n"), []string{}, diagWant{2, 3, "servers.s.command", "command is required"}},
		{"command empty", ScopeUser, srv("    command: ''\n"), []string{}, diagWant{3, 14, "servers.s.command", "command is empty"}},
		{"shell bash", ScopeUser, srv("    command: bash\n"), []string{}, diagWant{3, 14, "servers.s.command", "is a shell"}},
		{"shell abs sh", ScopeUser, srv("    command: /bin/sh\n"), []string{}, diagWant{3, 14, "servers.s.command", "is a shell"}},
		{"shell dotdot", ScopeUser, srv("    command: /usr/bin/../bin/zsh\n"), []string{}, diagWant{3, 14, "servers.s.command", "is a shell"}},
		{"shell upper", ScopeUser, srv("    command: PowerShell.exe\n"), []string{}, diagWant{3, 14, "servers.s.command", "is a shell"}},
		{"shell cmd.exe", ScopeUser, srv("    command: cmd.exe\n"), []string{}, diagWant{3, 14, "servers.s.command", "is a shell"}},
		{"shell versioned", ScopeUser, srv("    command: bash5.2\n"), []string{}, diagWant{3, 14, "servers.s.command", "is a shell"}},
		{"shell env", ScopeUser, srv("    command: /usr/bin/env\n"), []string{}, diagWant{3, 14, "servers.s.command", "is a shell"}},
		{"shell busybox", ScopeUser, srv("    command: busybox\n"), []string{}, diagWant{3, 14, "servers.s.command", "is a shell"}},
		{"shell sudo", ScopeUser, srv("    command: sudo\n"), []string{}, diagWant{3, 14, "servers.s.command", "is a shell"}},
		{"shell string", ScopeUser, srv("    command: npx -y pkg\n"), []string{}, diagWant{3, 14, "servers.s.command", "shell command line"}},
		{"shell syntax", ScopeUser, srv("    command: a;b\n"), []string{}, diagWant{3, 14, "servers.s.command", "shell syntax"}},
		{"command NUL", ScopeUser, srv("    command: \"a\\0b\"\n"), []string{}, diagWant{3, 14, "servers.s.command", "NUL"}},
		{"relative dot", ScopeUser, srv("    command: ./x\n"), []string{}, diagWant{3, 14, "servers.s.command", "relative command path"}},
		{"relative dir", ScopeUser, srv("    command: a/b\n"), []string{}, diagWant{3, 14, "servers.s.command", "relative command path"}},
		{"relative tilde", ScopeUser, srv("    command: bin/x\n"), []string{}, diagWant{3, 14, "servers.s.command", "relative command path"}},
		{"backslash", ScopeUser, srv("    command: 'c\\x'\n"), []string{}, diagWant{3, 14, "servers.s.command", map[bool]string{false: "backslash", true: "relative command path"}[windowsPaths]}},
		{"flag command", ScopeUser, srv("    command: -x\n"), []string{}, diagWant{3, 14, "servers.s.command", "starts with -"}},
		{"args not list", ScopeUser, srv("    command: x\n    args: a\n"), []string{}, diagWant{4, 11, "servers.s.args", "must be a list"}},
		{"args number", ScopeUser, srv("    command: x\n    args: [a, 8080]\n"), []string{}, diagWant{4, 15, "servers.s.args[1]", "must be a string, got an integer"}},
		{"env not map", ScopeUser, srv("    command: x\n    env: [a]\n"), []string{}, diagWant{4, 10, "servers.s.env", "must be a mapping"}},
		{"env bad key", ScopeUser, srv("    command: x\n    env: {lower: v}\n"), []string{}, diagWant{4, 11, "servers.s.env", `env key "lower"`}},
		{"env digit key", ScopeUser, srv("    command: x\n    env: {1A: v}\n"), []string{}, diagWant{4, 11, "servers.s.env", `env key "1A"`}},
		{"env number value", ScopeUser, srv("    command: x\n    env: {PORT: 8080}\n"), []string{}, diagWant{4, 17, "servers.s.env.PORT", "must be a string"}},
		{"env bad ref", ScopeUser, srv("    command: x\n    env: {A: \"${HOME}\"}\n"), []string{}, diagWant{4, 14, "servers.s.env.A", "malformed environment reference"}},
		{"env unterminated ref", ScopeUser, srv("    command: x\n    env: {A: \"${env:X\"}\n"), []string{}, diagWant{4, 14, "servers.s.env.A", "unterminated"}},
		{"env bad ref name", ScopeUser, srv("    command: x\n    env: {A: \"${env:1X}\"}\n"), []string{}, diagWant{4, 14, "servers.s.env.A", "malformed"}},
		{"passEnv bad", ScopeUser, srv("    command: x\n    passEnv: [ok_lower]\n"), []string{}, diagWant{4, 15, "servers.s.passEnv[0]", "does not match"}},
		{"passEnv dup", ScopeUser, srv("    command: x\n    passEnv: [A, A]\n"), []string{}, diagWant{4, 18, "servers.s.passEnv[1]", "listed twice"}},
		{"timeout zero", ScopeUser, srv("    command: x\n    timeoutMs: 0\n"), []string{}, diagWant{4, 16, "servers.s.timeoutMs", "outside 1..900000"}},
		{"timeout negative", ScopeUser, srv("    command: x\n    timeoutMs: -5\n"), []string{}, diagWant{4, 16, "servers.s.timeoutMs", "outside"}},
		{"timeout float", ScopeUser, srv("    command: x\n    timeoutMs: 1.5\n"), []string{}, diagWant{4, 16, "servers.s.timeoutMs", "must be an integer, got a number"}},
		{"timeout string", ScopeUser, srv("    command: x\n    timeoutMs: '100'\n"), []string{}, diagWant{4, 16, "servers.s.timeoutMs", "must be an integer, got a string"}},
		{"timeout huge", ScopeUser, srv("    command: x\n    timeoutMs: 99999999999999999999\n"), []string{}, diagWant{4, 16, "servers.s.timeoutMs", "must be an integer"}},
		{"actionClass bad", ScopeUser, srv("    command: x\n    actionClass: write\n"), []string{}, diagWant{4, 18, "servers.s.actionClass", `"write" is not one of`}},
		{"actionClass project", ScopeProject, srv("    command: x\n    actionClass: read\n"), []string{}, diagWant{4, 5, "servers.s.actionClass", "only allowed in user config; use the project trust record"}},
		{"stdoutNoise bad", ScopeUser, srv("    command: x\n    stdoutNoise: loud\n"), []string{}, diagWant{4, 18, "servers.s.stdoutNoise", "not one of"}},
		{"maxLineBytes small", ScopeUser, srv("    command: x\n    maxLineBytes: 4095\n"), []string{}, diagWant{4, 19, "servers.s.maxLineBytes", "outside"}},
		{"maxLineBytes big", ScopeUser, srv("    command: x\n    maxLineBytes: 67108865\n"), []string{}, diagWant{4, 19, "servers.s.maxLineBytes", "outside"}},
		{"id upper", ScopeUser, "servers:\n  Fs: {command: x}\n", []string{}, diagWant{2, 3, `servers["Fs"]`, "does not match"}},
		{"id double underscore", ScopeUser, "servers:\n  a__b: {command: x}\n", []string{}, diagWant{2, 3, `servers["a__b"]`, "contains __"}},
		{"id trailing underscore", ScopeUser, "servers:\n  a_: {command: x}\n", []string{}, diagWant{2, 3, `servers["a_"]`, "ends in _"}},
		{"id leading dash", ScopeUser, "servers:\n  -a: {command: x}\n", []string{}, diagWant{2, 3, `servers["-a"]`, "does not match"}},
		{"duplicate id", ScopeUser, "servers:\n  a: {command: x}\n  b: {command: y}\n  a: {command: z}\n", []string{"b"}, diagWant{4, 3, "servers.a", "duplicate key"}},
		{"duplicate field", ScopeUser, srv("    command: x\n    command: y\n"), []string{}, diagWant{4, 5, "servers.s.command", "duplicate key"}},
		{"server not mapping", ScopeUser, "servers:\n  s: npx\n", []string{}, diagWant{2, 6, "servers.s", "must be a mapping, got a string"}},
		{"servers not mapping", ScopeUser, "servers: [a]\n", []string{}, diagWant{1, 10, "servers", "must be a mapping"}},
		{"alias", ScopeUser, "x: &a [b]\nservers:\n  s:\n    command: x\n    args: *a\n", []string{}, diagWant{1, 1, "x", "unknown field"}},
		{"alias value", ScopeUser, "servers:\n  t: {command: x, args: &a [b]}\n  s:\n    command: x\n    args: *a\n", []string{"t"}, diagWant{5, 11, "servers.s.args", "alias"}},
		{"merge key", ScopeUser, "servers:\n  s:\n    <<: {command: x}\n", []string{}, diagWant{3, 5, "servers.s", "merge key"}},
		{"settings in project", ScopeProject, "approve: [a]\nservers:\n  s: {command: x}\n", []string{"s"}, diagWant{1, 1, "approve", "only allowed in user config"}},
		{"sandbox in project", ScopeProject, "sandbox: {maxSteps: 1}\n", []string{}, diagWant{1, 1, "sandbox", "only allowed in user config"}},
		{"filters in project", ScopeProject, "filters: []\n", []string{}, diagWant{1, 1, "filters", "only allowed in user config"}},
		{"project cwd absolute", ScopeProject, srv("    command: x\n    cwd: /tmp\n"), []string{}, diagWant{4, 10, "servers.s.cwd", "is absolute"}},
		{"project cwd escapes", ScopeProject, srv("    command: x\n    cwd: ../x\n"), []string{}, diagWant{4, 10, "servers.s.cwd", "escapes"}},
		{"project cwd escapes deep", ScopeProject, srv("    command: x\n    cwd: a/../../x\n"), []string{}, diagWant{4, 10, "servers.s.cwd", "escapes"}},
		{"user cwd escapes config dir", ScopeUser, srv("    command: x\n    cwd: ../x\n"), []string{}, diagWant{4, 10, "servers.s.cwd", "escapes"}},
		{"cwd NUL", ScopeProject, srv("    command: x\n    cwd: \"a\\0\"\n"), []string{}, diagWant{4, 10, "servers.s.cwd", "NUL"}},
		{"sandbox zero", ScopeUser, "sandbox: {maxSteps: 0}\n", []string{}, diagWant{1, 21, "sandbox.maxSteps", "outside"}},
		{"sandbox unknown", ScopeUser, "sandbox: {maxStep: 5}\n", []string{}, diagWant{1, 11, "sandbox.maxStep", `unknown field "maxStep"`}},
		{"idle negative", ScopeUser, "idleTimeoutMs: -1\n", []string{}, diagWant{1, 16, "idleTimeoutMs", "outside"}},
		{"approve bad glob", ScopeUser, "approve: ['fs__[']\n", []string{}, diagWant{1, 11, "approve[0]", "malformed"}},
		{"approve space", ScopeUser, "approve: ['a b']\n", []string{}, diagWant{1, 11, "approve[0]", "whitespace"}},
		{"filter no module", ScopeUser, "filters:\n  - stage: result\n", []string{}, diagWant{2, 5, "filters[0].module", "module is required"}},
		{"filter bad builtin", ScopeUser, "filters:\n  - module: builtin:Bad\n", []string{}, diagWant{2, 13, "filters[0].module", "malformed"}},
		{"filter not wasm", ScopeUser, "filters:\n  - module: x.so\n", []string{}, diagWant{2, 13, "filters[0].module", "neither builtin"}},
		{"filter bad sha", ScopeUser, "filters:\n  - module: x.wasm\n    sha256: abc\n", []string{}, diagWant{3, 13, "filters[0].sha256", "64 hex"}},
		{"filter sha builtin", ScopeUser, "filters:\n  - module: builtin:shape\n    sha256: " + strings.Repeat("a", 64) + "\n", []string{}, diagWant{3, 13, "filters[0].sha256", "only to a .wasm"}},
		{"filter bad stage", ScopeUser, "filters:\n  - module: builtin:x\n    stage: before\n", []string{}, diagWant{3, 12, "filters[0].stage", "not one of"}},
		{"filter bad onError", ScopeUser, "filters:\n  - module: builtin:x\n    onError: ignore\n", []string{}, diagWant{3, 14, "filters[0].onError", "not one of"}},
		{"filter timeout zero", ScopeUser, "filters:\n  - module: builtin:x\n    timeoutMs: 0\n", []string{}, diagWant{3, 16, "filters[0].timeoutMs", "outside 1..60000"}},
		{"filter timeout over cap", ScopeUser, "filters:\n  - module: builtin:x\n    timeoutMs: 60001\n", []string{}, diagWant{3, 16, "filters[0].timeoutMs", "outside 1..60000"}},
		{"filter timeout float", ScopeUser, "filters:\n  - module: builtin:x\n    timeoutMs: 1.5\n", []string{}, diagWant{3, 16, "filters[0].timeoutMs", "must be an integer, got a number"}},
		{"filter timeout per MiB zero", ScopeUser, "filters:\n  - module: builtin:x\n    timeoutPerMiBMs: 0\n", []string{}, diagWant{3, 22, "filters[0].timeoutPerMiBMs", "outside 1..60000"}},
		{"filter timeout per MiB over cap", ScopeUser, "filters:\n  - module: builtin:x\n    timeoutPerMiBMs: 60001\n", []string{}, diagWant{3, 22, "filters[0].timeoutPerMiBMs", "outside 1..60000"}},
		{"filter timeout string", ScopeUser, "filters:\n  - module: builtin:x\n    timeoutMs: fast\n", []string{}, diagWant{3, 16, "filters[0].timeoutMs", "must be an integer, got a string"}},
		{"filter config inf", ScopeUser, "filters:\n  - module: builtin:x\n    config: {a: .inf}\n", []string{}, diagWant{3, 17, "filters[0].config.a", "no JSON form"}},
		{"filter config dup", ScopeUser, "filters:\n  - module: builtin:x\n    config: {a: 1, a: 2}\n", []string{}, diagWant{3, 20, "filters[0].config.a", "duplicate"}},
		{"filter unknown", ScopeUser, "filters:\n  - module: builtin:x\n    stages: result\n", []string{}, diagWant{3, 5, "filters[0].stages", "unknown field"}},
		{"results bad", ScopeUser, "results: {ttlMs: 0}\n", []string{}, diagWant{1, 18, "results.ttlMs", "outside"}},
		{"results unknown", ScopeUser, "results: {ttl: 5}\n", []string{}, diagWant{1, 11, "results.ttl", "unknown field"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ss, _, ds := parseIn(t, c.scope, t.TempDir(), c.text)
			if got, want := strings.Join(ids(ss), ","), strings.Join(c.keep, ","); got != want {
				t.Errorf("servers = %q, want %q%s", got, want, dump(ds))
			}
			found := false
			for _, d := range ds {
				if d.Severity == SeverityError && d.Line == c.want.line && d.Column == c.want.col && d.Field == c.want.field && strings.Contains(d.Message, c.want.msg) {
					found = true
					if d.Fix == "" && !strings.Contains(d.Message, "internal") {
						t.Errorf("diagnostic without fix: %s", d)
					}
					if d.File != "mcp.yaml" {
						t.Errorf("file = %q", d.File)
					}
				}
			}
			if !found {
				t.Errorf("missing diagnostic %d:%d %s %q; got:%s", c.want.line, c.want.col, c.want.field, c.want.msg, dump(ds))
			}
		})
	}
}

// TestParseFileLevel covers problems that make a whole file contribute
// nothing.
func TestParseFileLevel(t *testing.T) {
	cases := []struct {
		name, text string
		line       int
		msg        string
	}{
		{"syntax", "a: b\nc: d: e\n", 2, "YAML syntax error"},
		{"tab indent", "servers:\n\ts: {command: x}\n", 2, "YAML syntax error"},
		{"top-level list", "- a\n- b\n", 1, "top level is a sequence"},
		{"top-level string", "hello\n", 1, "top level is a string"},
		{"two documents", "servers: {s: {command: x}}\n---\nservers: {}\n", 2, "more than one YAML document"},
		{"NUL byte", "servers:\n  s: {command: x}\x00\n", 2, "NUL byte"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ss, _, ds := parseIn(t, ScopeUser, t.TempDir(), c.text)
			if len(ss) != 0 {
				t.Errorf("servers %v", ids(ss))
			}
			if len(ds) == 0 || !strings.Contains(ds[0].Message, c.msg) || ds[0].Line != c.line {
				t.Errorf("want line %d %q, got%s", c.line, c.msg, dump(ds))
			}
		})
	}
	for _, empty := range []string{"", "# nothing\n", "---\n", "null\n", "servers:\n", "servers: {}\n"} {
		ss, _, ds := parseIn(t, ScopeUser, t.TempDir(), empty)
		if len(ss) != 0 || len(ds) != 0 {
			t.Errorf("%q: servers %v diags%s", empty, ids(ss), dump(ds))
		}
	}
}

// TestParseOneBadServer checks that one bad server drops only itself.
func TestParseOneBadServer(t *testing.T) {
	ss, _, ds := parseIn(t, ScopeUser, t.TempDir(), "servers:\n  a: {command: x}\n  b: {command: bash}\n  c: {command: y}\n")
	if got := strings.Join(ids(ss), ","); got != "a,c" || errCount(ds) != 1 {
		t.Fatalf("servers %s diags%s", got, dump(ds))
	}
}

// TestParseCaps checks every cap at the boundary: exactly at the cap is
// accepted, one over is rejected with a diagnostic on the right field.
func TestParseCaps(t *testing.T) {
	many := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(f(i))
		}
		return b.String()
	}
	quoted := func(ss []string) string {
		q := make([]string, len(ss))
		for i, s := range ss {
			q[i] = fmt.Sprintf("%q", s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	rep := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("a%d", i)
		}
		return out
	}
	envMap := func(n int) string {
		return "{" + many(n, func(i int) string {
			sep := ", "
			if i == 0 {
				sep = ""
			}
			return fmt.Sprintf("%sK%d: v", sep, i)
		}) + "}"
	}
	names := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("N%d", i)
		}
		return out
	}
	cases := []struct {
		name  string
		scope Scope
		at    string // text exactly at the cap
		over  string // one over
		field string
	}{
		{"servers", ScopeUser,
			"servers:\n" + many(MaxServers, func(i int) string { return fmt.Sprintf("  s%d: {command: x}\n", i) }),
			"servers:\n" + many(MaxServers+1, func(i int) string { return fmt.Sprintf("  s%d: {command: x}\n", i) }),
			"servers"},
		{"id chars", ScopeUser,
			"servers:\n  " + strings.Repeat("a", MaxIDChars) + ": {command: x}\n",
			"servers:\n  " + strings.Repeat("a", MaxIDChars+1) + ": {command: x}\n",
			`servers["` + strings.Repeat("a", MaxIDChars+1) + `"]`},
		{"command bytes", ScopeUser,
			"servers:\n  s: {command: /" + strings.Repeat("c", MaxCommandBytes-1) + "}\n",
			"servers:\n  s: {command: /" + strings.Repeat("c", MaxCommandBytes) + "}\n",
			"servers.s.command"},
		{"args count", ScopeUser,
			"servers:\n  s: {command: x, args: " + quoted(rep(MaxArgs)) + "}\n",
			"servers:\n  s: {command: x, args: " + quoted(rep(MaxArgs+1)) + "}\n",
			"servers.s.args"},
		{"arg bytes", ScopeUser,
			"servers:\n  s: {command: x, args: [" + strings.Repeat("a", MaxArgBytes) + "]}\n",
			"servers:\n  s: {command: x, args: [" + strings.Repeat("a", MaxArgBytes+1) + "]}\n",
			"servers.s.args[0]"},
		{"env entries", ScopeUser,
			"servers:\n  s: {command: x, env: " + envMap(MaxEnvEntries) + "}\n",
			"servers:\n  s: {command: x, env: " + envMap(MaxEnvEntries+1) + "}\n",
			"servers.s.env"},
		{"env value bytes", ScopeUser,
			"servers:\n  s: {command: x, env: {K: " + strings.Repeat("v", MaxEnvValueBytes) + "}}\n",
			"servers:\n  s: {command: x, env: {K: " + strings.Repeat("v", MaxEnvValueBytes+1) + "}}\n",
			"servers.s.env.K"},
		{"env key bytes", ScopeUser,
			"servers:\n  s: {command: x, env: {" + strings.Repeat("K", MaxEnvKeyBytes) + ": v}}\n",
			"servers:\n  s: {command: x, env: {" + strings.Repeat("K", MaxEnvKeyBytes+1) + ": v}}\n",
			"servers.s.env." + strings.Repeat("K", MaxEnvKeyBytes+1)},
		{"passEnv count", ScopeUser,
			"servers:\n  s: {command: x, passEnv: " + quoted(names(MaxPassEnv)) + "}\n",
			"servers:\n  s: {command: x, passEnv: " + quoted(names(MaxPassEnv+1)) + "}\n",
			"servers.s.passEnv"},
		{"cwd bytes", ScopeProject,
			"servers:\n  s: {command: x, cwd: " + strings.Repeat("d/", MaxCwdBytes/2-1) + "dd}\n",
			"servers:\n  s: {command: x, cwd: " + strings.Repeat("d/", MaxCwdBytes/2-1) + "ddd}\n",
			"servers.s.cwd"},
		{"timeoutMs", ScopeUser,
			fmt.Sprintf("servers:\n  s: {command: x, timeoutMs: %d}\n", MaxTimeoutMs),
			fmt.Sprintf("servers:\n  s: {command: x, timeoutMs: %d}\n", MaxTimeoutMs+1),
			"servers.s.timeoutMs"},
		{"timeoutMs low", ScopeUser,
			"servers:\n  s: {command: x, timeoutMs: 1}\n",
			"servers:\n  s: {command: x, timeoutMs: 0}\n",
			"servers.s.timeoutMs"},
		{"maxLineBytes", ScopeUser,
			fmt.Sprintf("servers:\n  s: {command: x, maxLineBytes: %d}\n", MaxMaxLineBytes),
			fmt.Sprintf("servers:\n  s: {command: x, maxLineBytes: %d}\n", MaxMaxLineBytes+1),
			"servers.s.maxLineBytes"},
		{"maxLineBytes low", ScopeUser,
			fmt.Sprintf("servers:\n  s: {command: x, maxLineBytes: %d}\n", MinMaxLineBytes),
			fmt.Sprintf("servers:\n  s: {command: x, maxLineBytes: %d}\n", MinMaxLineBytes-1),
			"servers.s.maxLineBytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ss, _, ds := parseIn(t, c.scope, t.TempDir(), c.at)
			if errCount(ds) != 0 || len(ss) == 0 {
				t.Fatalf("at cap: servers %d, diags%s", len(ss), dump(ds))
			}
			ss, _, ds = parseIn(t, c.scope, t.TempDir(), c.over)
			if len(ss) != 0 {
				t.Errorf("over cap: servers %v kept", ids(ss))
			}
			found := false
			for _, d := range ds {
				if d.Severity == SeverityError && d.Field == c.field && d.Line > 0 && d.Column > 0 {
					found = true
				}
			}
			if !found {
				t.Errorf("over cap: no error on %s with a position;%s", c.field, dump(ds))
			}
		})
	}
	t.Run("settings caps", func(t *testing.T) {
		globs := func(n int) string { return quoted(rep(n)) }
		_, st, ds := parseIn(t, ScopeUser, t.TempDir(), "approve: "+globs(MaxApprove)+"\n")
		if errCount(ds) != 0 || len(st.Approve) != MaxApprove {
			t.Errorf("approve at cap:%s", dump(ds))
		}
		_, st, ds = parseIn(t, ScopeUser, t.TempDir(), "approve: "+globs(MaxApprove+1)+"\n")
		if errCount(ds) != 1 || len(st.Approve) != 0 || st.Invalid[0] != "approve" {
			t.Errorf("approve over cap:%s", dump(ds))
		}
		fl := func(n int) string {
			return "filters:\n" + many(n, func(int) string { return "  - module: builtin:x\n" })
		}
		_, st, ds = parseIn(t, ScopeUser, t.TempDir(), fl(MaxFilters))
		if errCount(ds) != 0 || len(st.Filters) != MaxFilters {
			t.Errorf("filters at cap:%s", dump(ds))
		}
		_, st, ds = parseIn(t, ScopeUser, t.TempDir(), fl(MaxFilters+1))
		if errCount(ds) != 1 || len(st.Filters) != 0 {
			t.Errorf("filters over cap:%s", dump(ds))
		}
		nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
		_, st, ds = parseIn(t, ScopeUser, t.TempDir(), "filters:\n  - module: builtin:x\n    config: "+nest(MaxConfigDepth)+"\n")
		if errCount(ds) != 0 || len(st.Filters) != 1 {
			t.Errorf("config depth at cap:%s", dump(ds))
		}
		_, st, ds = parseIn(t, ScopeUser, t.TempDir(), "filters:\n  - module: builtin:x\n    config: "+nest(MaxConfigDepth+1)+"\n")
		if errCount(ds) != 1 || len(st.Filters) != 0 {
			t.Errorf("config depth over cap:%s", dump(ds))
		}
		for _, ms := range []int64{1, MaxFilterTimeout} {
			_, st, ds = parseIn(t, ScopeUser, t.TempDir(), fmt.Sprintf("filters:\n  - module: builtin:x\n    timeoutMs: %d\n", ms))
			if errCount(ds) != 0 || len(st.Filters) != 1 || st.Filters[0].TimeoutMs != ms {
				t.Errorf("filter timeoutMs %d:%s", ms, dump(ds))
			}
		}
	})
	t.Run("file bytes", func(t *testing.T) {
		head := "servers:\n  s: {command: x}\n#"
		at := head + strings.Repeat("p", MaxFileBytes-len(head))
		ss, _, ds := parseIn(t, ScopeUser, t.TempDir(), at)
		if len(at) != MaxFileBytes || len(ss) != 1 || len(ds) != 0 {
			t.Fatalf("at cap: %d bytes, servers %d;%s", len(at), len(ss), dump(ds))
		}
		ss, _, ds = parseIn(t, ScopeUser, t.TempDir(), at+"p")
		if len(ss) != 0 || errCount(ds) != 1 || !strings.Contains(ds[0].Message, "over the") {
			t.Fatalf("over cap: servers %d;%s", len(ss), dump(ds))
		}
	})
}

// TestParseWindowsCommands: with Windows' path rules (as on Windows), an
// absolute command may be a drive-letter or UNC path with either
// separator, spaces, parentheses and ~; a relative, rooted or
// drive-relative one is refused, and so are shells by their full path.
// With Unix rules the same backslash paths are refused.
func TestParseWindowsCommands(t *testing.T) {
	old := windowsPaths
	t.Cleanup(func() { windowsPaths = old })
	for _, c := range []struct {
		command string
		msg     string // "" = accepted
	}{
		{`C:\Tools\server.exe`, ""},
		{`c:/tools/server.exe`, ""},
		{`C:\Program Files (x86)\nodejs\node.exe`, ""},
		{`C:\PROGRA~1\nodejs\node.exe`, ""},
		{`\\fileserver\share\bin\server.exe`, ""},
		{`node`, ""},
		{`tools\server.exe`, "relative command path"},
		{`.\server.exe`, "relative command path"},
		{`\tools\server.exe`, "relative command path"},
		{`C:server.exe`, "relative command path"},
		{`/usr/bin/server`, "relative command path"},
		{`C:\Windows\System32\cmd.exe`, "is a shell"},
		{`C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe`, "is a shell"},
		{`C:\Tools\server.exe -y`, "shell command line"},
		{`C:\Tools\server.exe --port 3`, "shell command line"},
		{`C:\Tools\server.exe /port:3`, "shell command line"},
		{`C:\Tools\a&b.exe`, "shell syntax"},
		{`C:\Tools\server.exe `, "whitespace"},
		{"C:\\Tools\\ser\tver.exe", "whitespace"},
		{`Program Files\x.exe`, "whitespace"},
	} {
		windowsPaths = true
		text := "servers:\n  s:\n    command: " + strconv.Quote(c.command) + "\n"
		ss, _, ds := parseIn(t, ScopeUser, t.TempDir(), text)
		switch {
		case c.msg == "" && (len(ss) != 1 || len(ds) != 0):
			t.Errorf("%q refused on Windows:%s", c.command, dump(ds))
		case c.msg != "" && (len(ss) != 0 || len(ds) != 1 || !strings.Contains(ds[0].Message, c.msg) || ds[0].Field != "servers.s.command"):
			t.Errorf("%q on Windows: want one error %q, got servers %v%s", c.command, c.msg, ids(ss), dump(ds))
		}
		if strings.Contains(c.command, `\`) {
			windowsPaths = false
			if ss, _, ds := parseIn(t, ScopeUser, t.TempDir(), text); len(ss) != 0 || len(ds) == 0 {
				t.Errorf("%q accepted with Unix path rules", c.command)
			}
		}
	}
}

// TestParseCRLF: a file saved with Windows line endings (and with the
// byte-order mark some Windows editors write) parses to the same servers and the same diagnostics (line, column, message) as with
// LF, and no value or message picks up a CR.
func TestParseCRLF(t *testing.T) {
	base := t.TempDir()
	for _, text := range []string{
		"servers:\n  a:\n    command: node\n    args: [x, \"y z\"]\n    env: {K: v}\n",
		"servers:\n  a: {command: x}\n  b: {command: bash}\n  c:\n    command: ./rel\n",
		"servers:\n  a:\n    command: x\n    args: a\n    timeoutMs: -1\n",
		"a: b\nc: d: e\n",
	} {
		crlf := strings.ReplaceAll(text, "\n", "\r\n")
		ss1, _, ds1 := parseIn(t, ScopeUser, base, text)
		ss2, _, ds2 := parseIn(t, ScopeUser, base, crlf)
		j1, _ := json.Marshal([]any{ss1, ds1})
		j2, _ := json.Marshal([]any{ss2, ds2})
		if string(j1) != string(j2) {
			t.Errorf("CRLF changes the result of %q:\nLF:   %s\nCRLF: %s", text, j1, j2)
		}
		if strings.Contains(string(j2), `\r`) {
			t.Errorf("a CR reached a value or message: %s", j2)
		}
		ss3, _, ds3 := parseIn(t, ScopeUser, base, "\ufeff"+crlf)
		if j3, _ := json.Marshal([]any{ss3, ds3}); string(j3) != string(j1) {
			t.Errorf("a byte-order mark changes the result of %q:\nLF:  %s\nBOM: %s", text, j1, j3)
		}
	}
}

// TestParseSyntaxErrorPosition: a YAML syntax error is reported at the
// line the construct in error starts on (the library gives parser errors
// 0-based, scanner errors 1-based), with a column where the line shows
// the cause, and a fix that names it.
func TestParseSyntaxErrorPosition(t *testing.T) {
	cases := []struct {
		name, text string
		line, col  int
		fix        string
	}{
		{"unclosed flow list", "servers:\n  a:\n    command: [unclosed\n  b: x\n", 3, 0, "close the [ list"},
		{"unclosed flow map", "servers:\n  a: {command: /bin/cat\n", 2, 0, "close the { mapping"},
		{"unclosed flow list on line 1", "[a, b\n", 2, 0, "close the [ list"},
		{"unclosed quote", "servers:\n  a:\n    command: \"x\n", 3, 0, "close the quoted string"},
		{"tab indent", "servers:\n\ta: 1\n", 2, 1, "indent with spaces"},
		{"tab after spaces", "servers:\n  a:\n  \tcommand: x\n", 3, 3, "indent with spaces"},
		{"at sign", "servers:\n  a:\n    command: @x\n", 3, 14, "quote the value"},
		{"colon in value", "a: b\nc: d: e\n", 2, 0, "quote the value"},
		{"bad indentation", "servers:\n  a:\n    command: /bin/cat\n   args: []\n", 2, 0, "indented differently"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, ds := parseIn(t, ScopeUser, t.TempDir(), c.text)
			if len(ds) != 1 || ds[0].Line != c.line || ds[0].Column != c.col || !strings.Contains(ds[0].Fix, c.fix) ||
				!strings.HasPrefix(ds[0].Message, "YAML syntax error: ") || strings.Contains(ds[0].Message, "line ") {
				t.Errorf("want %d:%d fix %q, got%s", c.line, c.col, c.fix, dump(ds))
			}
		})
	}
}
