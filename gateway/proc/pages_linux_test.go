package proc

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestReadOnlyMappings: only the executable's mappings that are readable,
// not writable, private and hold no anonymous page are chosen.
func TestReadOnlyMappings(t *testing.T) {
	smaps := `00400000-00f27000 r-xp 00000000 fe:00 1 /bin/sluice
Rss:                9820 kB
Private_Dirty:      9820 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me dw
00f27000-01b53000 r--p 00b27000 fe:00 1 /bin/sluice
Anonymous:             0 kB
01b53000-01c00000 r--p 01753000 fe:00 1 /bin/sluice
Anonymous:            12 kB
01c00000-02077000 rw-p 01753000 fe:00 1 /bin/sluice
Anonymous:             0 kB
7f0000000000-7f0000100000 r-xp 00000000 fe:00 2 /usr/lib/libc.so.6
Anonymous:             0 kB
7f0000200000-7f0000300000 r--s 00000000 fe:00 1 /bin/sluice
Anonymous:             0 kB
7f0000400000-7f0000500000 r--p 00000000 00:00 0 
Anonymous:             0 kB
`
	got := readOnlyMappings([]byte(smaps), "/bin/sluice")
	want := []mapping{{0x400000, 0xf27000}, {0xf27000, 0x1b53000}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("mappings %x, want %x (text and read-only data; not the relocated, writable, shared or foreign ones)", got, want)
	}
}

// exeRSS is the resident KiB of this process's executable mappings.
func exeRSS(t *testing.T) int {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	total, in := 0, false
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") && len(f[1]) == 4 {
			in = len(f) >= 6 && strings.Join(f[5:], " ") == exe
			continue
		}
		if in && len(f) >= 2 && f[0] == "Rss:" {
			n, _ := strconv.Atoi(f[1])
			total += n
		}
	}
	return total
}

// TestReleaseStartupPages: the running test binary's executable pages are
// released (its resident size drops) and the process goes on working:
// code, read-only data, reflection tables and a collection all fault back
// in from the file.
func TestReleaseStartupPages(t *testing.T) {
	before := exeRSS(t)
	n, err := ReleaseStartupPages()
	if err != nil {
		t.Fatal(err)
	}
	after := exeRSS(t)
	if n == 0 || after >= before {
		t.Fatalf("released %d bytes; executable RSS %d KiB -> %d KiB, want it lower", n, before, after)
	}
	runtime.GC()
	if s := strings.Repeat("x", 3) + strconv.Itoa(42); s != "xxx42" {
		t.Fatalf("after the release: %q", s)
	}
	if _, err := os.Stat(os.Args[0]); err != nil {
		t.Fatal(err)
	}
}
