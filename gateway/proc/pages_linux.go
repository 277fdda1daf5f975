package proc

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ReleaseStartupPages tells the kernel that the pages of this process's
// own executable mapped so far need not stay mapped (madvise
// MADV_DONTNEED over its read-only segments: code, read-only data and the
// function tables). Start-up touches code and tables of nearly every
// linked package once; what runs again afterwards faults back in from the
// page cache, without I/O. It returns the bytes of the ranges advised.
//
// Only read-only mappings of the executable holding no private (copied on
// write) page are advised: dropping such a page would bring back the
// file's bytes, so a segment the dynamic loader relocated (a position-
// independent build's RELRO) is left alone. The writable data segment is
// never touched.
func ReleaseStartupPages() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, &SysError{Op: "readlink /proc/self/exe", Err: err}
	}
	raw, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, &SysError{Op: "read /proc/self/smaps", Err: err}
	}
	var total int64
	for _, m := range readOnlyMappings(raw, exe) {
		// The raw call: the range is this process's own mapping, never
		// read or written through a Go value.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_DONTNEED); errno != 0 {
			return total, &SysError{Op: "madvise(MADV_DONTNEED)", Err: errno}
		}
		total += int64(m.end - m.start)
	}
	return total, nil
}

type mapping struct{ start, end uintptr }

// readOnlyMappings parses /proc/self/smaps: the mappings of path that are
// not writable and hold no anonymous (copied) page.
func readOnlyMappings(smaps []byte, path string) []mapping {
	var out []mapping
	var cur *mapping
	keep := false
	flush := func() {
		if cur != nil && keep {
			out = append(out, *cur)
		}
		cur, keep = nil, false
	}
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") && len(f[1]) == 4 {
			flush()
			lo, hi, ok := strings.Cut(f[0], "-")
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			name := ""
			if len(f) >= 6 {
				name = strings.Join(f[5:], " ")
			}
			if !ok || err1 != nil || err2 != nil || name != path || f[1][0] != 'r' || f[1][1] != '-' || f[1][3] != 'p' {
				continue
			}
			cur, keep = &mapping{start: uintptr(start), end: uintptr(end)}, true
			continue
		}
		// A private page copied on write is anonymous (Private_Dirty is
		// no sign: it also counts file pages not yet written back).
		if cur != nil && len(f) >= 2 && f[0] == "Anonymous:" && f[1] != "0" {
			keep = false
		}
	}
	flush()
	return out
}
