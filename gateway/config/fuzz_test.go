package config

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sluice/gateway/clitool"
)

func FuzzParse(f *testing.F) {
	seeds := []string{
		"",
		"servers:\n  fs:\n    command: npx\n    args: [-y, pkg]\n    cwd: sub\n    env: {A: \"${env:B}\"}\n    passEnv: [SSH_AUTH_SOCK]\n    timeoutMs: 60000\n    stdoutNoise: fatal\n    maxLineBytes: 8388608\n",
		"servers:\n  a: {command: bash}\n  b: {command: ./x}\n  a: {command: y}\n",
		"approve: [\"fs__read_*\"]\nidleTimeoutMs: 300000\nsandbox: {maxSteps: 10}\nresults: {dir: x, ttlMs: 1, quotaBytes: 2}\n",
		"filters:\n  - module: builtin:shape\n    capabilities: [\"*\"]\n    stage: context\n    config: {budgetBytes: 16384, n: [1, 2.5, 0x10, 1e3, .inf, ~, yes]}\n    onError: fail-open\n    timeoutMs: 250\n    timeoutPerMiBMs: 500\n",
		"x: &a {b: *a}\n",
		"servers: {s: {command: x, actionClass: read}}\n",
		"- a\n- b\n",
		"a: b\n---\nc: d\n",
		"servers:\n  s:\n    <<: {command: x}\n",
		"servers:\n  s: {command: x, cwd: ../../etc}\n",
		"servers:\n  s: {command: x, env: {A: \"$${env:X} ${env:\"}}\n",
		"{servers: {s: {command: !!str 12, args: !custom [a]}}}\n",
		"servers:\n  g:\n    cli:\n      cwd: sub\n      env: {P: cat}\n      tools:\n        log:\n          argv: [git, log, \"--n={n}\", [\"--a={a}\", [\"{b}\"]], \"{p...}\"]\n          input: {n: {type: integer, default: 1e1, minimum: -1}, a: {type: string, enum: [x, y]}, b: {type: boolean}, p: {type: array, items: {type: number}, default: [1, 2.5]}}\n          output: json\n          annotations: {readOnlyHint: true}\n",
		"servers: {c: {cli: {tools: {t: {argv: [python3, [\"-c\", \"{x}\"]], input: {x: {type: string}}}}}}}\n",
		"servers:\n  p: {command: python3, args: [-Bc, x]}\n  n: {command: npx, args: [-y, bash, -c, id]}\n  f: {command: find, args: [., -exec, x]}\n",
		"servers:\n  w: {command: node, env: {PATH: /x, NODE_OPTIONS: -r, GIT_SSH: y, OK: \"1\"}}\n",
		"servers:\n  u: {command: uv, args: [run, --with, x, --, perl, -Mx;y]}\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	base := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, project bool) {
		scope := ScopeUser
		if project {
			scope = ScopeProject
		}
		ss, st, ds := Parse(data, "f.yaml", scope, base)
		for _, d := range ds {
			if strings.Contains(d.Message, "YAML decoder failed") {
				t.Fatalf("parser panicked on %q", data)
			}
			if d.Severity != SeverityError && d.Severity != SeverityWarning {
				t.Fatalf("bad severity %+v", d)
			}
			if d.File != "f.yaml" || d.Message == "" {
				t.Fatalf("incomplete diagnostic %+v", d)
			}
		}
		seen := map[string]bool{}
		for _, s := range ss {
			if !ValidID(s.ID) || seen[s.ID] {
				t.Fatalf("bad or duplicate id %q", s.ID)
			}
			seen[s.ID] = true
			if s.Digest != s.ComputeDigest() || len(s.Digest) != 64 {
				t.Fatalf("digest mismatch for %q", s.ID)
			}
			if s.CLI != nil {
				if s.Command != "" || len(s.CLI.Tools) == 0 {
					t.Fatalf("cli server %q with command %q and %d tools", s.ID, s.Command, len(s.CLI.Tools))
				}
				for _, tl := range s.CLI.Tools {
					c := tl.Spec.Argv[0].Text
					if c == "" || isShell(c) || strings.ContainsAny(c, " \x00") {
						t.Fatalf("bad cli command accepted: %q", c)
					}
					if _, err := clitool.Compile(tl.Spec); err != nil {
						t.Fatalf("accepted cli tool does not compile: %v", err)
					}
				}
			} else if s.Command == "" || isShell(s.Command) || strings.ContainsAny(s.Command, " \x00") {
				t.Fatalf("bad command accepted: %q", s.Command)
			} else if p := CommandProblem(scope, s.Command, s.Args); p != "" {
				t.Fatalf("refused command accepted: %q %q: %s", s.Command, s.Args, p)
			}
			if scope == ScopeProject {
				for k := range s.Env {
					if denied, _ := ProjectEnvDenied(k); denied {
						t.Fatalf("project env %s accepted", k)
					}
				}
			}
			if len(s.Args) > MaxArgs || len(s.Env) > MaxEnvEntries || s.TimeoutMs > MaxTimeoutMs || s.TimeoutMs < 0 {
				t.Fatalf("cap exceeded: %+v", s)
			}
			if s.Root == "" || s.Dir == "" || !within(s.Root, s.Dir) {
				t.Fatalf("dir %q not within root %q", s.Dir, s.Root)
			}
			if scope == ScopeProject && s.ActionClass != "" {
				t.Fatalf("project action class accepted")
			}
			if _, err := ExpandEnv(s.Env, func(string) (string, bool) { return "v", true }); err != nil {
				t.Fatalf("accepted env does not expand: %v", err)
			}
		}
		if scope == ScopeProject && !reflect.DeepEqual(st, Settings{}) {
			t.Fatalf("project settings accepted: %+v", st)
		}
		for _, fl := range st.Filters {
			if fl.Config != nil && !json.Valid(fl.Config) {
				t.Fatalf("filter config is not JSON: %s", fl.Config)
			}
			if fl.TimeoutMs < 0 || fl.TimeoutMs > MaxFilterTimeout {
				t.Fatalf("filter timeoutMs %d accepted", fl.TimeoutMs)
			}
			if fl.TimeoutPerMiBMs < 0 || fl.TimeoutPerMiBMs > MaxFilterTimeout {
				t.Fatalf("filter timeoutPerMiBMs %d accepted", fl.TimeoutPerMiBMs)
			}
		}
		// Deterministic.
		ss2, _, ds2 := Parse(data, "f.yaml", scope, base)
		if !reflect.DeepEqual(ss, ss2) || !reflect.DeepEqual(ds, ds2) {
			t.Fatal("Parse is not deterministic")
		}
	})
}

