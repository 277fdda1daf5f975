package catalog

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sluice/gateway/proc"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func at(t time.Time) *Options { return &Options{Now: func() time.Time { return t }} }

func ident() Identity {
	return Identity{ProjectRoot: "/p", Scope: "project", DeclarationPath: "/p/.sluice/mcp.yaml", ServerID: "fs", Digest: "d1", Cwd: "/p"}
}

func sample() *Catalog {
	return &Catalog{
		Identity: ident(),
		Server:   Server{Name: "fixture", Version: "1.0", Era: "legacy", ProtocolVersion: "2025-11-25"},
		Tools: []json.RawMessage{
			json.RawMessage(`{"name":"echo","inputSchema":{"type":"object","properties":{"n":{"type":"number","default":12345678901234567890.5}}}}`),
		},
		RecordedAt: t0,
	}
}

func missReason(t *testing.T, err error) string {
	t.Helper()
	var me *MissError
	if !errors.Is(err, ErrMiss) || !errors.As(err, &me) {
		t.Fatalf("want a miss, got %v", err)
	}
	return me.Reason
}

func TestRoundTripKeepsRawNumbers(t *testing.T) {
	dir := t.TempDir()
	if !Store(dir, sample(), at(t0)) {
		t.Fatal("Store failed")
	}
	c, err := Load(dir, ident(), at(t0.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Tools) != 1 || !strings.Contains(string(c.Tools[0]), "12345678901234567890.5") {
		t.Fatalf("tool not preserved: %s", c.Tools)
	}
	if c.Server.Era != "legacy" {
		t.Fatalf("server lost: %+v", c.Server)
	}
	st, err := os.Stat(Path(dir, ident()))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v, want 0600", st.Mode().Perm())
	}
	// Private on every OS: 0700, or on Windows an owner-only access list.
	if err := proc.CheckPrivate(filepath.Dir(Path(dir, ident()))); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Dir(Path(dir, ident())))
	if len(ents) != 2 {
		t.Fatalf("want exactly the catalog and its index (no temp leftovers), got %d", len(ents))
	}
}

