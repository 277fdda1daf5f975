package proc

import (
	"fmt"
	"io/fs"
	"os"

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
