package proc

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestMkdirPrivate(t *testing.T) {
	dir := filepath.Join(tempDir(t), "a", "private")
	if err := MkdirPrivate(dir); err != nil {
		t.Fatal(err)
	}
	if err := MkdirPrivate(dir); err != nil { // idempotent
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		t.Fatalf("stat: %v, %v", fi, err)
	}
	if runtime.GOOS != "windows" {
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Fatalf("mode = %v", perm)
		}
	}
	checkPrivate(t, dir)
}
