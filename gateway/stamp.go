package gateway

import (
	"crypto/sha256"
	"io"
	"os"
	"time"

	"sluice/gateway/config"
)

// fileStamp identifies one version of a file as a stat sees it: size,
// modification and status-change times, device and inode. The status
// change time cannot be set from user space, so an edit that restores the
// modification time afterwards (touch -r) still changes the stamp; the
// inode tells a file replaced by rename. sum, when hashed, is a hash of
// the content read when the stamp was taken (see restamp).
type fileStamp struct {
	mod, chg time.Time
	size     int64
	dev, ino uint64
	ok       bool
	hashed   bool
	sum      [sha256.Size]byte
}

// fileStamps are the stamps of the user and the project declaration file.
type fileStamps [2]fileStamp

// stampOf stats each path (at most two; "" = none): the stamp of what is
// there now, without reading it.
func stampOf(paths ...string) fileStamps {
	var s fileStamps
	for i, p := range paths {
		if i >= len(s) || p == "" {
			continue
		}
		s[i] = statStamp(p)
	}
	return s
}

func statStamp(path string) fileStamp {
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return stampOfInfo(st)
}

func stampOfInfo(st os.FileInfo) fileStamp {
	s := fileStamp{mod: st.ModTime(), size: st.Size(), ok: true}
	s.chg, s.dev, s.ino = statExtra(st)
	return s
}

// racyWindow is how recent a file's modification or status change may be
// for its stat to be trusted alone. A timestamp comes from a clock that
// ticks coarsely (a few milliseconds; whole seconds on some file systems),
// so a second edit of the same size within one tick of the first leaves
// size, times and inode as they were. A stamp whose times are this
// recent is taken with a hash of the content, and the next look compares
// the content too, until a look finds the file older than this.
const racyWindow = 3 * time.Second

// racy reports whether s's times are too recent (or in the future) for a
// stat alone to tell a later edit (always, where a stat has no
// status-change time). It compares with the real clock, the
// one the file system's timestamps come from.
func (s fileStamp) racy(now time.Time, window time.Duration) bool {
	if !s.ok {
		return false
	}
	if !statHasChange {
		return true
	}
	latest := s.mod
	if s.chg.After(latest) {
		latest = s.chg
	}
	return now.Sub(latest) < window
}

// restamp is stampOf for the declaration files, given the stamps of the
// version last read (prev): a file whose stamp is racy, or whose previous
// stamp was hashed, is read and hashed too, so an edit that kept every
// stat field is seen as a change. A file read while its stamp was racy
// is thus compared by content once more after the window has passed; from
// then on a stat alone decides.
func restamp(prev fileStamps, window time.Duration, paths ...string) fileStamps {
	now := time.Now()
	s := stampOf(paths...)
	for i := range s {
		if s[i].ok && (prev[i].hashed || s[i].racy(now, window)) {
			s[i].sum, s[i].hashed = hashFile(paths[i])
		}
	}
	return s
}

// hashFile hashes the content of path as the declarations loader reads
// it (at most config.MaxFileBytes, plus one byte to tell a longer file).
// An unreadable file hashes as unhashed: its stamp then differs from any
// hashed one.
func hashFile(path string) ([sha256.Size]byte, bool) {
	f, err := os.Open(path)
	if err != nil {
		return [sha256.Size]byte{}, false
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, config.MaxFileBytes+1)); err != nil {
		return [sha256.Size]byte{}, false
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum, true
}

// same reports whether a (a stamp taken now) shows the version b was
// taken of. Stat fields must be equal; when either was hashed, both must
// be, with the same content.
func (a fileStamp) same(b fileStamp) bool {
	if a.ok != b.ok {
		return false
	}
	if !a.ok {
		return true
	}
	if a.size != b.size || !a.mod.Equal(b.mod) || !a.chg.Equal(b.chg) || a.dev != b.dev || a.ino != b.ino {
		return false
	}
	if a.hashed || b.hashed {
		return a.hashed && b.hashed && a.sum == b.sum
	}
	return true
}

func (a fileStamps) same(b fileStamps) bool {
	return a[0].same(b[0]) && a[1].same(b[1])
}

// settled is s without the content hashes of files whose stamps are no
// longer racy: what later looks compare with a stat alone.
func (s fileStamps) settled(window time.Duration) fileStamps {
	now := time.Now()
	for i := range s {
		if s[i].hashed && !s[i].racy(now, window) {
			s[i].hashed, s[i].sum = false, [sha256.Size]byte{}
		}
	}
	return s
}
