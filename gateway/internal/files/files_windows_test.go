package files

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWindowsWriteAtomicWhileRead: on Windows a reader's open handle
// blocks replacing the file; WriteAtomic waits (bounded) for the reader
// to close it instead of failing, and then the new content is in place
// and no temp file is left.
func TestWindowsWriteAtomicWhileRead(t *testing.T) {
	dir, err := os.MkdirTemp("", "sluice-files-test-")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "trust.json")
	// Cleanup file by file: Wine lacks the call os.RemoveAll makes.
	t.Cleanup(func() { os.Remove(p); os.Remove(dir) })
	if err := WriteAtomic(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- WriteAtomic(p, []byte("new"), 0o600) }()
	select {
	case err := <-done:
		r.Close()
		t.Fatalf("WriteAtomic returned (%v) while a reader held the file: the replace cannot have happened then", err)
	case <-time.After(200 * time.Millisecond):
	}
	r.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("WriteAtomic after the reader closed: %v", err)
		}
	case <-time.After(renameRetryFor + 5*time.Second):
		t.Fatal("WriteAtomic did not return")
	}
	if got, err := os.ReadFile(p); err != nil || string(got) != "new" {
		t.Fatalf("read %q, %v; want new", got, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("temp files left behind: %v", ents)
	}
	// A reader that never lets go: a bounded wait, then the error, and
	// the old file and no temp file remain.
	r, err = os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := WriteAtomic(p, []byte("newer"), 0o600); err == nil {
		t.Fatal("WriteAtomic replaced a file a reader holds open")
	}
	if got, _ := os.ReadFile(p); string(got) != "new" {
		t.Fatalf("after the failed replace: %q", got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("temp files left behind: %v", ents)
	}
}
