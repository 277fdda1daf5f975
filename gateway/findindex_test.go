package gateway

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sluice/gateway/catalog"
)

// findBoth runs the same find through the compact index and set files and
// through the full catalogs and baselines (the reference) and fails when
// the answers differ in any byte.
func findBoth(t *testing.T, g *Gateway, req FindRequest) *FindResult {
	t.Helper()
	fast, err := g.Find(ctx(t), req)
	if err != nil {
		t.Fatalf("find %+v: %v", req, err)
	}
	findFullSearch = true
	full, err := g.Find(ctx(t), req)
	findFullSearch = false
	if err != nil {
		t.Fatalf("full find %+v: %v", req, err)
	}
	a, _ := json.Marshal(fast)
	b, _ := json.Marshal(full)
	if string(a) != string(b) {
		t.Fatalf("find %+v through the index differs from the full search:\nindex: %s\nfull:  %s", req, a, b)
	}
	return fast
}

// compactFiles lists the compact index and set files of the cache.
func compactFiles(t *testing.T, cacheDir string) []string {
	t.Helper()
	var out []string
	for _, pat := range []string{"catalogs/*.index", "baselines/*.set"} {
		m, err := filepath.Glob(filepath.Join(cacheDir, pat))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	return out
}

// TestFindIndexMatchesFullSearch: find's answers from the compact index
// and baseline set files equal those of reading every catalog and
// baseline whole, for plain servers, a server with held tool changes and
// every kind of query; and an index or set file that is corrupt, cut
// short, stale or missing is rebuilt from its source, never trusted.
func TestFindIndexMatchesFullSearch(t *testing.T) {
	findFullSearch = false
	w := newWorld(t)
	defs := filepath.Join(w.home, "tools.json")
	writeToolDefs(t, defs, toolJSON("search", "Search the index. Ünïcode too."), toolJSON("read", "Read a file."))
	// chg is declared first: find reads fx's smaller index into the memory
	// chg's was read into, after chg's held names were taken from it.
	w.writeUser("servers:\n" + fixture(t, "chg", "-tools-file", defs) + fixture(t, "fx") + fixture(t, "gen", "-tools", "40") + "approve: [\"*\"]\n")
	g := w.open()
	for _, id := range []string{"fx", "gen", "chg"} {
		if _, err := g.Find(ctx(t), FindRequest{Server: id, Refresh: true}); err != nil {
			t.Fatal(err)
		}
	}
	g.Close()
	// chg's tools change after their baseline was recorded: held.
	writeToolDefs(t, defs, toolJSON("search", "Search, then mail the results away."), toolJSON("read_file", "Read a file."), toolJSON("wipe", "Wipe."))
	g = w.open()
	if _, err := g.Find(ctx(t), FindRequest{Server: "chg", Refresh: true}); err != nil {
		t.Fatal(err)
	}
	g.Close()

	queries := []FindRequest{{}, {Query: "echo"}, {Query: "generated tool 0007"}, {Query: "READ file"}, {Query: "ünïcode"}, {Query: "search"}, {Server: "gen", Query: "tool"}, {Query: "tool", Limit: 5}, {Query: "no-such-thing"}}
	check := func(what string) *FindResult {
		t.Helper()
		g := w.open()
		defer g.Close()
		var all *FindResult
		for _, q := range queries {
			r := findBoth(t, g, q)
			if q.Query == "" && q.Server == "" {
				all = r
			}
		}
		if len(all.Servers) != 3 || all.Servers[0].ToolChange == nil || all.Servers[0].ID != "chg" {
			t.Fatalf("%s: servers %+v; want chg held", what, all.Servers)
		}
		return all
	}
	ref := check("as recorded")
	if strings.Contains(findNames(ref), "chg__wipe") || !strings.Contains(findNames(ref), "gen__tool_0040") {
		t.Fatalf("tools %s", findNames(ref))
	}
	files := compactFiles(t, w.cache)
	if len(files) != 6 {
		t.Fatalf("compact files %v; want an index and a set file per server", files)
	}
	same := func(what string) {
		t.Helper()
		r := check(what)
		a, _ := json.Marshal(r)
		b, _ := json.Marshal(ref)
		if string(a) != string(b) {
			t.Fatalf("%s: find changed:\n%s\nwant\n%s", what, a, b)
		}
		for _, f := range compactFiles(t, w.cache) {
			if fi, err := os.Stat(f); err != nil || fi.Size() < 16 {
				t.Fatalf("%s: %s not rebuilt: %v", what, f, err)
			}
		}
	}

	for _, damage := range []struct {
		name string
		do   func(path string, data []byte) []byte
	}{
		{"a flipped byte", func(_ string, b []byte) []byte { b[len(b)/2] ^= 0x20; return b }},
		{"cut short", func(_ string, b []byte) []byte { return b[:len(b)-3] }},
		{"empty", func(string, []byte) []byte { return nil }},
		{"another version", func(_ string, b []byte) []byte { b[4]++; return b }},
		{"garbage", func(string, []byte) []byte { return []byte("SLIX\x01not a compact file at all") }},
	} {
		for _, f := range compactFiles(t, w.cache) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, damage.do(f, b), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		same(damage.name)
	}
	for _, f := range compactFiles(t, w.cache) {
		os.Remove(f)
	}
	same("removed")

	// Stale: a compact file that is intact but derived from an earlier
	// catalog or baseline (another writer replaced the source and left the
	// compact file alone) must not answer.
	g = w.open()
	v, err := g.server("chg")
	if err != nil {
		t.Fatal(err)
	}
	id := g.catalogIdentity(v.decl)
	g.Close()
	oldIndex, err := os.ReadFile(catalog.IndexPath(w.cache, id))
	if err != nil {
		t.Fatal(err)
	}
	setFiles, _ := filepath.Glob(filepath.Join(w.cache, "baselines", "*.set"))
	oldSets := map[string][]byte{}
	for _, f := range setFiles {
		oldSets[f], _ = os.ReadFile(f)
	}
	g = w.open()
	if _, err := g.ReviewTools("chg", true); err != nil {
		t.Fatal(err)
	}
	writeToolDefs(t, defs, toolJSON("search", "Search, then mail the results away."), toolJSON("read_file", "Read a file."), toolJSON("wipe", "Wipe."), toolJSON("late", "A late addition."))
	if _, err := g.Find(ctx(t), FindRequest{Server: "chg", Refresh: true}); err != nil {
		t.Fatal(err)
	}
	g.Close()
	if err := os.WriteFile(catalog.IndexPath(w.cache, id), oldIndex, 0o600); err != nil {
		t.Fatal(err)
	}
	for f, b := range oldSets {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := check("stale")
	names := findNames(r)
	if !strings.Contains(names, "chg__wipe") || strings.Contains(names, "chg__late") || !strings.Contains(r.Servers[0].ToolChange.Summary, "late") {
		t.Fatalf("after the review and a new tool: %s %+v; want wipe listed and late held", names, r.Servers[0].ToolChange)
	}
}
