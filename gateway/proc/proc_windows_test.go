package proc

import (
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"
)

// exitNow exits without the race runtime's exit-time pause.
func exitNow(code int) { windows.Exit(code) }

// ignoreTerm makes a test child survive the polite stop request: on
// Windows that is CTRL_BREAK, which the Go runtime turns into os.Interrupt
// and which only a registered handler survives (an ignored signal still
// ends the process).
func ignoreTerm() {
	signal.Notify(make(chan os.Signal, 1), os.Interrupt, syscall.SIGTERM)
}

// killGroup: a test's last-resort cleanup. Closing the job (p.Close, which
// every test's cleanup calls) ends every process in it, so there is
// nothing to do by id.
func killGroup(pgid int) {}

// inGroup reports whether pid runs in p's job object.
func inGroup(p *Process, pid int) bool {
	g := p.g.(*winGroup)
	g.mu.Lock()
	defer g.mu.Unlock()
	ids, err := g.pids()
	return err == nil && slices.Contains(ids, pid)
}

// leaderHandles names the kernel handles on the group still open.
func leaderHandles(p *Process) string {
	g := p.g.(*winGroup)
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.released {
		return fmt.Sprintf("job %#x, process %#x", g.job, g.proc)
	}
	return ""
}

var procGetProcessHandleCount = windows.NewLazySystemDLL("kernel32.dll").NewProc("GetProcessHandleCount")

// fdCount counts this process's open handles.
func fdCount(t testing.TB) int {
	t.Helper()
	var n uint32
	r, _, err := procGetProcessHandleCount.Call(uintptr(windows.CurrentProcess()), uintptr(unsafe.Pointer(&n)))
	if r == 0 {
		t.Fatalf("GetProcessHandleCount: %v", err)
	}
	return int(n)
}

// describeGroup says what is known of a job, for failure messages.
func describeGroup(pgid int) string {
	if v, ok := liveJobs.Load(pgid); ok {
		g := v.(*winGroup)
		g.mu.Lock()
		defer g.mu.Unlock()
		ids, err := g.pids()
		return fmt.Sprintf("job of %d: processes %v (%v)", pgid, ids, err)
	}
	return fmt.Sprintf("job of %d released", pgid)
}

// tempDir is t.TempDir, removed file by file: under Wine (8.0), where
// these tests run in CI, os.RemoveAll fails with "Invalid function" while
// os.Remove works.
func tempDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "proc-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var paths []string
		_ = filepath.WalkDir(d, func(p string, _ fs.DirEntry, err error) error {
			if err == nil {
				paths = append(paths, p)
			}
			return nil
		})
		for i := len(paths) - 1; i >= 0; i-- {
			if err := os.Remove(paths[i]); err != nil {
				t.Errorf("cleaning up %s: %v", paths[i], err)
			}
		}
	})
	return d
}

// checkPrivate checks that dir is private (CheckPrivate) and that a file
// created inside inherits the same single entry.
func checkPrivate(t *testing.T, dir string) {
	if err := CheckPrivate(dir); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		t.Fatal(err)
	}
	sd, err := windows.GetNamedSecurityInfo(f, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		t.Fatal(err)
	}
	dacl, _, err := sd.DACL()
	if err != nil || dacl == nil || dacl.AceCount != 1 {
		t.Fatalf("%s: DACL %v, %v; want one inherited entry", f, dacl, err)
	}
	var ace *windows.ACCESS_ALLOWED_ACE
	if err := windows.GetAce(dacl, 0, &ace); err != nil {
		t.Fatal(err)
	}
	if sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart)); !sid.Equals(u.User.Sid) || ace.Header.AceType != windows.ACCESS_ALLOWED_ACE_TYPE {
		t.Errorf("%s: ACE for %v (type %d), want allow for %v", f, sid, ace.Header.AceType, u.User.Sid)
	}
}
