package gateway

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sluice/wasm"
)

func TestReadResultErrors(t *testing.T) {
	w := newWorld(t)
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	w.writeUser("results: {ttlMs: 60000}\n")
	g := w.open(func(o *Options) { o.now = clock })
	h, err := g.pipeline.store.Put([]byte("stored bytes"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := g.ReadResult(h, 0, 0)
	if err != nil || p.Data != "stored bytes" || !p.EOF || p.Total != 12 {
		t.Fatalf("read: %+v, %v", p, err)
	}
	cases := []struct {
		handle string
		offset int64
		kind   Kind
		want   string
	}{
		{"r-" + strings.Repeat("0", 32), 0, KindUnknown, "no stored result"},
		{"not-a-handle", 0, KindBadInput, "not a result handle"},
		{h, 12, KindBadInput, "past the end"},
		{h, -1, KindBadInput, "negative"},
	}
	for _, c := range cases {
		_, err := g.ReadResult(c.handle, c.offset, 0)
		if KindOf(err) != c.kind || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadResult(%q, %d): %v, want %s %q", c.handle, c.offset, err, c.kind, c.want)
		}
	}
	var ge *Error
	if _, err := g.ReadResult("r-"+strings.Repeat("0", 32), 0, 0); !errors.As(err, &ge) || ge.Remedy.IsZero() {
		t.Fatalf("unknown handle without a remedy: %v", err)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	if _, err := g.ReadResult(h, 0, 0); KindOf(err) != KindUnknown || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired handle: %v", err)
	}
}

func TestReadResultPagesOnCharacterBoundaries(t *testing.T) {
	w := newWorld(t)
	g := w.open()
	text := strings.Repeat("aé€😀", 50) // 1, 2, 3 and 4-byte characters
	h, err := g.pipeline.store.Put([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, length := range []int64{1, 2, 3, 5, 7, 64} {
		var got strings.Builder
		var off int64
		for {
			p, err := g.ReadResult(h, off, length)
			if err != nil {
				t.Fatal(err)
			}
			if p.Offset != off {
				t.Fatalf("length %d: page starts at %d, asked %d", length, p.Offset, off)
			}
			b, err := json.Marshal(p)
			if err != nil || strings.Contains(string(b), `"encoding"`) {
				t.Fatalf("length %d: page %s is not text: %v", length, b, err)
			}
			got.WriteString(p.Data)
			if p.EOF {
				break
			}
			off = p.Next
		}
		if got.String() != text {
			t.Fatalf("length %d: pages do not reassemble the text", length)
		}
	}
	// An offset inside a character starts at that character.
	p, err := g.ReadResult(h, 2, 4) // inside é
	if err != nil || p.Offset != 1 || !strings.HasPrefix(p.Data, "é") {
		t.Fatalf("mid-character offset: %+v, %v", p, err)
	}
	// Bytes that are not UTF-8 travel as base64 in JSON, exactly.
	bin := []byte{0xff, 0x00, 0xfe, 'x'}
	hb, err := g.pipeline.store.Put(bin)
	if err != nil {
		t.Fatal(err)
	}
	p, err = g.ReadResult(hb, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(p)
	var back ResultPage
	if err := json.Unmarshal(b, &back); err != nil || back.Data != string(bin) || !strings.Contains(string(b), `"encoding":"base64"`) {
		t.Fatalf("binary page %s: %v", b, err)
	}
}

func FuzzReadResultPages(f *testing.F) {
	f.Add([]byte("plain ascii"), int64(3), int64(0))
	f.Add([]byte("aé€😀"), int64(1), int64(2))
	f.Add([]byte{0xff, 0xe2, 0x82, 0x00, 0xf0}, int64(2), int64(1))
	dir := f.TempDir()
	store, err := wasm.NewOffloadStore(wasm.OffloadOptions{Dir: filepath.Join(dir, "results")})
	if err != nil {
		f.Fatal(err)
	}
	g := &Gateway{pipeline: &pipeline{store: store}}
	f.Fuzz(func(t *testing.T, data []byte, length, start int64) {
		if len(data) == 0 || len(data) > 1<<16 {
			return
		}
		length = 1 + (length&0x7fffffff)%64
		start = (start & 0x7fffffff) % int64(len(data))
		h, err := store.Put(data)
		if err != nil {
			t.Fatal(err)
		}
		defer os.Remove(filepath.Join(dir, "results", h+".result"))
		var got []byte
		off := start
		first := true
		for n := 0; ; n++ {
			p, err := g.ReadResult(h, off, length)
			if err != nil {
				t.Fatalf("offset %d: %v", off, err)
			}
			if first {
				if p.Offset > start || start-p.Offset > 3 {
					t.Fatalf("first page starts at %d for offset %d", p.Offset, start)
				}
				off = p.Offset
				first = false
			}
			if p.Offset != off || p.Length != int64(len(p.Data)) || p.Length == 0 {
				t.Fatalf("page %+v at %d", p, off)
			}
			got = append(got, p.Data...)
			if p.EOF {
				break
			}
			off = p.Next
			if n > len(data) {
				t.Fatal("paging does not end")
			}
		}
		if string(got) != string(data[len(data)-len(got):]) {
			t.Fatalf("pages do not reassemble the stored bytes")
		}
	})
}

// TestQuietGatewaySweepsExpiredResults: expired offloaded results leave
// the disk while the gateway runs, even when nothing new is stored.
func TestQuietGatewaySweepsExpiredResults(t *testing.T) {
	w := newWorld(t)
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	w.writeUser("results: {ttlMs: 60000}\n")
	g := w.open(func(o *Options) { o.now = clock; o.IdleTimeout = 200 * time.Millisecond })
	h, err := g.pipeline.store.Put([]byte("stored bytes"))
	if err != nil {
		t.Fatal(err)
	}
	files := func() []string {
		m, _ := filepath.Glob(filepath.Join(g.StateDir(), "results", h+"*"))
		return m
	}
	if len(files()) != 1 {
		t.Fatalf("stored result not on disk: %v", files())
	}
	mu.Lock()
	now = now.Add(sweepEvery + 2*time.Minute) // past the TTL and the sweep interval
	mu.Unlock()
	for deadline := time.Now().Add(30 * time.Second); len(files()) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) { // hang guard
			t.Fatalf("expired result %s still on disk: %v", h, files())
		}
	}
}
