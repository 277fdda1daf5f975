//go:build unix

package gateway

import (
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
