package clitool

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitEnv isolates git from the machine's configuration.
func gitEnv(home string) map[string]string {
	return map[string]string{
		"HOME": home, "GIT_CONFIG_NOSYSTEM": "1", "GIT_PAGER": "cat",
		"GIT_AUTHOR_NAME": "Ann Lee", "GIT_AUTHOR_EMAIL": "ann@example.com",
		"GIT_COMMITTER_NAME": "Ann Lee", "GIT_COMMITTER_EMAIL": "ann@example.com",
	}
}

// TestRealGit drives git itself against a repository the test creates:
// add through an array expansion after "--", commit with a message that
// has spaces and starts like an option-free sentence, log as lines.
func TestRealGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed for this test: %v", err)
	}
	repo, home := t.TempDir(), t.TempDir()
	env := gitEnv(home)
	init := exec.Command("git", "init", "-q", "-b", "main", repo)
	for k, v := range env {
		init.Env = append(init.Env, k+"="+v)
	}
	init.Env = append(init.Env, "PATH="+os.Getenv("PATH"))
	if out, err := init.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	for _, f := range []string{"a.txt", "b c.txt", "-dash.txt"} {
		if err := os.WriteFile(filepath.Join(repo, f), []byte(f+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(s Spec) *Tool {
		s.Server, s.Dir, s.Env = "git", repo, env
		tool, err := Compile(s)
		if err != nil {
			t.Fatal(err)
		}
		return tool
	}
	add := mk(gitAdd("git"))
	commit := mk(Spec{Name: "commit", Argv: argv("git", "commit", "-q", "-m", "{message}"),
		Input: []Param{{Name: "message", Type: TypeString, Required: true, MinLength: 1}}})
	log := mk(gitLog("git"))
	ctx := context.Background()
	call := func(tool *Tool, args string) (string, json.RawMessage) {
		t.Helper()
		res, err := tool.Call(ctx, raw(args))
		if err != nil {
			t.Fatalf("%s: %v", tool.Name(), err)
		}
		text, sc, isErr := decodeResult(t, res)
		if isErr {
			t.Fatalf("%s: %s", tool.Name(), text)
		}
		return text, sc
	}
	call(add, `{"paths": ["a.txt", "b c.txt", "-dash.txt"]}`)
	call(commit, `{"message": "first: add three files"}`)
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("changed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	call(add, `{"paths": ["a.txt"]}`)
	call(commit, `{"message": "second change"}`)
	_, sc := call(log, `{"limit": 5, "author": "Ann"}`)
	var lines struct{ Lines []string }
	if err := json.Unmarshal(sc, &lines); err != nil || len(lines.Lines) != 2 {
		t.Fatalf("log structuredContent %s", sc)
	}
	if !strings.HasSuffix(lines.Lines[0], " second change") || !strings.HasSuffix(lines.Lines[1], " first: add three files") || len(strings.Fields(lines.Lines[0])[0]) != 40 {
		t.Fatalf("log lines %q", lines.Lines)
	}
	if _, sc := call(log, `{"author": "Nobody"}`); string(sc) != `{"lines":[]}` {
		t.Fatalf("filtered log %s", sc)
	}
	// git's own failure is a result the model can read.
	res, err := add.Call(ctx, raw(`{"paths": ["missing.txt"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if text, _, isErr := decodeResult(t, res); !isErr || !strings.Contains(text, "exited with status 128") || !strings.Contains(text, "missing.txt") {
		t.Fatalf("failed add: %s", res)
	}
}
