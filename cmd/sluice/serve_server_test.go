package main

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// frames splits serve's stdout into JSON-RPC frames and fails on any line
// that is not one.
func frames(t *testing.T, stdout string) map[string]map[string]json.RawMessage {
	t.Helper()
	out := map[string]map[string]json.RawMessage{}
	for _, line := range strings.Split(strings.TrimRight(stdout, "\n"), "\n") {
		if line == "" {
			continue
		}
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(line), &m) != nil || string(m["jsonrpc"]) != `"2.0"` {
			t.Fatalf("stdout line is not a JSON-RPC frame: %q\nstdout:\n%s", line, stdout)
		}
		out[string(m["id"])] = m
	}
	return out
}

func rpcLines(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

// serveSession runs the built binary with args, writes in, and keeps stdin
// open until every frame in ids has been answered (so that a loaded
// machine cannot turn the shutdown drain into a missing answer), then
// closes stdin and waits for the exit.
func serveSession(t *testing.T, in string, ids []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(sluiceBin, args...)
	stdin, out, errb := startPiped(t, cmd)
	io.WriteString(stdin, in)
	deadline := time.Now().Add(90 * time.Second)
	for _, id := range ids {
		for !strings.Contains(out.String(), `"id":`+id+`,`) {
			if time.Now().After(deadline) {
				t.Fatalf("no answer to id %s:\nstdout:\n%s\nstderr:\n%s", id, out.String(), errb.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	stdin.Close()
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

const initLines = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}`

// gitRepo creates a repository with two commits and returns it and the env
// that isolates git from the machine's configuration.
func gitRepo(t *testing.T) (string, map[string]string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed for this test: %v", err)
	}
	repo := filepath.Join(t.TempDir(), "repo")
	env := map[string]string{
		"HOME": t.TempDir(), "GIT_CONFIG_NOSYSTEM": "1", "GIT_PAGER": "cat",
		"GIT_AUTHOR_NAME": "Ann Lee", "GIT_AUTHOR_EMAIL": "ann@example.com",
		"GIT_COMMITTER_NAME": "Ann Lee", "GIT_COMMITTER_EMAIL": "ann@example.com",
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = filepath.Dir(repo)
		if _, err := os.Stat(repo); err == nil {
			cmd.Dir = repo
		}
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main", repo)
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o600)
	git("add", "a.txt")
	git("commit", "-q", "-m", "first commit")
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("b\n"), 0o600)
	git("commit", "-q", "-am", "second: change a")
	return repo, env
}

func gitDecl(repo string, env map[string]string) string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var e []string
	for _, k := range keys {
		e = append(e, k+": "+jsonQuote(env[k]))
	}
	return `approve: ["git__add"]
servers:
  git:
    cli:
      cwd: ` + jsonQuote(repo) + `
      env: {` + strings.Join(e, ", ") + `}
      tools:
        log:
          description: Recent commits, newest first
          argv: [git, log, "--max-count={limit}", "--format=%H %s", ["--author={author}"]]
          input:
            limit: {type: integer, default: 10, minimum: 1, maximum: 1000}
            author: {type: string, description: Filter by author}
          output: lines
          annotations: {readOnlyHint: true}
        add:
          argv: [git, add, "--", "{paths...}"]
          input:
            paths: {type: array, items: {type: string}, minItems: 1, required: true}
          maxConcurrent: 1   # git add takes the index lock: one at a time
        status:
          argv: [git, status, --porcelain]
          annotations: {readOnlyHint: true}
`
}

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestServeServerGit serves a cli server over real git, alone, through
// the built binary: the tools have their own names, calls run git in the
// repository, refusals and git's own failures are tool errors, and stdout
// carries frames only.
func TestServeServerGit(t *testing.T) {
	w := newWorld(t)
	repo, env := gitRepo(t)
	w.writeUser(gitDecl(repo, env))
	os.WriteFile(filepath.Join(repo, "new file.txt"), []byte("n\n"), 0o600)
	in := rpcLines(initLines,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"log","arguments":{"limit":1}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"log","arguments":{"author":"--output=/tmp/x"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"add","arguments":{"paths":["new file.txt"]}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"add","arguments":{"paths":["missing.txt"]}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"git__log","arguments":{}}}`,
		`not json at all`,
	)
	r := serveSession(t, in, []string{"1", "2", "3", "4", "5", "6", "7", "null"}, "serve", "--server", "git")
	if r.code != 0 {
		t.Fatalf("serve: %s", r)
	}
	f := frames(t, r.stdout)
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	json.Unmarshal(f["2"]["result"], &list)
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "add,log,sluice__read_result,status" {
		t.Fatalf("tools/list names %q", names)
	}
	if res := string(f["3"]["result"]); !strings.Contains(res, `"structuredContent":{"lines":["`) || !strings.Contains(res, ` second: change a"]}`) {
		t.Fatalf("log: %s", res)
	}
	if res := string(f["4"]["result"]); !strings.Contains(res, `"isError":true`) || !strings.Contains(res, `starts with`) {
		t.Fatalf("dash refusal: %s", res)
	}
	if res := string(f["5"]["result"]); strings.Contains(res, `"isError":true`) || f["5"]["error"] != nil {
		t.Fatalf("add: %s %s", res, f["5"]["error"])
	}
	st := exec.Command("git", "-C", repo, "diff", "--cached", "--name-only")
	if out, err := st.Output(); err != nil || strings.TrimSpace(string(out)) != "new file.txt" {
		t.Fatalf("staged after add: %q %v", out, err)
	}
	if res := string(f["6"]["result"]); !strings.Contains(res, `"isError":true`) || !strings.Contains(res, "exited with status 128") || !strings.Contains(res, "missing.txt") {
		t.Fatalf("failed add: %s", res)
	}
	if f["7"]["error"] == nil && !strings.Contains(string(f["7"]["result"]), `"isError":true`) {
		t.Fatalf("a prefixed name must not resolve: %s", f["7"])
	}
	if f["null"]["error"] == nil {
		t.Fatalf("the malformed line got no error frame:\n%s", r.stdout)
	}
}

// TestServeServerStdoutPurity: every refusal before serving leaves stdout
// empty and says why on stderr; failures while serving are frames.
func TestServeServerStdoutPurity(t *testing.T) {
	w := newWorld(t)
	w.writeUser(`servers:
  tools:
    cli:
      tools:
        missing:
          argv: [sluice-no-such-program, x]
          annotations: {readOnlyHint: true}
        failing:
          argv: [ls, /nonexistent-sluice-path]
          annotations: {readOnlyHint: true}
`)
	w.writeProject("servers:\n  proj:\n    cli:\n      tools:\n        t: {argv: [\"true\"]}\n")
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"unknown server", []string{"serve", "--server", "nope"}, 0, `no server "nope" is declared`},
		{"untrusted project server", []string{"serve", "--server", "proj"}, 0, "sluice trust proj"},
		{"gateway mode", []string{"serve", "--server", "tools", "--mode", "gateway"}, 2, "--server serves one server flat"},
	} {
		r := sluiceProc(t, rpcLines(initLines), tc.args...)
		if r.stdout != "" || r.code == 0 || !strings.Contains(r.stderr, tc.msg) {
			t.Fatalf("%s: want exit non-zero, empty stdout and %q on stderr: %s", tc.name, tc.msg, r)
		}
		if tc.code == 2 && r.code != 2 {
			t.Fatalf("%s: exit %d, want 2", tc.name, r.code)
		}
	}
	r := serveSession(t, rpcLines(initLines,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"missing","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"failing","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"failing","arguments":{"x":1}}}`,
	), []string{"1", "2", "3", "4"}, "serve", "--server", "tools", "--log-level", "debug")
	if r.code != 0 {
		t.Fatalf("serve: %s", r)
	}
	f := frames(t, r.stdout)
	if res := string(f["2"]["result"]); !strings.Contains(res, `"isError":true`) || !strings.Contains(res, "not found on PATH") {
		t.Fatalf("missing program: %s", res)
	}
	if res := string(f["3"]["result"]); !strings.Contains(res, `"isError":true`) || !strings.Contains(res, "nonexistent-sluice-path") {
		t.Fatalf("failing program: %s", res)
	}
	if res := string(f["4"]["result"]); !strings.Contains(res, `"isError":true`) || !strings.Contains(res, `not an input`) {
		t.Fatalf("unknown argument: %s", res)
	}
	// At debug level the tool's own stderr is relayed to stderr, never stdout.
	if !strings.Contains(r.stderr, "[tools__failing] ") || !strings.Contains(r.stderr, "nonexistent-sluice-path") {
		t.Fatalf("the tool's stderr was not relayed:\n%s", r.stderr)
	}
}

// TestCallCLIToolThroughCLI: the people's CLI reaches a cli tool like any
// capability: describe shows its schema, call runs git, a refusal exits
// non-zero with the reason.
func TestCallCLIToolThroughCLI(t *testing.T) {
	w := newWorld(t)
	repo, env := gitRepo(t)
	w.writeUser(gitDecl(repo, env))
	r := sluiceProc(t, "", "describe", "git__log")
	want(t, r, 0, "git__log", "limit", "declared")
	r = sluiceProc(t, "", "call", "git__log", "limit=1", "--json")
	want(t, r, 0, "second: change a")
	if strings.Contains(r.stdout, "first commit") {
		t.Fatalf("limit=1 listed both commits:\n%s", r)
	}
	r = sluiceProc(t, "", "call", "git__log", "author=--all")
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, `starts with "-"`) {
		t.Fatalf("dash refusal: %s", r)
	}
}

// TestTrustShowsCLITools: trusting a project cli server shows what each
// tool tells the model and the argv it runs, not an empty command.
func TestTrustShowsCLITools(t *testing.T) {
	w := newWorld(t)
	w.writeProject("servers:\n  proj:\n    cli:\n      tools:\n        log:\n          description: Recent commits\n          argv: [git, log, \"--max-count={n}\", [\"--author={a}\"]]\n          input: {n: {type: integer, default: 5}, a: {type: string}}\n")
	r := sluice(t, "", "trust", "proj", "--action-class", "read")
	want(t, r, 0, "cli tools:     1", "log: git log --max-count={n} [--author={a}]", "description: Recent commits")
	if strings.Contains(r.stdout, "command:") {
		t.Fatalf("a cli server's review shows a command line:\n%s", r)
	}
	// Trusted, it runs, in the project root (not a repository here): git's
	// own failure comes back as the tool's error.
	want(t, sluice(t, "", "call", "proj__log", "n=1"), 3, "exited with status 128", "not a git repository")
}
