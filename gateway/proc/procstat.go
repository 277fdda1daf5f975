package proc

import (
	"bytes"
	"strconv"
)

// The parser for Linux's /proc/PID/stat is platform-neutral code, so its
// tests and fuzz target run everywhere.

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
