package catalog

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// varied is a catalog whose tools exercise every index field: titles from
// annotations, read-only hints, escapes, non-ASCII text and a description
// past MaxIndexDescription.
func varied() *Catalog {
	c := sample()
	c.Server.Instructions = "Use\n\"carefully\" — ünïcode"
	c.Tools = append(c.Tools,
		json.RawMessage(`{"name":"w","description":"`+strings.Repeat("dé", 900)+`","annotations":{"title":"Writer","readOnlyHint":false},"inputSchema":{}}`),
		json.RawMessage(`{"name":"r/x.y-z","title":"Reader \u00e9 \"q\"","annotations":{"readOnlyHint":true},"inputSchema":{"type":"object"}}`),
		json.RawMessage(`{"name":"e","description":"tab\there\nnewline \ud83d\ude00","inputSchema":{}}`))
	return c
}

// TestIndexMatchesCatalog: the compact index holds exactly the entries
// built from the catalog's tools, and the set hash of their sums.
func TestIndexMatchesCatalog(t *testing.T) {
	dir := t.TempDir()
	c := varied()
	if !Store(dir, c, at(t0)) {
		t.Fatal("Store failed")
	}
	got, err := LoadIndex(dir, ident(), at(t0))
	if err != nil {
		t.Fatal(err)
	}
	full, err := Load(dir, ident(), at(t0))
	if err != nil {
		t.Fatal(err)
	}
	want := buildIndex(full)
	if !sameIndex(got, want) {
		t.Fatalf("index\n%+v\nwant\n%+v", got, want)
	}
	var sums []Sum
	for _, raw := range full.Tools {
		sums = append(sums, SumOf(raw))
	}
	if !reflect.DeepEqual(got.Sums(), sums) {
		t.Fatalf("sums %+v\nwant %+v", got.Sums(), sums)
	}
	if got.Set != SetHash(sums) || len(got.Entries) != 4 || got.Entries[2].Title != `Reader é "q"` || !got.Entries[2].ReadOnly {
		t.Fatalf("index %+v", got)
	}
	if _, err := os.Stat(legacyIndexPath(dir, ident())); !os.IsNotExist(err) {
		t.Fatalf("a JSON index beside the compact one: %v", err)
	}
}

