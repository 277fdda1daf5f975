//go:build !windows

package proc

// envNamesFoldCase: environment names are case-sensitive here.
const envNamesFoldCase = false

// platformSafeNames adds nothing on Linux and macOS.
var platformSafeNames []string
