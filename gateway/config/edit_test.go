package config

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
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

// entry renders one server entry the way 'sluice import' does: in the
// indentation AppendServers reports.
func entry(id, command string) func(indent, step string) string {
	return func(indent, step string) string {
		return indent + "# imported\n" + indent + id + ":\n" + indent + step + "command: " + command + "\n"
	}
}

func TestAppendServers(t *testing.T) {
	for _, tc := range []struct {
		name, before, want string
	}{
		{"after the last entry, in the file's indentation", commented, strings.Replace(commented, "\n# trailing comment at the end\n",
			"    # imported\n    web:\n        command: npx\n\n# trailing comment at the end\n", 1)},
		{"new file", "", "servers:\n  # imported\n  web:\n    command: npx\n"},
		{"no servers key", "approve: [a]", "approve: [a]\nservers:\n  # imported\n  web:\n    command: npx\n"},
		{"null servers keeps the comment below it", "servers:\n  # add servers here\napprove: [a]\n",
			"servers:\n  # add servers here\n  # imported\n  web:\n    command: npx\napprove: [a]\n"},
		{"empty flow mapping", "servers: {}   # none yet\napprove: [a]\n",
			"servers: # none yet\n  # imported\n  web:\n    command: npx\napprove: [a]\n"},
		{"explicit null", "servers: null\n", "servers:\n  # imported\n  web:\n    command: npx\n"},
		{"crlf key line", "servers: ~\r\napprove: [a]\r\n", "servers:\r\n  # imported\n  web:\n    command: npx\napprove: [a]\r\n"},
		{"no final newline", "servers:\n   a:\n      command: node", "servers:\n   a:\n      command: node\n   # imported\n   web:\n      command: npx\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := target(t, tc.before)
			e, err := AppendServers(tg, entry("web", "npx"))
			if err != nil {
				t.Fatal(err)
			}
			if string(e.Before) != tc.before || string(e.After) != tc.want {
				t.Fatalf("after:\n%q\nwant:\n%q", e.After, tc.want)
			}
			if e.Created != (tc.before == "") {
				t.Fatalf("created = %v", e.Created)
			}
			// Nothing is written before Write.
			if _, err := os.Stat(tg.File); tc.before == "" && !errors.Is(err, os.ErrNotExist) || tc.before != "" && read(t, tg.File) != tc.before {
				t.Fatal("AppendServers wrote the file")
			}
			if err := e.Write(); err != nil {
				t.Fatal(err)
			}
			if got := read(t, tg.File); got != tc.want {
				t.Fatalf("written:\n%q\nwant:\n%q", got, tc.want)
			}
		})
	}
}

func TestAppendServersRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, before string
		render       func(indent, step string) string
		want         string
	}{
		{"a scalar servers", "servers: 3\n", entry("web", "npx"), "not a mapping of servers"},
		{"a list of servers", "servers:\n  - a\n", entry("web", "npx"), "not a mapping of servers"},
		{"flow style", "servers: {a: {command: node}}\n", entry("web", "npx"), "flow style"},
		{"flow top level", "{servers: {}}\n", entry("web", "npx"), "flow style"},
		{"not YAML", "servers:\n  a: [\n", entry("web", "npx"), "fix it first"},
		{"an entry that would not load", "servers:\n  a:\n    command: node\n", entry("web", "./relative"), "would not load"},
		{"a duplicate id", "servers:\n  web:\n    command: node\n", entry("web", "npx"), "would not load"},
		{"too large", "servers:\n", func(indent, step string) string {
			return indent + "web:\n" + indent + step + "command: npx\n" + indent + "# " + strings.Repeat("x", MaxFileBytes) + "\n"
		}, "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := target(t, tc.before)
			_, err := AppendServers(tg, tc.render)
			var ee *EditError
			if err == nil || !errors.As(err, &ee) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an edit error with %q, got %v", tc.want, err)
			}
			if got := read(t, tg.File); got != tc.before {
				t.Fatalf("a refused append changed the file: %q", got)
			}
		})
	}
}

func TestEditWriteBackupAndRace(t *testing.T) {
	tg := target(t, commented)
	if err := os.Chmod(tg.File, 0o640); err != nil {
		t.Fatal(err)
	}
	tg.Backup = filepath.Join(filepath.Dir(tg.File), "backups", "mcp.yaml.1.bak")
	e, err := AppendServers(tg, entry("web", "npx"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Write(); err != nil {
		t.Fatal(err)
	}
	if got := read(t, tg.Backup); got != commented {
		t.Fatalf("backup: %q", got)
	}
	if got := read(t, tg.File); got != string(e.After) {
		t.Fatalf("file: %q", got)
	}
	st, err := os.Stat(tg.File)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm() != 0o640 {
		t.Fatalf("the file's mode changed to %v", st.Mode().Perm())
	}
	if st, err := os.Stat(filepath.Dir(tg.Backup)); err != nil || runtime.GOOS != "windows" && st.Mode().Perm() != 0o700 {
		t.Fatalf("backup directory: %v %v", st, err)
	}

	// The file changes between working out the edit and writing it: the
	// write is refused and the other writer's bytes stay.
	tg.Backup = ""
	e, err = AppendServers(tg, entry("api", "npx"))
	if err != nil {
		t.Fatal(err)
	}
	other := string(e.Before) + "# edited by hand meanwhile\n"
	if err := os.WriteFile(tg.File, []byte(other), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := e.Write(); err == nil || !strings.Contains(err.Error(), "changed while the edit was prepared") {
		t.Fatalf("want a refusal, got %v", err)
	}
	if got := read(t, tg.File); got != other {
		t.Fatalf("the refused write changed the file: %q", got)
	}

	// A file created meanwhile is not overwritten either.
	tg = target(t, "")
	e, err = AppendServers(tg, entry("web", "npx"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tg.File, []byte("servers: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.Write(); err == nil {
		t.Fatal("a file created meanwhile was overwritten")
	}
}

// TestEditErrorCarriesTheFileSystemError: a file that cannot be read is
// an EditError that unwraps to the file system's error (callers tell it
// from a file that cannot take the edit), and nothing is written.
func TestEditErrorCarriesTheFileSystemError(t *testing.T) {
	dir := t.TempDir()
	tg := EditTarget{File: dir, Scope: ScopeUser, Base: dir} // a directory, not a file
	_, err := AppendServers(tg, entry("web", "npx"))
	var ee *EditError
	if !errors.As(err, &ee) || ee.Err == nil || errors.Unwrap(err) == nil || !strings.Contains(err.Error(), "cannot read it") {
		t.Fatalf("want an EditError wrapping the read error, got %#v", err)
	}
	_, err = AppendServers(target(t, "servers: 3\n"), entry("web", "npx"))
	if !errors.As(err, &ee) || errors.Unwrap(err) != nil {
		t.Fatalf("a file that cannot take the edit wraps nothing: %#v", err)
	}
}
