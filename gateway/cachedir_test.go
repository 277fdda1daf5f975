package gateway

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"sluice/gateway/catalog"
	"sluice/gateway/proc"
)

// TestCacheDirsArePrivate: every directory the gateway creates under the
// cache directory — catalogs, tool baselines, the filters' compilation
// cache — is private (proc.MkdirPrivate: mode 0700; on Windows an
// owner-only access list rather than whatever the parent grants).
func TestCacheDirsArePrivate(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx") + "approve: [\"*\"]\n")
	g := w.open()
	if _, err := g.Find(ctx(t), FindRequest{Server: "fx", Refresh: true}); err != nil {
		t.Fatal(err)
	}
	// A result over the context budget runs the shape filter, which is
	// compiled into the cache.
	big := `{"text":"` + strings.Repeat("x", 256<<10) + `"}`
	if _, err := g.Call(compileCtx(t), CallRequest{Capability: "fx__echo", Arguments: []byte(big)}); err != nil {
		t.Fatal(err)
	}
	g.Close()
	id := g.catalogIdentity(g.reload().Servers[0])
	want := map[string]bool{
		filepath.Dir(catalog.Path(w.cache, id)):         false,
		filepath.Dir(catalog.BaselinePath(w.cache, id)): false,
		filepath.Join(w.cache, "wazero"):                false,
	}
	err := filepath.WalkDir(w.cache, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == w.cache {
			return err
		}
		if _, ok := want[p]; ok {
			want[p] = true
		}
		if err := proc.CheckPrivate(p); err != nil {
			t.Errorf("a cache directory is not private: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p, seen := range want {
		if !seen {
			t.Errorf("%s was not created", p)
		}
	}

	// filter test (sluice filter test, the dashboard's filter page) makes
	// the cache it is given private too.
	cache := filepath.Join(w.cache, "elsewhere", "wazero")
	if _, err := FilterTest(compileCtx(t), FilterTestRequest{Module: "builtin:redact", Input: []byte("token " + ghToken), CacheDir: cache}); err != nil {
		t.Fatal(err)
	}
	if err := proc.CheckPrivate(cache); err != nil {
		t.Fatal(err)
	}
}
