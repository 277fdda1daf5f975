package proc

import (
	"strconv"

	"golang.org/x/sys/unix"
)

func dumpableState() string {
	v, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		return "error " + err.Error()
	}
	return "dumpable=" + strconv.Itoa(v)
}