// FuzzCommandProblem: the argument scanners never panic, never loop and
// are deterministic; a refusal always says something.
func FuzzCommandProblem(f *testing.F) {
	for _, c := range [][2]string{
		{"python3", "-c\x00x"}, {"python", "-W\x00ignore\x00-Bc\x00x"}, {"perl", "-lne\x00print"},
		{"perl", "-M\x00x;y"}, {"node", "--import=data:x\x00s.js"}, {"npx", "-y\x00node@1\x00-pe\x001"},
		{"uv", "tool\x00run\x00uv\x00run\x00npx\x00bash"}, {"deno", "run\x00data:x"}, {"find", ".\x00-exec"},
		{"ruby", "-0777\x00-e\x00x"}, {"erl", "a\x00-eval\x00x"}, {"npm", "exec\x00--\x00sh"}, {"", ""},
	} {
		f.Add(c[0], c[1], false)
		f.Add(c[0], c[1], true)
	}
	f.Fuzz(func(t *testing.T, cmd, joined string, project bool) {
		scope := ScopeUser
		if project {
			scope = ScopeProject
		}
		var args []string
		if joined != "" {
			args = strings.Split(joined, "\x00")
		}
		p := CommandProblem(scope, cmd, args)
		if q := CommandProblem(scope, cmd, args); q != p {
			t.Fatalf("not deterministic: %q then %q", p, q)
		}
		if p != "" && len(p) < 10 {
			t.Fatalf("terse refusal %q", p)
		}
		if isShell(cmd) && p == "" {
			t.Fatalf("shell %q allowed", cmd)
		}
	})
}

// within reports whether p equals root or lies below it (both clean, absolute).
func within(root, p string) bool {
	if p == root {
		return true
	}
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
