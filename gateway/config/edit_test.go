package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// commented is a hand-written file: comments everywhere, blank lines,
// odd quoting, a flow list, four-space indentation under servers.
const commented = `# sluice servers for my laptop
# (keep this header)

approve: ["fs__read_*"]   # reads are fine

servers:
    # the filesystem server
    fs:
        command: node   # pinned runtime
        args: ['/opt/fs/index.js', "--root", .]

        env:
            # the token comes from the keyring
            TOKEN: "${env:FS_TOKEN}"

    # git, read only
    git:
        command: node
        args:
        - /opt/git/index.js
        actionClass: read

# trailing comment at the end
`

func target(t *testing.T, body string) EditTarget {
	t.Helper()
	dir := t.TempDir()
	f := filepath.Join(dir, UserFileName)
	if body != "" {
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return EditTarget{File: f, Scope: ScopeUser, Base: dir, Getenv: func(k string) string {
		if k == "PATH" {
			return os.Getenv("PATH")
		}
		return ""
	}}
}

func read(t *testing.T, f string) string {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEditsKeepTheFileByteExact(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(EditTarget) (*Change, error)
		want string // the whole file after the edit
	}{
		{"add", func(tg EditTarget) (*Change, error) {
			return AddServer(tg, "web", ServerSpec{Command: "npx", Args: []string{"-y", "@acme/web mcp", "8080"}, Env: []EnvVar{{"MODE", "fast"}}, ActionClass: "read"})
		}, strings.Replace(commented, "\n# trailing comment at the end\n",
			"    web:\n        command: npx\n        args: [-y, \"@acme/web mcp\", \"8080\"]\n        env:\n            MODE: fast\n        actionClass: read\n\n# trailing comment at the end\n", 1)},
		{"disable", func(tg EditTarget) (*Change, error) { return SetEnabled(tg, "fs", false) },
			strings.Replace(commented, "            TOKEN: \"${env:FS_TOKEN}\"\n", "            TOKEN: \"${env:FS_TOKEN}\"\n        enabled: false\n", 1)},
		{"tools", func(tg EditTarget) (*Change, error) {
			return SetTools(tg, "git", []string{"log*", "show"}, []string{"push"}, false)
		},
			strings.Replace(commented, "        actionClass: read\n", "        actionClass: read\n        tools: {allow: [\"log*\", show], deny: [push]}\n", 1)},
		{"update command keeps the line comment", func(tg EditTarget) (*Change, error) {
			return UpdateServer(tg, "fs", ServerSpec{Command: "/usr/bin/node", Args: []string{"/opt/fs/v2.js"}, SetArgs: true})
		}, strings.Replace(strings.Replace(commented, "        command: node   # pinned runtime\n", "        command: /usr/bin/node # pinned runtime\n", 1),
			"        args: ['/opt/fs/index.js', \"--root\", .]\n", "        args: [/opt/fs/v2.js]\n", 1)},
		{"update env merges", func(tg EditTarget) (*Change, error) {
			return UpdateServer(tg, "git", ServerSpec{Env: []EnvVar{{"A", "1"}}})
		}, strings.Replace(commented, "        actionClass: read\n", "        actionClass: read\n        env:\n            A: \"1\"\n", 1)},
		{"remove takes its comment along", func(tg EditTarget) (*Change, error) { return RemoveServer(tg, "git") },
			strings.Replace(commented, "    # git, read only\n    git:\n        command: node\n        args:\n        - /opt/git/index.js\n        actionClass: read\n\n", "", 1)},
		{"remove the first", func(tg EditTarget) (*Change, error) { return RemoveServer(tg, "fs") },
			strings.Replace(commented, "    # the filesystem server\n    fs:\n        command: node   # pinned runtime\n        args: ['/opt/fs/index.js', \"--root\", .]\n\n        env:\n            # the token comes from the keyring\n            TOKEN: \"${env:FS_TOKEN}\"\n\n", "", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := target(t, commented)
			ch, err := tc.edit(tg)
			if err != nil {
				t.Fatal(err)
			}
			if got := read(t, tg.File); got != tc.want {
				t.Fatalf("file after the edit:\n%s\n--- want:\n%s\n--- diff shown:\n%s", got, tc.want, ch.Diff)
			}
			if ch.Diff == "" || !strings.Contains(ch.Diff, "+") && !strings.Contains(ch.Diff, "-") {
				t.Fatalf("no diff: %+v", ch)
			}
			if _, _, ds := Parse([]byte(read(t, tg.File)), tg.File, ScopeUser, tg.Base); errCount(ds) != 0 {
				t.Fatalf("the edited file has errors:%s", dump(ds))
			}
		})
	}
}

func TestEditRoundTripAndRefusals(t *testing.T) {
	// enable undoes disable exactly; reset undoes tools exactly.
	tg := target(t, commented)
	if _, err := SetEnabled(tg, "git", false); err != nil {
		t.Fatal(err)
	}
	if _, err := SetEnabled(tg, "git", true); err != nil {
		t.Fatal(err)
	}
	if _, err := SetTools(tg, "fs", nil, []string{"write_*"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := SetTools(tg, "fs", nil, nil, true); err != nil {
		t.Fatal(err)
	}
	if got := read(t, tg.File); got != commented {
		t.Fatalf("round trip changed the file:\n%s", got)
	}

	// Refusals leave the file untouched.
	for _, tc := range []struct {
		name string
		edit func() (*Change, error)
		want string
	}{
		{"duplicate", func() (*Change, error) { return AddServer(tg, "fs", ServerSpec{Command: "node"}) }, "already declared"},
		{"shell", func() (*Change, error) {
			return AddServer(tg, "sh", ServerSpec{Command: "bash", Args: []string{"-c", "x"}})
		}, "not allowed"},
		{"relative command", func() (*Change, error) { return AddServer(tg, "rel", ServerSpec{Command: "./x"}) }, "would not load"},
		{"bad class", func() (*Change, error) { return UpdateServer(tg, "fs", ServerSpec{ActionClass: "write"}) }, "would not load"},
		{"bad glob", func() (*Change, error) { return SetTools(tg, "fs", []string{"["}, nil, false) }, "malformed"},
		{"missing", func() (*Change, error) { return RemoveServer(tg, "nope") }, "no server nope"},
	} {
		_, err := tc.edit()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: want an error with %q, got %v", tc.name, tc.want, err)
		}
		if got := read(t, tg.File); got != commented {
			t.Fatalf("%s: a refused edit changed the file:\n%s", tc.name, got)
		}
	}
	if _, err := RemoveServer(tg, "nope"); !errors.Is(err, ErrServerNotFound) {
		t.Fatalf("missing server: %v", err)
	}
}

func TestEditCreatesAndFillsEmptyFiles(t *testing.T) {
	tg := target(t, "")
	ch, err := AddServer(tg, "a", ServerSpec{URL: "https://example.com/mcp"})
	if err != nil || !ch.Created {
		t.Fatal(ch, err)
	}
	if got := read(t, tg.File); got != "servers:\n  a:\n    url: https://example.com/mcp\n" {
		t.Fatalf("new file: %q", got)
	}
	tg = target(t, "# mine\nservers:\nidleTimeoutMs: 1000")
	if _, err := AddServer(tg, "b", ServerSpec{Command: "node", Args: []string{"s.js"}}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, tg.File); got != "# mine\nservers:\n  b:\n    command: node\n    args: [s.js]\nidleTimeoutMs: 1000" {
		t.Fatalf("null servers: %q", got)
	}
	tg = target(t, "servers: {a: {command: node}}\n")
	if _, err := AddServer(tg, "b", ServerSpec{Command: "node"}); err == nil || !strings.Contains(err.Error(), "flow style") {
		t.Fatalf("flow style: %v", err)
	}
	tg = target(t, "servers:\n  a: [\n")
	if _, err := AddServer(tg, "b", ServerSpec{Command: "node"}); err == nil || !strings.Contains(err.Error(), "fix it first") {
		t.Fatalf("broken file: %v", err)
	}
}