// TestIndexInto: indexes read one after another into one IndexBuffer are
// each what LoadIndex reads, the second in the first's memory; a bad index
// read into the buffer is still rebuilt from its catalog.
func TestIndexInto(t *testing.T) {
	dir := t.TempDir()
	big, small := varied(), sample()
	small.Identity.ServerID, small.Tools = "gh", small.Tools[:1]
	for _, c := range []*Catalog{big, small} {
		if !Store(dir, c, at(t0)) {
			t.Fatal("Store failed")
		}
	}
	var buf IndexBuffer
	var first *Entry
	for _, c := range []*Catalog{big, small, big} {
		want, err := LoadIndex(dir, c.Identity, at(t0))
		if err != nil {
			t.Fatal(err)
		}
		got, err := LoadIndexInto(dir, c.Identity, at(t0), &buf)
		if err != nil {
			t.Fatal(err)
		}
		if !sameIndex(got, want) {
			t.Fatalf("%s: index read into the buffer\n%+v\nwant\n%+v", c.Identity.ServerID, got, want)
		}
		if first == nil {
			first = &got.Entries[0]
		} else if &got.Entries[0] != first {
			t.Fatalf("%s: entries not read into the buffer's memory", c.Identity.ServerID)
		}
	}
	if err := os.WriteFile(IndexPath(dir, small.Identity), []byte("SLIX garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := LoadIndexInto(dir, small.Identity, at(t0), &buf)
	if err != nil || len(got.Entries) != 1 || got.Entries[0].Name != "echo" {
		t.Fatalf("bad index read into the buffer: %+v, %v", got, err)
	}
}

// TestIndexNeverTrustedWhenBad: an index that is corrupt, cut short, of
// another version, absent or stale (its catalog was replaced by a writer
// that left the index alone) is rebuilt from the catalog and rewritten;
// without a catalog it is a miss.
func TestIndexNeverTrustedWhenBad(t *testing.T) {
	dir := t.TempDir()
	c := varied()
	if !Store(dir, c, at(t0)) {
		t.Fatal("Store failed")
	}
	path := IndexPath(dir, ident())
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := LoadIndex(dir, ident(), at(t0))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"flipped byte", flip(good, len(good)/2)},
		{"flipped checksum", flip(good, 6)},
		{"cut short", good[:len(good)-1]},
		{"trailing byte", append(append([]byte(nil), good...), 0)},
		{"empty", nil},
		{"other version", func() []byte { b := append([]byte(nil), good...); b[4] = 9; return b }()},
		{"legacy JSON", []byte(`{"format":1,"entries":[]}`)},
	} {
		if err := os.WriteFile(path, tc.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, reason := decodeIndex(tc.data, nil); reason == "" {
			t.Fatalf("%s: decodes", tc.name)
		}
		got, err := LoadIndex(dir, ident(), at(t0))
		if err != nil || !sameIndex(got, want) {
			t.Fatalf("%s: LoadIndex = %+v, %v; want it rebuilt", tc.name, got, err)
		}
		if again, _ := os.ReadFile(path); string(again) != string(good) {
			t.Fatalf("%s: index not rewritten", tc.name)
		}
	}
	os.Remove(path)
	if got, err := LoadIndex(dir, ident(), at(t0)); err != nil || !sameIndex(got, want) {
		t.Fatalf("absent index: %+v, %v", got, err)
	}

	// Stale: another writer replaces the catalog (as an earlier version
	// of sluice would, without the compact index).
	c2 := varied()
	c2.Tools = c2.Tools[:1]
	c2.Format = Format
	c2.RecordedAt = t0.Add(time.Minute)
	data, _ := json.Marshal(c2)
	time.Sleep(10 * time.Millisecond) // a modification time of its own even on coarse clocks
	if err := os.WriteFile(Path(dir, ident()), data, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := LoadIndex(dir, ident(), at(t0.Add(time.Minute)))
	if err != nil || len(got.Entries) != 1 || !got.RecordedAt.Equal(c2.RecordedAt) {
		t.Fatalf("stale index: %+v, %v; want the new catalog's one entry", got, err)
	}

	// No catalog: a miss, whatever the index says.
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(Path(dir, ident()))
	if _, err := LoadIndex(dir, ident(), at(t0)); missReason(t, err) != "absent" {
		t.Fatalf("index without its catalog: %v", err)
	}
}

// sameIndex compares two indexes as find sees them: fields, entries and
// sums, whether the hashes sit in the entries or beside them.
func sameIndex(a, b *Index) bool {
	strip := func(ix *Index) Index {
		c := *ix
		c.sums = ""
		c.Entries = append([]Entry(nil), ix.Entries...)
		for i := range c.Entries {
			c.Entries[i].Hash, c.Entries[i].Body = "", ""
		}
		return c
	}
	sa, sb := strip(a), strip(b)
	return reflect.DeepEqual(sa, sb) && reflect.DeepEqual(a.Sums(), b.Sums())
}

func flip(b []byte, i int) []byte {
	out := append([]byte(nil), b...)
	out[i] ^= 0x01
	return out
}

// TestBaselineSet: the set file answers Baseline.Set; a set file that is
// corrupt, absent or stale is rebuilt from the baseline; a missing or
// unusable baseline gives LoadBaseline's errors.
func TestBaselineSet(t *testing.T) {
	dir := t.TempDir()
	id := ident()
	if _, err := BaselineSet(dir, id); !errors.Is(err, ErrNoBaseline) {
		t.Fatalf("no baseline: %v", err)
	}
	b1 := NewBaseline(id, varied().Tools, OriginFirstListing, t0)
	if err := StoreBaseline(dir, b1); err != nil {
		t.Fatal(err)
	}
	if set, err := BaselineSet(dir, id); err != nil || set != b1.Set {
		t.Fatalf("BaselineSet = %q, %v; want %q", set, err, b1.Set)
	}
	path := baselineSetPath(dir, id)
	good, _ := os.ReadFile(path)
	for name, data := range map[string][]byte{"flipped": flip(good, len(good)-2), "cut": good[:len(good)/2], "empty": nil} {
		os.WriteFile(path, data, 0o600)
		if set, err := BaselineSet(dir, id); err != nil || set != b1.Set {
			t.Fatalf("%s: BaselineSet = %q, %v", name, set, err)
		}
		if again, _ := os.ReadFile(path); string(again) != string(good) {
			t.Fatalf("%s: set file not rewritten", name)
		}
	}
	// Stale: the baseline is replaced behind the set file's back.
	b2 := NewBaseline(id, varied().Tools[:2], OriginReview, t0)
	data, _ := json.Marshal(b2)
	time.Sleep(10 * time.Millisecond)
	if err := os.WriteFile(BaselinePath(dir, id), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if b2.Set == b1.Set {
		t.Fatal("test baselines must differ")
	}
	if set, err := BaselineSet(dir, id); err != nil || set != b2.Set {
		t.Fatalf("stale set file: %q, %v; want the new baseline's %q", set, err, b2.Set)
	}
	// An unusable baseline is an error, not the set file's word.
	if err := StoreBaseline(dir, b1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	os.WriteFile(BaselinePath(dir, id), []byte("{broken"), 0o600)
	var be *BaselineError
	if _, err := BaselineSet(dir, id); !errors.As(err, &be) || be.Reason != "malformed" {
		t.Fatalf("broken baseline: %v", err)
	}
	if err := RemoveBaseline(dir, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("RemoveBaseline left the set file: %v", err)
	}
}

// FuzzIndex: decoding an arbitrary body (given a valid header and
// checksum, so the fuzzer reaches the decoder) never panics, and whatever
// decodes encodes back to the same bytes; the same body under a wrong
// checksum never decodes.
func FuzzIndex(f *testing.F) {
	c := varied()
	c.Format = Format
	f.Add(encodeIndex(buildIndex(c), link{size: 10, mtime: 20})[compactHeader:])
	f.Add([]byte{0, 0, 1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		e := encoder{b: body}
		data := e.file(indexMagic)
		ix, l, reason := decodeIndex(data, nil)
		if reason == "" {
			if again := encodeIndex(ix, l); string(again) != string(data) {
				t.Fatalf("round trip changed the file:\n%q\n%q", data, again)
			}
		}
		data[5] ^= 0xff
		if _, _, reason := decodeIndex(data, nil); reason == "" {
			t.Fatal("decoded under a wrong checksum")
		}
	})
}

// lowerAgrees checks lowerOf against strings.ToLower for s, for its lower
// case and for that lower case with each byte changed.
func lowerAgrees(t *testing.T, s string) {
	t.Helper()
	low := strings.ToLower(s)
	if !lowerOf(low, s, low != s) {
		t.Fatalf("lowerOf(%q, %q) = false, want true", low, s)
	}
	for i := 0; i < len(low); i++ {
		for _, c := range []byte{'A', 'a', 0x20, 0x80, low[i] ^ 0x20} {
			b := []byte(low)
			b[i] = c
			want := strings.ToLower(s) == string(b)
			if got := lowerOf(string(b), s, string(b) != s); got != want {
				t.Fatalf("lowerOf(%q, %q) = %v, want %v", b, s, got, want)
			}
		}
	}
}

// TestASCIICase checks the word-at-a-time classification and lowerOf
// against the byte-at-a-time rules for every byte value at every position
// of a word and of the tail.
func TestASCIICase(t *testing.T) {
	check := func(s string) {
		t.Helper()
		upper, other := false, false
		for i := 0; i < len(s); i++ {
			upper = upper || 'A' <= s[i] && s[i] <= 'Z'
			other = other || s[i] >= 0x80
		}
		got := asciiCase(s)
		if got == asciiLower && (upper || other) || got == asciiUpper && !upper || got == notASCII && !other {
			t.Fatalf("asciiCase(%q) = %d (upper case %v, not ASCII %v)", s, got, upper, other)
		}
	}
	for _, n := range []int{0, 1, 7, 8, 9, 16, 19} {
		for pos := 0; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				b := []byte(strings.Repeat("a", n))
				b[pos] = byte(c)
				check(string(b))
				lowerAgrees(t, string(b))
				// Beside an upper-case letter elsewhere in the word.
				if n > 1 {
					b[(pos+1)%n] = 'Z'
					check(string(b))
					lowerAgrees(t, string(b))
				}
			}
		}
	}
	for _, c := range []struct {
		low, s  string
		differs bool
		want    bool
	}{
		{"read a file", "read a file", false, true},
		{"Read", "Read", false, false},
		{"read", "Read", true, true},
		{"écrire", "écrire", false, true},
		{"Écrire", "Écrire", false, false},
		{"écrire", "Écrire", true, true},
		{"read", "read", true, false},
	} {
		if got := lowerOf(c.low, c.s, c.differs); got != c.want {
			t.Errorf("lowerOf(%q, %q, %v) = %v, want %v", c.low, c.s, c.differs, got, c.want)
		}
	}
}
