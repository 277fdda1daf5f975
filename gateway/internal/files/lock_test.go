package files

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestLock: a second Lock of the same file waits while the first is held
// and gets it once released; the lock file is created 0600 and left in
// place. (Cleanup is file by file, so the test also runs under Wine,
// which lacks the call os.RemoveAll makes.)
func TestLock(t *testing.T) {
	dir, err := os.MkdirTemp("", "sluice-files-lock-")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "trust.json.lock")
	t.Cleanup(func() { os.Remove(p); os.Remove(dir) })
	unlock, err := Lock(p)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func(), 1)
	go func() {
		u, err := Lock(p)
		if err != nil {
			t.Error(err)
			u = func() {}
		}
		got <- u
	}()
	select {
	case u := <-got:
		u()
		unlock()
		t.Fatal("a second Lock got the file while the first held it")
	case <-time.After(200 * time.Millisecond):
	}
	unlock()
	select {
	case u := <-got:
		u()
	case <-time.After(60 * time.Second):
		t.Fatal("the second Lock did not get the file after the first let go")
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatalf("the lock file is gone: %v", err)
	}
	if st.Mode().Perm()&0o077 != 0 && runtime.GOOS != "windows" {
		t.Fatalf("lock file mode %v", st.Mode().Perm())
	}
	// Taken again at once when free; a lock in a missing directory is an
	// error, not a wait.
	u, err := Lock(p)
	if err != nil {
		t.Fatal(err)
	}
	u()
	if _, err := Lock(filepath.Join(dir, "missing", "x.lock")); err == nil {
		t.Fatal("a lock in a missing directory succeeded")
	}
}