func TestMisses(t *testing.T) {
	write := func(t *testing.T, dir string, body string) {
		p := Path(dir, ident())
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	good := func(mut func(*Catalog)) string {
		c := sample()
		c.Format = Format
		mut(c)
		b, _ := json.Marshal(c)
		return string(b)
	}
	cases := []struct {
		name, reason string
		body         string
		id           func(Identity) Identity
		now          time.Time
	}{
		{name: "absent", reason: "absent"},
		{name: "malformed", reason: "malformed", body: `{"format":1,`},
		{name: "trailing", reason: "malformed", body: good(func(*Catalog) {}) + `{}`},
		{name: "unknown field", reason: "malformed", body: `{"format":1,"extra":true}`},
		{name: "version", reason: "version", body: good(func(c *Catalog) { c.Format = 2 })},
		{name: "identity digest", reason: "identity", body: good(func(*Catalog) {}), id: func(i Identity) Identity { i.Digest = "d2"; return i }},
		{name: "identity cwd", reason: "identity", body: good(func(*Catalog) {}), id: func(i Identity) Identity { i.Cwd = "/q"; return i }},
		{name: "future", reason: "future", body: good(func(c *Catalog) { c.RecordedAt = t0.Add(time.Hour) })},
		{name: "expired", reason: "expired", body: good(func(*Catalog) {}), now: t0.Add(DefaultTTL + time.Second)},
		{name: "bad tool", reason: "malformed", body: good(func(c *Catalog) { c.Tools = append(c.Tools, json.RawMessage(`{"name":"a b","inputSchema":{}}`)) })},
		// Bytes that are not UTF-8 inside a string of a tool (a file edited
		// or damaged on disk): json.Valid accepts them, an agent's decoder
		// may not, so the catalog is not used.
		{name: "tool not UTF-8", reason: "malformed", body: good(func(c *Catalog) {
			c.Tools = append(c.Tools, json.RawMessage("{\"name\":\"u\",\"inputSchema\":{\"description\":\"bad \xff\xfe\"}}"))
		})},
		{name: "oversized", reason: "oversized", body: `{"format":1,"pad":"` + strings.Repeat("x", MaxFileBytes) + `"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			id := ident()
			if tc.body != "" {
				write(t, dir, tc.body)
			}
			if tc.id != nil {
				id = tc.id(id)
			}
			now := tc.now
			if now.IsZero() {
				now = t0
			}
			_, err := Load(dir, id, at(now))
			if got := missReason(t, err); got != tc.reason {
				t.Fatalf("reason %q, want %q", got, tc.reason)
			}
		})
	}
}

func TestChangedDeclarationReplacesItsOwnFile(t *testing.T) {
	dir := t.TempDir()
	Store(dir, sample(), at(t0))
	c := sample()
	c.Identity.Digest = "d2"
	c.Identity.Cwd = "/p/sub"
	if FileName(c.Identity) != FileName(ident()) {
		t.Fatal("digest and cwd must not change the file name")
	}
	if !Store(dir, c, at(t0)) {
		t.Fatal("Store failed")
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "catalogs"))
	if len(ents) != 2 {
		t.Fatalf("stranded files: %d", len(ents))
	}
	if _, err := Load(dir, ident(), at(t0)); missReason(t, err) != "identity" {
		t.Fatal("old identity must miss")
	}
	if _, err := Load(dir, c.Identity, at(t0)); err != nil {
		t.Fatal(err)
	}
	other := ident()
	other.ServerID = "mem"
	if FileName(other) == FileName(ident()) {
		t.Fatal("server id must change the file name")
	}
}

func TestStoreDropsRejectedTools(t *testing.T) {
	dir := t.TempDir()
	c := sample()
	c.Tools = append(c.Tools,
		json.RawMessage(`{"name":"","inputSchema":{}}`),
		json.RawMessage(`{"name":"x"}`),
		json.RawMessage(`{"name":"y","inputSchema":null}`),
		json.RawMessage(`[1]`),
		json.RawMessage(`{"name":"ok.tool-2","inputSchema":{"type":"object"}}`),
	)
	if !Store(dir, c, at(t0)) {
		t.Fatal("Store failed")
	}
	got, err := Load(dir, ident(), at(t0))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tools) != 2 {
		t.Fatalf("want 2 tools kept, got %d: %s", len(got.Tools), got.Tools)
	}
}

func TestStoreCapsTools(t *testing.T) {
	dir := t.TempDir()
	c := sample()
	c.Tools = nil
	for i := 0; i < MaxTools+3; i++ {
		c.Tools = append(c.Tools, json.RawMessage(`{"name":"t`+strings.Repeat("x", i%5)+`","inputSchema":{}}`))
	}
	if !Store(dir, c, at(t0)) {
		t.Fatal("Store failed")
	}
	got, err := Load(dir, ident(), at(t0))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tools) != MaxTools || !got.Truncated {
		t.Fatalf("tools %d truncated %v", len(got.Tools), got.Truncated)
	}
}

func TestStoreFailureIsFalse(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "catalogs")
	os.WriteFile(blocker, []byte("not a dir"), 0o600)
	if Store(dir, sample(), at(t0)) {
		t.Fatal("Store must report false when it cannot write")
	}
}

func TestRemove(t *testing.T) {
	dir := t.TempDir()
	Store(dir, sample(), at(t0))
	if err := Remove(dir, ident()); err != nil {
		t.Fatal(err)
	}
	if err := Remove(dir, ident()); err != nil {
		t.Fatal("second remove must be a no-op:", err)
	}
}

func FuzzLoad(f *testing.F) {
	c := sample()
	c.Format = Format
	b, _ := json.Marshal(c)
	f.Add(b)
	f.Add([]byte(`{"format":1}`))
	f.Add([]byte(`{"format":1,"identity":{},"tools":[{"name":"x","inputSchema":{}}],"recordedAt":"2026-11-30T12:00:00Z"}`))
	f.Add([]byte("\xff\xfe"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		p := Path(dir, ident())
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, data, 0o600)
		got, err := Load(dir, ident(), at(t0))
		if err != nil {
			if !errors.Is(err, ErrMiss) {
				t.Fatalf("non-miss error %v", err)
			}
			return
		}
		for _, tool := range got.Tools {
			if !ValidTool(tool) {
				t.Fatalf("Load returned an invalid tool %s", tool)
			}
		}
		// A hit must survive a store/load round trip unchanged in size.
		dir2 := t.TempDir()
		if !Store(dir2, got, at(t0)) {
			t.Fatal("a loaded catalog must store")
		}
		again, err := Load(dir2, ident(), at(t0))
		if err != nil || len(again.Tools) != len(got.Tools) {
			t.Fatalf("round trip lost tools: %v", err)
		}
	})
}

func TestIndexFollowsCatalog(t *testing.T) {
	dir := t.TempDir()
	c := sample()
	c.Tools = append(c.Tools, json.RawMessage(`{"name":"w","description":"`+strings.Repeat("d", 3000)+`","annotations":{"title":"Writer","readOnlyHint":false},"inputSchema":{}}`),
		json.RawMessage(`{"name":"r","title":"Reader","annotations":{"readOnlyHint":true},"inputSchema":{}}`))
	if !Store(dir, c, at(t0)) {
		t.Fatal("Store failed")
	}
	ix, err := LoadIndex(dir, ident(), at(t0))
	if err != nil {
		t.Fatal(err)
	}
	if len(ix.Entries) != 3 {
		t.Fatalf("entries %+v", ix.Entries)
	}
	w, r := ix.Entries[1], ix.Entries[2]
	if w.Title != "Writer" || w.ReadOnly || len(w.Description) != MaxIndexDescription {
		t.Fatalf("writer entry %+v", w)
	}
	if r.Title != "Reader" || !r.ReadOnly {
		t.Fatalf("reader entry %+v", r)
	}
	other := ident()
	other.Digest = "d9"
	if _, err := LoadIndex(dir, other, at(t0)); missReason(t, err) != "identity" {
		t.Fatal("index identity must be checked")
	}
	if _, err := LoadIndex(dir, ident(), at(t0.Add(DefaultTTL+time.Minute))); missReason(t, err) != "expired" {
		t.Fatal("index expiry must be checked")
	}
	if err := Remove(dir, ident()); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadIndex(dir, ident(), at(t0)); missReason(t, err) != "absent" {
		t.Fatal("Remove must delete the index")
	}
}
