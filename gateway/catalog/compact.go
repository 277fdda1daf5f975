package catalog

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"time"
	"unsafe"
)

// The compact files: a search index beside each catalog and a set file
// beside each baseline, both derived data that find reads instead of
// decoding JSON (see "Why find reads compact files" in the package doc).
//
// Layout: a 4-byte magic, a version byte, the CRC-32 (IEEE) of the body
// (4 bytes, little-endian), then the body: a sequence of uvarint/varint
// numbers and strings (a uvarint length, then the bytes). The body starts
// with the source link: the size and modification time (Unix nanoseconds)
// of the file the compact one was derived from, as it was written.

// Version 2 checksums with CRC-32 IEEE instead of CRC-32C: hash/crc32
// builds its CRC-32C tables, a quarter of a millisecond, before the first
// checksum of every process, and its IEEE ones in microseconds, at the
// same speed per byte on CPUs with carry-less multiplication. A version 1
// file is rebuilt like any other version.
const (
	compactVersion = 2
	compactHeader  = 4 + 1 + 4
)

var (
	indexMagic = [4]byte{'S', 'L', 'I', 'X'} // search index
	setMagic   = [4]byte{'S', 'L', 'B', 'S'} // baseline set
)

// link identifies the file a compact file was derived from.
type link struct {
	size  int64
	mtime int64 // Unix nanoseconds
}

func linkOf(fi os.FileInfo) link {
	return link{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}

// current reports whether path is still the file l was taken from.
func (l link) current(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && linkOf(fi) == l
}

// encoder builds a compact file's body.
type encoder struct{ b []byte }

func (e *encoder) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) int(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) str(s string) {
	e.uint(uint64(len(s)))
	e.b = append(e.b, s...)
}

// file returns the whole file: header and body.
func (e *encoder) file(magic [4]byte) []byte {
	out := make([]byte, compactHeader, compactHeader+len(e.b))
	copy(out, magic[:])
	out[4] = compactVersion
	binary.LittleEndian.PutUint32(out[5:], crc32.ChecksumIEEE(e.b))
	return append(out, e.b...)
}

// decoder reads a compact file's body. Strings are substrings of the
// body, so decoding allocates nothing per string.
// The first malformed read sets bad; every later read returns zero.
type decoder struct {
	s   string
	bad bool
}

// openCompact checks data's header and checksum and returns a decoder of
// its body; reason is the miss reason when it cannot. data must not be
// modified afterwards (the decoded strings share its memory).
func openCompact(data []byte, magic [4]byte) (*decoder, string) {
	if len(data) < compactHeader || [4]byte(data[:4]) != magic {
		return nil, "malformed"
	}
	if data[4] != compactVersion {
		return nil, "version"
	}
	body := data[compactHeader:]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(data[5:]) {
		return nil, "malformed"
	}
	// The decoder's strings alias data, which the caller reads fresh for
	// this decode and never writes again: no copy of a file of kilobytes
	// per server.
	return &decoder{s: unsafe.String(unsafe.SliceData(body), len(body))}, ""
}

func (d *decoder) uint() uint64 {
	if d.bad {
		return 0
	}
	if len(d.s) > 0 && d.s[0] < 0x80 { // one byte: most lengths and flags
		v := uint64(d.s[0])
		d.s = d.s[1:]
		return v
	}
	v, n := uvarint(d.s)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.s = d.s[n:]
	return v
}

func (d *decoder) int() int64 {
	u := d.uint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (d *decoder) str() string {
	n := d.uint()
	if d.bad || n > uint64(len(d.s)) {
		d.bad = true
		return ""
	}
	s := d.s[:n]
	d.s = d.s[n:]
	return s
}

func (d *decoder) bool() bool {
	switch d.uint() {
	case 0:
		return false
	case 1:
		return true
	}
	d.bad = true
	return false
}

func (d *decoder) link() link { return link{size: d.int(), mtime: d.int()} }

func (d *decoder) time() time.Time {
	ns := d.int()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// done reports whether the body was read whole and well formed.
func (d *decoder) done() bool { return !d.bad && d.s == "" }

// uvarint is binary.Uvarint over a string that also refuses a number
// written with more bytes than it needs: every value has one encoding, so
// a file that decodes is byte for byte the one encodeIndex would write.
func uvarint(s string) (uint64, int) {
	var x uint64
	var shift uint
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		b := s[i]
		if b < 0x80 {
			if i == binary.MaxVarintLen64-1 && b > 1 || i > 0 && b == 0 {
				return 0, -1 // overflow, or not minimal
			}
			return x | uint64(b)<<shift, i + 1
		}
		x |= uint64(b&0x7f) << shift
		shift += 7
	}
	return 0, 0
}

func (e *encoder) time(t time.Time) {
	if t.IsZero() {
		e.int(0)
		return
	}
	e.int(t.UnixNano())
}

func (e *encoder) bool(b bool) {
	if b {
		e.uint(1)
		return
	}
	e.uint(0)
}

func (e *encoder) link(l link) {
	e.int(l.size)
	e.int(l.mtime)
}
