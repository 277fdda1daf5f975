package gateway

import (
	"os"
	"syscall"
	"time"
)

// statHasChange: a stat here has the status-change time and inode.
const statHasChange = true

// statExtra is a stat's status-change time, device and inode.
func statExtra(fi os.FileInfo) (time.Time, uint64, uint64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, 0, 0
	}
	return time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec)), uint64(st.Dev), uint64(st.Ino)
}
