package proc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestOtherPlatformsBuild: the package (and the command, which needs it)
// compiles for a platform it cannot launch on; before proc_unsupported.go
// FreeBSD failed with "undefined: spawn", and Solaris, illumos and AIX
// failed on flock, dup2 and SetNonDumpable.
func TestOtherPlatformsBuild(t *testing.T) {
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		t.Skipf("no Go toolchain beside the test binary (%v)", err)
	}
	if runtime.GOOS == "windows" {
		// A test binary cross-built for Windows (run under an emulator)
		// sees the build host's toolchain, which it cannot run; the
		// cross builds are checked from the unix hosts.
		t.Skip("the cross builds are checked from unix hosts")
	}
	for _, p := range []struct{ goos, goarch string }{
		{"freebsd", "amd64"}, {"solaris", "amd64"}, {"illumos", "amd64"}, {"aix", "ppc64"},
	} {
		cmd := exec.Command(gobin, "build", "-o", os.DevNull, "sluice/cmd/sluice")
		cmd.Env = append(os.Environ(), "GOOS="+p.goos, "GOARCH="+p.goarch, "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("GOOS=%s GOARCH=%s: %v\n%s", p.goos, p.goarch, err, out)
		}
	}
}

// TestUnsupportedErrorNamesThePlatforms: what a launch on such a
// platform says.
func TestUnsupportedErrorNamesThePlatforms(t *testing.T) {
	err := error(&UnsupportedError{GOOS: "freebsd"})
	if !errors.Is(err, ErrUnsupported) {
		t.Fatal("UnsupportedError does not wrap ErrUnsupported")
	}
	for _, want := range []string{"not supported on freebsd", "linux, darwin, windows", "remote servers"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}
