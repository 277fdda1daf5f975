//go:build linux || darwin || windows

package proc

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
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

func TestCheckPrivate(t *testing.T) {
	dir := filepath.Join(tempDir(t), "p")
	if err := MkdirPrivate(dir); err != nil {
		t.Fatal(err)
	}
	if err := CheckPrivate(dir); err != nil {
		t.Fatalf("a directory MkdirPrivate made: %v", err)
	}
	if err := CheckPrivate(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing directory passed")
	}
	if runtime.GOOS != "windows" {
		if err := os.Chmod(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := CheckPrivate(dir); err == nil || !strings.Contains(err.Error(), "group or others") {
			t.Fatalf("mode 0750: %v", err)
		}
	}
}

func TestOpenToOthers(t *testing.T) {
	dir := filepath.Join(tempDir(t), "d")
	if err := MkdirPrivate(dir); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if OpenToOthers(fi) {
		t.Fatalf("a directory MkdirPrivate made is reported open to others (mode %v)", fi.Mode())
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if fi, err = os.Lstat(dir); err != nil {
		t.Fatal(err)
	}
	// On Windows a mode grants nothing; only the access list counts.
	if got, want := OpenToOthers(fi), runtime.GOOS != "windows"; got != want {
		t.Fatalf("mode %v: OpenToOthers = %v, want %v", fi.Mode().Perm(), got, want)
	}
}
