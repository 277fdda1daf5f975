package proc

import (
	"fmt"
	"io/fs"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

func mkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return &SysError{Op: "GetTokenInformation(TokenUser)", Err: err}
	}
	sd, err := windows.GetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return &SysError{Op: fmt.Sprintf("GetNamedSecurityInfo(%s)", dir), Err: err}
	}
	owner, _, err := sd.Owner()
	if err != nil || owner == nil {
		return &SysError{Op: fmt.Sprintf("GetSecurityDescriptorOwner(%s)", dir), Err: err}
	}
	if !ownedByCurrentUser(owner, u.User.Sid) {
		// Not the current user's: left as it is, private or not.
		if checkPrivateDir(dir) == nil {
			return nil
		}
		return &PrivateDirError{Dir: dir, Open: "an access list that is not owner-only",
			Why: fmt.Sprintf("belongs to %v, not to you (%v)", owner, u.User.Sid)}
	}
	return restrictToOwner(dir, windows.SUB_CONTAINERS_AND_OBJECTS_INHERIT)
}

// ownedByCurrentUser reports whether owner is the current user or the
// owner the process gives what it creates (an elevated administrator's
// files belong to the Administrators group).
func ownedByCurrentUser(owner, user *windows.SID) bool {
	if owner.Equals(user) {
		return true
	}
	t := windows.GetCurrentProcessToken()
	var n uint32
	_ = windows.GetTokenInformation(t, windows.TokenOwner, nil, 0, &n)
	if n == 0 {
		return false
	}
	buf := make([]byte, n)
	if err := windows.GetTokenInformation(t, windows.TokenOwner, &buf[0], n, &n); err != nil {
		return false
	}
	def := (*struct{ Owner *windows.SID })(unsafe.Pointer(&buf[0])).Owner
	return def != nil && owner.Equals(def)
}

// privateFix is what makes dir private on Windows.
func privateFix(dir string) string {
	return `icacls "` + dir + `" /inheritance:r /grant:r "%USERNAME%:(OI)(CI)F", then remove every other entry 'icacls "` + dir + `"' lists`
}

// restrictToOwner replaces path's DACL with one protected entry (no
// inherited entries) granting the current user full control, inherited
// as inherit says.
func restrictToOwner(path string, inherit uint32) error {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return &SysError{Op: "GetTokenInformation(TokenUser)", Err: err}
	}
	acl, err := windows.ACLFromEntries([]windows.EXPLICIT_ACCESS{{
		AccessPermissions: windows.GENERIC_ALL,
		AccessMode:        windows.GRANT_ACCESS,
		Inheritance:       inherit,
		Trustee: windows.TRUSTEE{
			TrusteeForm:  windows.TRUSTEE_IS_SID,
			TrusteeType:  windows.TRUSTEE_IS_USER,
			TrusteeValue: windows.TrusteeValueFromSID(u.User.Sid),
		},
	}}, nil)
	if err != nil {
		return &SysError{Op: "SetEntriesInAcl", Err: err}
	}
	if err := windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, acl, nil); err != nil {
		return &SysError{Op: fmt.Sprintf("SetNamedSecurityInfo(%s)", path), Err: err}
	}
	return nil
}

// openToOthers: access is by the access list MkdirPrivate set (see
// OpenToOthers).
func openToOthers(fs.FileInfo) bool { return false }

func checkPrivateDir(dir string) error {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return &SysError{Op: "GetTokenInformation(TokenUser)", Err: err}
	}
	sd, err := windows.GetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return &SysError{Op: fmt.Sprintf("GetNamedSecurityInfo(%s)", dir), Err: err}
	}
	ctl, _, err := sd.Control()
	if err != nil {
		return &SysError{Op: "GetSecurityDescriptorControl", Err: err}
	}
	if ctl&windows.SE_DACL_PROTECTED == 0 {
		return fmt.Errorf("%s: its access list is not protected (it inherits its parent's)", dir)
	}
	dacl, _, err := sd.DACL()
	if err != nil || dacl == nil {
		return fmt.Errorf("%s: no access list (anyone may open it): %v", dir, err)
	}
	if dacl.AceCount != 1 {
		return fmt.Errorf("%s: %d access entries, want one for the current user", dir, dacl.AceCount)
	}
	var ace *windows.ACCESS_ALLOWED_ACE
	if err := windows.GetAce(dacl, 0, &ace); err != nil {
		return &SysError{Op: "GetAce", Err: err}
	}
	sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
	if ace.Header.AceType != windows.ACCESS_ALLOWED_ACE_TYPE || !sid.Equals(u.User.Sid) {
		return fmt.Errorf("%s: its access entry is for %v (type %d), want an allow entry for the current user %v", dir, sid, ace.Header.AceType, u.User.Sid)
	}
	return nil
}
