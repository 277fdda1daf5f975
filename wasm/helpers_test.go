package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testGuest reads a committed test guest from testdata/filters.
func testGuest(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "filters", name+".wasm"))
	if err != nil {
		t.Fatalf("reading test guest %s: %v", name, err)
	}
	return b
}

func newTestHost(t testing.TB, o *Options) *Host {
	t.Helper()
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.CacheDir == "" {
		opts.CacheDir = sharedCacheDir(t)
	}
	if opts.Timeout == 0 {
		// Tests about deadlines set their own; the rest must not fail
		// because a loaded machine (or -race) ran a guest slowly.
		opts.Timeout = 30 * time.Second
	}
	if opts.CompileTimeout == 0 {
		// Likewise for compiling a Go guest from configuration under -race.
		opts.CompileTimeout = 5 * time.Minute
	}
	h, err := NewHost(context.Background(), &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

var (
	cacheOnce sync.Once
	cacheDir  string
)

// sharedCacheDir is one compilation cache for the whole test binary, so the
// Go guests compile once per run rather than once per test.
func sharedCacheDir(t testing.TB) string {
	cacheOnce.Do(func() {
		d, err := os.MkdirTemp("", "sluice-wasm-cache-")
		if err != nil {
			t.Fatal(err)
		}
		cacheDir = d
	})
	return cacheDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cacheDir != "" {
		os.RemoveAll(cacheDir)
	}
	os.Exit(code)
}

func mustLoad(t testing.TB, h *Host, spec Spec) *Filter {
	t.Helper()
	f, err := h.Load(context.Background(), spec)
	if err != nil {
		t.Fatalf("Load(%s): %v", spec.Name, err)
	}
	t.Cleanup(func() { f.Close(context.Background()) })
	return f
}

// offloadRecorder is an Options.Offload that keeps what it was given.
type offloadRecorder struct {
	mu    sync.Mutex
	calls int
	last  []byte
}

func (o *offloadRecorder) put(_ context.Context, data []byte) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	o.last = append(o.last[:0], data...)
	return "r-" + strings.Repeat("0", 8), nil
}

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
