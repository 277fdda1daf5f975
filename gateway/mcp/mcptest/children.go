package mcptest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ChildGroups counts the process groups of this process's live (not
// zombie) direct children. A server launched by sluice is one group (its
// watchdog shares it), so tests assert how many servers run by counting
// groups, never by matching process names.
func ChildGroups() int {
	me := os.Getpid()
	ents, _ := os.ReadDir("/proc")
	groups := map[int]bool{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == me {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		// After the command: state, ppid, pgrp, ...
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == me {
			pgid, _ := strconv.Atoi(f[2])
			groups[pgid] = true
		}
	}
	return len(groups)
}
