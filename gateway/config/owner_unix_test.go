//go:build unix

package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestForeignOwner: this user's file is not foreign; one chowned to
// another user is (only root can make one to check that half).
func TestForeignOwner(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if uid, foreign := foreignOwner(p); foreign {
		t.Fatalf("own file reported as owned by uid %d", uid)
	}
	if os.Getuid() == 0 {
		if err := os.Lchown(p, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		if uid, foreign := foreignOwner(p); !foreign || uid != 4242 {
			t.Fatalf("a file of uid 4242: %d %v", uid, foreign)
		}
	}
}
