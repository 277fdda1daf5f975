package wasm

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWindowsRenameResultWhileOpen: on Windows a handle another program
// holds on a just-written temp file (a scanner, say) blocks renaming it;
// renameResult waits (bounded) for the handle to close instead of failing
// the Put, and a handle that stays open ends in the error with the file
// still in place.
func TestWindowsRenameResultWhileOpen(t *testing.T) {
	dir, err := os.MkdirTemp("", "sluice-wasm-rename-")
	if err != nil {
		t.Fatal(err)
	}
	from, to := filepath.Join(dir, ".tmp-1"), filepath.Join(dir, "r-1"+offloadSuffix)
	// Cleanup file by file: Wine lacks the call os.RemoveAll makes.
	t.Cleanup(func() { os.Remove(from); os.Remove(to); os.Remove(dir) })
	if err := os.WriteFile(from, []byte("result"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- renameResult(from, to) }()
	select {
	case err := <-done:
		r.Close()
		t.Fatalf("renameResult returned (%v) while another handle held the file: the rename cannot have happened then", err)
	case <-time.After(200 * time.Millisecond):
	}
	r.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("renameResult after the handle closed: %v", err)
		}
	case <-time.After(renameRetryFor + 5*time.Second):
		t.Fatal("renameResult did not return")
	}
	if got, err := os.ReadFile(to); err != nil || string(got) != "result" {
		t.Fatalf("read %q, %v", got, err)
	}
	if _, err := os.Lstat(from); !os.IsNotExist(err) {
		t.Fatalf("the temp file is still there: %v", err)
	}

	// A handle that never closes: a bounded wait, then the error.
	if err := os.WriteFile(from, []byte("again"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err = os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	os.Remove(to)
	if err := renameResult(from, to); err == nil {
		t.Fatal("renameResult moved a file another handle holds open")
	}
	if got, _ := os.ReadFile(from); string(got) != "again" {
		t.Fatalf("after the failed rename: %q", got)
	}
}

// TestWindowsOffloadStore: results are stored, paged and swept on
// Windows through the same rename.
func TestWindowsOffloadStore(t *testing.T) {
	dir, err := os.MkdirTemp("", "sluice-wasm-store-")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewOffloadStore(OffloadOptions{Dir: dir, SweepEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Put([]byte("0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); os.Remove(s.path(h)); os.Remove(dir) })
	c, err := s.Get(h, 3, 4)
	if err != nil || string(c.Data) != "3456" || c.Total != 10 || !c.More {
		t.Fatalf("Get: %+v, %v", c, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 || ents[0].Name() != h+offloadSuffix {
		t.Fatalf("store directory: %v, %v (want only the result, no temp file)", ents, err)
	}
}
