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
	return restrictToOwner(dir, windows.SUB_CONTAINERS_AND_OBJECTS_INHERIT)
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
