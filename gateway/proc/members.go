package proc

// memberCounts reports whether a process (pid, its process group pgrp,
// whether it is a zombie) counts as a live member of pgid when the pids
// in skip (the zombie leader, the watchdog) are left out. The macOS
// member scan uses it; it is platform-neutral so its tests run
// everywhere.
func memberCounts(pgid int, skip []int, pid, pgrp int, zombie bool) bool {
	if pgrp != pgid || zombie || pid <= 0 {
		return false
	}
	for _, s := range skip {
		if s == pid {
			return false
		}
	}
	return true
}
