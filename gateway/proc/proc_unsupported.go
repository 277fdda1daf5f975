//go:build !linux && !darwin && !windows

package proc

import (
	"os"
	"runtime"
)

// On any other platform sluice builds, and everything but launching
// local servers works (declarations, trust, catalogs, remote servers);
// every launch fails with an *UnsupportedError naming the platforms
// that can launch (see "Why other platforms build but launch nothing"
// in doc.go).

func spawn(spec *Spec, exe string, argv, env []string, dir string, stdio []*os.File) (group, int, error) {
	return nil, 0, &UnsupportedError{GOOS: runtime.GOOS}
}

func pinDir(spec Spec, dir, realRoot string) (*os.File, string, error) {
	return nil, "", &UnsupportedError{GOOS: runtime.GOOS}
}

// GroupAlive reports false: no process group is ever started here.
func GroupAlive(pgid int) bool { return false }
