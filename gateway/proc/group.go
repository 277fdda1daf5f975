package proc

import (
	"bytes"
	"encoding/binary"
	"os"
	"slices"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// GroupAlive reports whether any process (zombies included) has process
// group id pgid, by kill(-pgid, 0). Only meaningful for a group this
// process knows is still its own. A group whose last members were just
// killed can stay "alive" as zombies until their parent (init, for
// orphans) reaps them.
func GroupAlive(pgid int) bool {
	if pgid <= 1 {
		return false
	}
	err := unix.Kill(-pgid, 0)
	return err == nil || err == unix.EPERM
}

// groupHasMembers reports whether a live process (not a reap-pending
// zombie) other than leader has process group id pgid. The leader is excluded because the supervisor keeps it an
// unreaped zombie (which kill(-pgid, 0) would still count) until the rest
// of the group is gone. Without procfs it falls back to GroupAlive, which
// then sees the zombie leader too and makes teardown wait its bounds.
func groupHasMembers(pgid, leader int) bool {
	return groupHasMembersExcept(pgid, leader)
}

// groupHasMembersExcept is groupHasMembers ignoring every pid in skip.
func groupHasMembersExcept(pgid int, skip ...int) bool {
	d, err := os.Open("/proc")
	if err != nil {
		return GroupAlive(pgid)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return GroupAlive(pgid)
	}
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || slices.Contains(skip, pid) {
			continue
		}
		if st, ok := procStat(pid); ok && st.pgrp == pgid && !st.dead() {
			return true
		}
	}
	return false
}

type procStatus struct {
	state   byte
	ppid    int
	pgrp    int
	threads int
}

// dead reports a zombie whose threads are all gone: it runs nothing and
// only waits for its parent (often init, on its own schedule) to reap it.
func (s procStatus) dead() bool {
	return (s.state == 'Z' || s.state == 'X') && s.threads <= 1
}

// procStat reads state, process group and thread count of pid from
// /proc/pid/stat.
func procStat(pid int) (procStatus, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStatus{}, false
	}
	return parseStat(b)
}

// parseStat parses the text of /proc/pid/stat.
func parseStat(b []byte) (procStatus, bool) {
	// "pid (comm) state ppid pgrp session tty_nr tpgid flags minflt
	// cminflt majflt cmajflt utime stime cutime cstime priority nice
	// num_threads ..."; comm may contain anything, so cut after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStatus{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 18 || len(f[0]) != 1 {
		return procStatus{}, false
	}
	pp, err0 := strconv.Atoi(string(f[1]))
	pg, err1 := strconv.Atoi(string(f[2]))
	th, err2 := strconv.Atoi(string(f[17]))
	if err0 != nil || err1 != nil || err2 != nil {
		return procStatus{}, false
	}
	return procStatus{state: f[0][0], ppid: pp, pgrp: pg, threads: th}, true
}

// procPgrp reads the process group of pid.
func procPgrp(pid int) (int, bool) {
	st, ok := procStat(pid)
	return st.pgrp, ok
}

// exitFromSiginfo decodes a SIGCHLD siginfo (from waitid) into nil for a
// clean exit or an *ExitError.
func exitFromSiginfo(server string, info *unix.Siginfo) error {
	// The siginfo union starts 16 bytes in on every 64-bit and 12 on
	// 32-bit Linux; for SIGCHLD it holds pid, uid, status as 32-bit ints.
	raw := (*[128]byte)(unsafe.Pointer(info))
	off := 16
	if unsafe.Sizeof(uintptr(0)) == 4 {
		off = 12
	}
	status := int32(binary.NativeEndian.Uint32(raw[off+8:]))
	switch info.Code {
	case 1: // CLD_EXITED
		if status == 0 {
			return nil
		}
		return &ExitError{Server: server, Code: int(status)}
	case 2, 3: // CLD_KILLED, CLD_DUMPED
		return &ExitError{Server: server, Code: -1, Signal: syscall.Signal(status)}
	}
	return &ExitError{Server: server, Code: -1}
}
