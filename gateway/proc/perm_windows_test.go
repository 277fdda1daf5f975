package proc

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/windows"
)

// TestWindowsPrivateDirOwner: MkdirPrivate tightens a directory the
// current user owns and tells another's (here LocalSystem) apart, and the
// refusal says what to run. (Wine reports every file as the current
// user's, so a foreign directory cannot be made there; the owner test is
// what decides and is checked directly.)
func TestWindowsPrivateDirOwner(t *testing.T) {
	dir := filepath.Join(tempDir(t), "mine")
	if err := MkdirPrivate(dir); err != nil {
		t.Fatal(err)
	}
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		t.Fatal(err)
	}
	sd, err := windows.GetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		t.Fatal(err)
	}
	owner, _, err := sd.Owner()
	if err != nil {
		t.Fatal(err)
	}
	if !ownedByCurrentUser(owner, u.User.Sid) {
		t.Fatalf("a directory MkdirPrivate made belongs to %v, which is not taken for the current user %v", owner, u.User.Sid)
	}
	system, err := windows.CreateWellKnownSid(windows.WinLocalSystemSid)
	if err != nil {
		t.Fatal(err)
	}
	if ownedByCurrentUser(system, u.User.Sid) {
		t.Fatalf("LocalSystem (%v) is taken for the current user %v", system, u.User.Sid)
	}
	e := &PrivateDirError{Dir: `C:\shared\sluice`, Open: "an access list that is not owner-only", Why: "belongs to " + system.String() + ", not to you"}
	if msg := e.Error(); !errors.Is(e, ErrNotPrivate) || !strings.Contains(msg, `icacls "C:\shared\sluice" /inheritance:r`) || !strings.Contains(msg, system.String()) {
		t.Fatalf("error %q", msg)
	}
}
