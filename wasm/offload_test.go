package wasm

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestOffloadStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	now := time.Now()
	s, err := NewOffloadStore(OffloadOptions{Dir: dir, TTL: time.Hour, QuotaBytes: 1000, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(dir)
	if fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v", fi.Mode().Perm())
	}
	data := bytes.Repeat([]byte("0123456789"), 30)
	h, err := s.Put(data)
	if err != nil || !validHandle(h) {
		t.Fatalf("Put: %q %v", h, err)
	}
	fi, _ = os.Stat(filepath.Join(dir, h+offloadSuffix))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v", fi.Mode().Perm())
	}
	tests := []struct {
		name        string
		handle      string
		off, length int64
		want        string
		more        bool
		err         error
	}{
		{"first page", h, 0, 10, "0123456789", true, nil},
		{"middle", h, 295, 3, "567", true, nil},
		{"tail", h, 295, 100, "56789", false, nil},
		{"whole", h, 0, 0, string(data), false, nil},
		{"past end", h, 300, 1, "", false, ErrOffsetOutOfRange},
		{"negative", h, -1, 1, "", false, ErrOffsetOutOfRange},
		{"unknown", "r-" + "0123456789abcdef0123456789abcdef", 0, 1, "", false, ErrHandleUnknown},
		{"traversal", "../../etc/passwd", 0, 1, "", false, ErrHandleInvalid},
		{"uppercase", "r-" + "0123456789ABCDEF0123456789ABCDEF", 0, 1, "", false, ErrHandleInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := s.Get(tc.handle, tc.off, tc.length)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil || string(c.Data) != tc.want || c.More != tc.more || c.Total != 300 || c.Offset != tc.off {
				t.Fatalf("got %+v %v", c, err)
			}
		})
	}
	// Quota: the oldest results are evicted to make room.
	now = now.Add(time.Minute)
	h2, err := s.Put(bytes.Repeat([]byte("b"), 600))
	if err != nil {
		t.Fatal(err)
	}
	os.Chtimes(filepath.Join(dir, h2+offloadSuffix), now, now)
	now = now.Add(time.Minute)
	h3, err := s.Put(bytes.Repeat([]byte("c"), 300))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(h, 0, 1); !errors.Is(err, ErrHandleUnknown) {
		t.Fatalf("oldest not evicted: %v", err)
	}
	if _, err := s.Get(h3, 0, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(make([]byte, 1001)); !errors.Is(err, ErrQuotaExceeded) {
		t.Fatalf("over quota: %v", err)
	}
	// TTL.
	now = now.Add(2 * time.Hour)
	if _, err := s.Get(h3, 0, 1); !errors.Is(err, ErrHandleExpired) {
		t.Fatalf("expired: %v", err)
	}
	if err := s.Sweep(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("sweep left %d files", len(ents))
	}
	// An open directory is refused.
	loose := filepath.Join(t.TempDir(), "loose")
	os.Mkdir(loose, 0o755)
	if _, err := NewOffloadStore(OffloadOptions{Dir: loose}); !errors.Is(err, ErrOffloadStoreInDir) {
		t.Fatalf("0755 dir: %v", err)
	}
}

// TestShapeWithOffloadStore: the shape filter stores the full result through
// the store, and the handle in the marker pages it back.
func TestShapeWithOffloadStore(t *testing.T) {
	s, err := NewOffloadStore(OffloadOptions{Dir: filepath.Join(t.TempDir(), "r")})
	if err != nil {
		t.Fatal(err)
	}
	h := newTestHost(t, &Options{Offload: s.Put})
	f := mustLoad(t, h, Spec{Builtin: "shape"})
	in := proseResult(100 << 10)
	out, err := f.Run(context.Background(), in, Meta{})
	if err != nil || out.Status != StatusReplaced {
		t.Fatal(err, out.Status)
	}
	i := bytes.Index(out.Data, []byte("handle r-"))
	if i < 0 {
		t.Fatalf("no handle: %s", out.Data[len(out.Data)-300:])
	}
	handle := string(out.Data[i+7 : i+7+34])
	var got []byte
	for off := int64(0); ; {
		c, err := s.Get(handle, off, 32<<10)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c.Data...)
		off += int64(len(c.Data))
		if !c.More {
			break
		}
	}
	if !bytes.Equal(got, in) {
		t.Fatal("paged result differs from the original")
	}
}
