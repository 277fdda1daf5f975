package proc

// envNamesFoldCase: Windows compares environment names without regard to
// case ("Path" is PATH).
const envNamesFoldCase = true

// platformSafeNames are the variables Windows programs need to start and
// to find their per-user directories: without SystemRoot many cannot
// even load their libraries, and PATHEXT is how they find other
// programs. Copied from the gateway's environment like safeNames.
var platformSafeNames = []string{
	"SystemRoot", "SystemDrive", "windir", "PATHEXT", "ComSpec",
	"USERPROFILE", "USERNAME", "USERDOMAIN", "HOMEDRIVE", "HOMEPATH",
	"APPDATA", "LOCALAPPDATA", "ProgramData", "ProgramFiles", "ProgramW6432",
	"CommonProgramFiles", "CommonProgramW6432", "PUBLIC", "TEMP", "TMP",
	"OS", "PROCESSOR_ARCHITECTURE", "NUMBER_OF_PROCESSORS", "COMPUTERNAME",
}
