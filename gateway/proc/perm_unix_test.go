//go:build !windows

package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestMkdirPrivateTightensOwnDirectory: an existing directory of the
// current user's that lets group or others in is made private; owner bits
// and the content are kept.
func TestMkdirPrivateTightensOwnDirectory(t *testing.T) {
	for _, mode := range []os.FileMode{0o755, 0o750, 0o777, 0o701, 0o500 | 0o044} {
		t.Run(strconv.FormatUint(uint64(mode), 8), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "d")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "kept"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, mode); err != nil {
				t.Fatal(err)
			}
			if err := MkdirPrivate(dir); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fi.Mode().Perm(), mode&0o700; got != want {
				t.Fatalf("mode %04o after MkdirPrivate of a %04o directory, want %04o", got, mode, want)
			}
			if err := CheckPrivate(dir); err != nil {
				t.Fatal(err)
			}
			os.Chmod(dir, 0o700) // so the content can be read and removed
			if _, err := os.Stat(filepath.Join(dir, "kept")); err != nil {
				t.Fatalf("content lost: %v", err)
			}
		})
	}
	// Through a symlink the directory it names is tightened.
	target := filepath.Join(t.TempDir(), "target")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(target, 0o755)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := MkdirPrivate(link); err != nil {
		t.Fatal(err)
	}
	if err := CheckPrivate(target); err != nil {
		t.Fatal(err)
	}
}

// TestMkdirPrivateRefusesAnotherUsersDirectory: a loose directory that
// belongs to someone else is left exactly as it was, and the error names
// the directory, its mode, both owners and the fix.
func TestMkdirPrivateRefusesAnotherUsersDirectory(t *testing.T) {
	var dir string
	var owner uint32
	if os.Geteuid() == 0 {
		// Root can give a directory away: to nobody.
		dir = filepath.Join(t.TempDir(), "not ours")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, 0o755)
		owner = 65534
		if err := os.Chown(dir, int(owner), int(owner)); err != nil {
			t.Fatal(err)
		}
	} else {
		// Another user's loose directory every Unix has: the root.
		fi, err := os.Stat("/")
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) == os.Geteuid() || !openToOthers(fi) {
			t.Skipf("/ is mode %04o and owned by uid %d (we are %d): no loose directory of another user to try", fi.Mode().Perm(), st.Uid, os.Geteuid())
		}
		dir, owner = "/", st.Uid
	}
	before, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = MkdirPrivate(dir)
	var pe *PrivateDirError
	if !errors.Is(err, ErrNotPrivate) || !errors.As(err, &pe) {
		t.Fatalf("MkdirPrivate(%s) = %v, want a PrivateDirError", dir, err)
	}
	msg := err.Error()
	for _, want := range []string{dir, fmt.Sprintf("mode %04o", before.Mode().Perm()), "uid " + strconv.FormatUint(uint64(owner), 10),
		"belongs to uid " + strconv.FormatUint(uint64(owner), 10) + ", not to you (uid " + strconv.Itoa(os.Geteuid()) + ")", "chmod 700 " + shellWord(dir), "SLUICE_HOME"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	after, err := os.Stat(dir)
	if err != nil || after.Mode() != before.Mode() {
		t.Fatalf("the directory changed: %v -> %v (%v)", before.Mode(), after.Mode(), err)
	}
	if before.Mode().Perm() != 0o755 && os.Geteuid() == 0 {
		t.Fatalf("test set-up: mode %v", before.Mode())
	}
	// Below it, what MkdirPrivate creates is ours and private.
	if os.Geteuid() == 0 {
		sub := filepath.Join(dir, "sub")
		if err := MkdirPrivate(sub); err != nil {
			t.Fatal(err)
		}
		if err := CheckPrivate(sub); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMkdirPrivateRefusesASharedDirectory: the current user's directory
// whose sticky or setgid bit marks it as shared (like /tmp) is left as it
// is, with the reason.
func TestMkdirPrivateRefusesASharedDirectory(t *testing.T) {
	for _, c := range []struct {
		mode os.FileMode
		bit  string
	}{{0o777 | os.ModeSticky, "sticky"}, {0o770 | os.ModeSetgid, "setgid"}} {
		t.Run(c.bit, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "shared")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, c.mode); err != nil {
				t.Fatal(err)
			}
			before, _ := os.Stat(dir)
			if before.Mode()&(os.ModeSticky|os.ModeSetgid) == 0 {
				t.Fatalf("set-up: mode %v", before.Mode())
			}
			err := MkdirPrivate(dir)
			if !errors.Is(err, ErrNotPrivate) || !strings.Contains(err.Error(), "its "+c.bit+" bit is set") || !strings.Contains(err.Error(), "chmod 700 "+dir) {
				t.Fatalf("MkdirPrivate = %v", err)
			}
			if after, _ := os.Stat(dir); after.Mode() != before.Mode() {
				t.Fatalf("mode changed: %v -> %v", before.Mode(), after.Mode())
			}
		})
	}
}
