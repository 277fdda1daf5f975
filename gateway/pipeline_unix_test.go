//go:build unix && !solaris && !aix

package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadModuleRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	if _, err := readModule(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("directory: %v", err)
	}
	fifo := filepath.Join(dir, "f.wasm")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	done := make(chan error, 1)
	go func() { _, err := readModule(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a FIFO was read as a module")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO module blocked")
	}
}

func TestOpenRefusesUnsafeResultsDir(t *testing.T) {
	w := newWorld(t)
	// A directory made to be shared (sticky, like /tmp) is refused with
	// the fix, and left as it is.
	dir := filepath.Join(w.state, "open")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	w.writeUser("results: {dir: " + dir + "}\n")
	if _, err := Open(&Options{Cwd: w.project, Getenv: w.getenv}); err == nil || !strings.Contains(err.Error(), "chmod 700") || !strings.Contains(err.Error(), "sticky") {
		t.Fatalf("want a refusal naming chmod 700, got %v", err)
	}
	if fi, _ := os.Stat(dir); fi.Mode() != os.ModeDir|os.ModeSticky|0o777 {
		t.Fatalf("the refused directory changed: %v", fi.Mode())
	}
	// A loose directory of the user's own is made private.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	g, err := Open(&Options{Cwd: w.project, Getenv: w.getenv})
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("results dir mode %v after Open, want 0700", fi.Mode())
	}
}
