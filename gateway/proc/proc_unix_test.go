//go:build linux || darwin

package proc

import (
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCwdSwappedToSymlinkBeforeSpawn: the directory passes the check at
// creation and is replaced by a symlink leading out before spawn.
func TestCwdSwappedToSymlinkBeforeSpawn(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "work"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Contain(root, "work"); err != nil {
		t.Fatalf("creation check: %v", err)
	}
	if err := os.Remove(filepath.Join(root, "work")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "work")); err != nil {
		t.Fatal(err)
	}
	s := childSpec(t, "pwd-env")
	s.Root, s.Dir = root, "work"
	p, err := Start(s)
	if err == nil {
		p.Close()
		t.Fatal("spawn accepted a cwd swapped to an escaping symlink")
	}
	if reasonOf(err) != ReasonCwdEscapesSymlink || !errors.Is(err, ErrCwdEscape) {
		t.Fatalf("err = %v", err)
	}
}

// killGroup is the tests' last-resort cleanup: by group id, never by name.
func killGroup(pgid int) {
	if pgid > 1 {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

func TestContain(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	mk := func(p string) {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mk(filepath.Join(root, "a", "b"))
	mk(filepath.Join(base, "outside"))
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(base, "outside"), filepath.Join(root, "out")))
	must(os.Symlink("a/b", filepath.Join(root, "in")))
	must(os.Symlink("../..", filepath.Join(root, "a", "up")))
	must(os.Symlink(root, filepath.Join(base, "rootlink")))
	realRoot, _ := filepath.EvalSymlinks(root)

	cases := []struct {
		root, dir string
		want      string // resolved, relative to realRoot
		reason    string
	}{
		{root, "", ".", ""},
		{root, ".", ".", ""},
		{root, "a/b", "a/b", ""},
		{root, "a/b/../..", ".", ""},
		{root, filepath.Join(root, "a"), "a", ""},
		{root, "in", "a/b", ""},
		{filepath.Join(base, "rootlink"), "a", "a", ""},
		{root, "..", "", ReasonCwdEscapes},
		{root, "a/../../outside", "", ReasonCwdEscapes},
		{root, filepath.Join(base, "outside"), "", ReasonCwdEscapes},
		{root + "x", "", "", ReasonRootInvalid},
		{root, "out", "", ReasonCwdEscapesSymlink},
		{root, "a/up", "", ReasonCwdEscapesSymlink},
		{root, "missing", "", ReasonCwdNotFound},
		{root, "file", "", ReasonCwdNotDir},
		{"relative/root", "", "", ReasonRootInvalid},
		{"", "a", "", ReasonRootInvalid},
	}
	for _, c := range cases {
		got, err := Contain(c.root, c.dir)
		if c.reason != "" {
			var ce *CwdError
			if !errors.As(err, &ce) || ce.Reason != c.reason {
				t.Errorf("Contain(%q, %q) = %q, %v; want reason %s", c.root, c.dir, got, err, c.reason)
			}
			continue
		}
		if err != nil || got != filepath.Join(realRoot, c.want) {
			t.Errorf("Contain(%q, %q) = %q, %v; want %q", c.root, c.dir, got, err, filepath.Join(realRoot, c.want))
		}
	}
}

func TestResolveCommand(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "tool")
	if err := os.WriteFile(exe, []byte("#!/bin/false\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "noexec"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	path := "relative:" + "::" + dir
	cases := []struct {
		cmd, want, reason string
	}{
		{"tool", exe, ""},
		{exe, exe, ""},
		{dir + "//./tool", exe, ""},
		{"noexec", "", ReasonCommandNotFound},
		{"missing", "", ReasonCommandNotFound},
		{filepath.Join(dir, "missing"), "", ReasonCommandNotFound},
		{dir, "", ReasonCommandNotFound},
		{"./tool", "", ReasonCommandInvalid},
		{"sub/tool", "", ReasonCommandInvalid},
		{"", "", ReasonCommandInvalid},
		{" tool", "", ReasonCommandInvalid},
		{"..", "", ReasonCommandInvalid},
	}
	for _, c := range cases {
		got, err := ResolveCommand(c.cmd, path)
		if c.reason != "" {
			var ce *CommandError
			if !errors.As(err, &ce) || ce.Reason != c.reason {
				t.Errorf("ResolveCommand(%q) = %q, %v; want %s", c.cmd, got, err, c.reason)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ResolveCommand(%q) = %q, %v; want %q", c.cmd, got, err, c.want)
		}
	}
}

// exitNow exits without the race runtime's exit-time pause.
func exitNow(code int) { unix.Exit(code) }

// ignoreTerm makes a test child ignore the polite stop request.
func ignoreTerm() { signal.Ignore(syscall.SIGTERM) }

func tempDir(t testing.TB) string { return t.TempDir() }

// checkPrivate: on Unix the mode is the whole story (checked by the caller).
func checkPrivate(t *testing.T, dir string) {}
