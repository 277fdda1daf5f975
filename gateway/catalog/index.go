package catalog

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"
)

// Entry is what search needs of one tool: no schemas.
type Entry struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	ReadOnly    bool   `json:"readOnly,omitempty"`
	// Hash and Body are the tool's Sum, for comparing with its baseline
	// without reading every schema (empty in the entries of an index read
	// from its file: Index.Sums has them).
	Hash string `json:"hash,omitempty"`
	Body string `json:"body,omitempty"`

	// Name, Title and Description in lower case, for Score; set by EntryOf
	// and by the index (lowered: they are set).
	lname, ltitle, ldesc string
	lowered              bool
}

// lower fills e's lower-case fields.
func (e *Entry) lower() {
	e.lname, e.ltitle, e.ldesc = strings.ToLower(e.Name), strings.ToLower(e.Title), strings.ToLower(e.Description)
	e.lowered = true
}

// lowerOf reports whether low is strings.ToLower(s) and, by differs,
// whether the two differ; ASCII text is checked without allocating.
func lowerOf(low, s string, differs bool) bool {
	if differs == (low == s) {
		return false
	}
	if !differs {
		// low is s: s must have no upper case. Most text is ASCII
		// without any, checked eight bytes at a time.
		switch asciiCase(s) {
		case asciiLower:
			return true
		case asciiUpper:
			return false
		}
		return strings.ToLower(s) == low
	}
	if len(low) != len(s) {
		return strings.ToLower(s) == low
	}
	// Eight bytes at a time while ASCII: an upper-case letter's high bit
	// (see asciiCase) shifted to 0x20 lowers it.
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := word(s, i)
		if x&asciiHigh != 0 {
			return strings.ToLower(s) == low
		}
		if x|upperBits(x)>>2 != word(low, i) {
			return false
		}
	}
	for ; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return strings.ToLower(s) == low
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if low[i] != c {
			return false
		}
	}
	return true
}

const asciiOnes, asciiHigh = 0x0101010101010101, 0x8080808080808080

// word is the eight bytes of s at i, little-endian (one load).
func word(s string, i int) uint64 {
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// upperBits has the high bit of each byte of x, all of which are ASCII,
// that is an upper-case letter: adding 0x3f sets the high bit of the
// bytes >= 'A', adding 0x25 that of those > 'Z', and no byte below 0x80
// carries into the next.
func upperBits(x uint64) uint64 {
	return (x + 0x3f*asciiOnes) &^ (x + 0x25*asciiOnes) & asciiHigh
}

// What asciiCase found. A string with both an upper-case ASCII letter
// and a non-ASCII byte is either of the last two.
const (
	asciiLower = iota // ASCII, no upper-case letter
	asciiUpper        // an upper-case ASCII letter
	notASCII          // a byte that is not ASCII
)

// asciiCase classifies s, a word of eight bytes at a time.
func asciiCase(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := word(s, i)
		if x&asciiHigh != 0 {
			return notASCII
		}
		if upperBits(x) != 0 {
			return asciiUpper
		}
	}
	for ; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return notASCII
		}
		if 'A' <= c && c <= 'Z' {
			return asciiUpper
		}
	}
	return asciiLower
}

// Entry flags in the compact index: the fields whose lower-case form
// differs from them, which the index then records too.
const (
	entryReadOnly = 1 << iota
	entryLowerName
	entryLowerTitle
	entryLowerDesc
)

// Index is the search side of a catalog, stored beside it in a compact
// file (see compact.go) so find reads a few kilobytes per server instead of
// every schema, and decodes them without a JSON parser.
type Index struct {
	Format     int
	Identity   Identity
	Server     Server
	Entries    []Entry
	Truncated  bool
	RecordedAt time.Time
	// Set is SetHash of the entries' sums: find compares it with the
	// baseline's set and reads per-tool hashes only when they differ.
	Set string
	// sums holds, for an index read from its file, every entry's hash and
	// body hash (32 bytes each, in entry order); such entries leave Hash
	// and Body empty until Sums is asked for.
	sums string
}

// Sums returns every entry's Sum, in entry order.
func (ix *Index) Sums() []Sum {
	out := make([]Sum, len(ix.Entries))
	for i, e := range ix.Entries {
		out[i] = Sum{Name: e.Name, Hash: e.Hash, Body: e.Body}
		if len(ix.sums) == len(ix.Entries)*64 {
			raw := ix.sums[i*64 : i*64+64]
			out[i].Hash, out[i].Body = hex.EncodeToString([]byte(raw[:32])), hex.EncodeToString([]byte(raw[32:]))
		}
	}
	return out
}

// MaxIndexDescription bounds each indexed description.
const MaxIndexDescription = 1024

func buildIndex(c *Catalog) *Index {
	ix := &Index{Format: Format, Identity: c.Identity, Server: c.Server, Truncated: c.Truncated, RecordedAt: c.RecordedAt, Entries: make([]Entry, 0, len(c.Tools))}
	sums := make([]Sum, 0, len(c.Tools))
	for _, raw := range c.Tools {
		e := EntryOf(raw)
		ix.Entries = append(ix.Entries, e)
		sums = append(sums, Sum{Name: e.Name, Hash: e.Hash, Body: e.Body})
	}
	ix.Set = SetHash(sums)
	return ix
}

// encodeIndex is ix as a compact file linked to the catalog file src; nil
// when an entry's hashes are not SHA-256 hex (never for SumOf's).
func encodeIndex(ix *Index, src link) []byte {
	sums := ix.Sums()
	raw := make([]byte, 0, len(sums)*64)
	for _, sm := range sums {
		h, err1 := hex.DecodeString(sm.Hash)
		b, err2 := hex.DecodeString(sm.Body)
		if err1 != nil || err2 != nil || len(h) != 32 || len(b) != 32 {
			return nil
		}
		raw = append(append(raw, h...), b...)
	}
	var e encoder
	e.b = make([]byte, 0, 256+len(ix.Entries)*160)
	e.link(src)
	e.uint(uint64(ix.Format))
	encodeIdentity(&e, ix.Identity)
	for _, f := range []string{ix.Server.Name, ix.Server.Version, ix.Server.Title, ix.Server.Era, ix.Server.ProtocolVersion, ix.Server.Instructions} {
		e.str(f)
	}
	e.bool(ix.Truncated)
	e.time(ix.RecordedAt)
	e.str(ix.Set)
	e.uint(uint64(len(ix.Entries)))
	for _, en := range ix.Entries {
		if !en.lowered {
			en.lower()
		}
		var flags uint64
		if en.ReadOnly {
			flags |= entryReadOnly
		}
		if en.lname != en.Name {
			flags |= entryLowerName
		}
		if en.ltitle != en.Title {
			flags |= entryLowerTitle
		}
		if en.ldesc != en.Description {
			flags |= entryLowerDesc
		}
		e.str(en.Name)
		e.str(en.Title)
		e.str(en.Description)
		e.uint(flags)
		for _, f := range []struct {
			bit  uint64
			text string
		}{{entryLowerName, en.lname}, {entryLowerTitle, en.ltitle}, {entryLowerDesc, en.ldesc}} {
			if flags&f.bit != 0 {
				e.str(f.text)
			}
		}
	}
	e.str(string(raw))
	return e.file(indexMagic)
}

func encodeIdentity(e *encoder, id Identity) {
	for _, f := range []string{id.ProjectRoot, id.Scope, id.DeclarationPath, id.ServerID, id.Digest, id.Cwd} {
		e.str(f)
	}
}

func decodeIdentity(d *decoder) Identity {
	return Identity{ProjectRoot: d.str(), Scope: d.str(), DeclarationPath: d.str(), ServerID: d.str(), Digest: d.str(), Cwd: d.str()}
}

// decodeIndex reads a compact index; reason is the miss reason when it
// cannot (its link is checked by the caller). Its entries are decoded
// into entries when they fit there.
func decodeIndex(data []byte, entries []Entry) (*Index, link, string) {
	d, reason := openCompact(data, indexMagic)
	if reason != "" {
		return nil, link{}, reason
	}
	src := d.link()
	ix := &Index{Format: int(d.uint())}
	ix.Identity = decodeIdentity(d)
	ix.Server = Server{Name: d.str(), Version: d.str(), Title: d.str(), Era: d.str(), ProtocolVersion: d.str(), Instructions: d.str()}
	ix.Truncated = d.bool()
	ix.RecordedAt = d.time()
	ix.Set = d.str()
	n := d.uint()
	if d.bad || n > MaxTools {
		return nil, link{}, "malformed"
	}
	if uint64(cap(entries)) >= n {
		ix.Entries = entries[:n]
	} else {
		ix.Entries = make([]Entry, n)
	}
	for i := range ix.Entries {
		en := &ix.Entries[i]
		*en = Entry{Name: d.str(), Title: d.str(), Description: d.str()}
		flags := d.uint()
		if flags >= entryLowerDesc<<1 {
			d.bad = true
		}
		en.ReadOnly = flags&entryReadOnly != 0
		en.lname, en.ltitle, en.ldesc, en.lowered = en.Name, en.Title, en.Description, true
		if flags&entryLowerName != 0 {
			en.lname = d.str()
		}
		if flags&entryLowerTitle != 0 {
			en.ltitle = d.str()
		}
		if flags&entryLowerDesc != 0 {
			en.ldesc = d.str()
		}
		// Only the lower-case forms encodeIndex would write: what Score
		// reads here is what it would compute.
		if !lowerOf(en.lname, en.Name, flags&entryLowerName != 0) || !lowerOf(en.ltitle, en.Title, flags&entryLowerTitle != 0) || !lowerOf(en.ldesc, en.Description, flags&entryLowerDesc != 0) {
			d.bad = true
		}
	}
	ix.sums = d.str()
	if len(ix.sums) != len(ix.Entries)*64 || !d.done() {
		return nil, link{}, "malformed"
	}
	return ix, src, ""
}

// EntryOf extracts the search entry of a raw tool object.
func EntryOf(raw json.RawMessage) Entry {
	var t struct {
		Name        string `json:"name"`
		Title       string `json:"title"`
		Description string `json:"description"`
		Annotations struct {
			Title        string `json:"title"`
			ReadOnlyHint *bool  `json:"readOnlyHint"`
		} `json:"annotations"`
	}
	_ = json.Unmarshal(raw, &t)
	sum := SumOf(raw)
	e := Entry{Name: t.Name, Title: t.Title, Description: t.Description, Hash: sum.Hash, Body: sum.Body}
	if e.Title == "" {
		e.Title = t.Annotations.Title
	}
	if t.Annotations.ReadOnlyHint != nil {
		e.ReadOnly = *t.Annotations.ReadOnlyHint
	}
	if len(e.Description) > MaxIndexDescription {
		cut := MaxIndexDescription
		for cut > 0 && e.Description[cut]&0xC0 == 0x80 {
			cut--
		}
		e.Description = strings.TrimSpace(e.Description[:cut])
	}
	e.lower()
	return e
}

// LoadIndex returns the search index recorded for id, with the same miss
// rules as Load. An index that is absent, unreadable, corrupt, of another
// version or no longer derived from the catalog file beside it (stale) is
// never used: it is rebuilt from the catalog, when that one loads, and
// rewritten. With no usable catalog it is a miss.
func LoadIndex(dir string, id Identity, opts *Options) (*Index, error) {
	return LoadIndexInto(dir, id, opts, nil)
}

// IndexBuffer is memory LoadIndexInto reuses from one index to the next,
// so that reading the indexes of many servers in a row touches the memory
// of one (find reads them all, and fresh memory is paid for page by page).
// The strings and entries of an index read into it are only valid until
// its next use. The zero value is ready.
type IndexBuffer struct {
	data    []byte
	entries []Entry
}

// LoadIndexInto is LoadIndex reading into buf (nil: fresh memory).
func LoadIndexInto(dir string, id Identity, opts *Options, buf *IndexBuffer) (*Index, error) {
	path := IndexPath(dir, id)
	ix, reason := readIndex(path, Path(dir, id), buf)
	if reason == "" {
		reason = checkIndex(ix, id, opts)
		if reason == "" {
			return ix, nil
		}
		if reason == "future" || reason == "expired" || reason == "identity" {
			// The catalog it was derived from says the same.
			return nil, &MissError{Path: path, Reason: reason}
		}
	}
	c, fi, err := load(dir, id, opts)
	if err != nil {
		return nil, err
	}
	ix = buildIndex(c)
	// Linked to the catalog file as it was read (the same descriptor's
	// stat). Best effort: a cache that cannot be written still answers.
	if data := encodeIndex(ix, linkOf(fi)); data != nil {
		_, _ = writeAtomic(path, data)
	}
	return ix, nil
}

// readIndex reads and decodes the compact index at path, into buf when
// it is not nil, and checks that it is still derived from the catalog file
// at src.
func readIndex(path, src string, buf *IndexBuffer) (*Index, string) {
	var into []byte
	var entries []Entry
	if buf != nil {
		into, entries = buf.data, buf.entries
	}
	data, reason := readSmall(path, into)
	if reason != "" {
		return nil, reason
	}
	ix, l, reason := decodeIndex(data, entries)
	if buf != nil {
		// Kept whatever the answer: the next index reuses the larger.
		if cap(data) > cap(buf.data) {
			buf.data = data[:0]
		}
		if ix != nil && cap(ix.Entries) > cap(buf.entries) {
			buf.entries = ix.Entries[:0]
		}
	}
	if reason != "" {
		return nil, reason
	}
	if !l.current(src) {
		return nil, "stale"
	}
	return ix, ""
}

// checkIndex applies Load's rules to a decoded index.
func checkIndex(ix *Index, id Identity, opts *Options) string {
	if ix.Format != Format {
		return "version"
	}
	if ix.Identity != id {
		return "identity"
	}
	now := opts.now()
	if ix.RecordedAt.IsZero() || ix.RecordedAt.After(now.Add(futureSlack)) {
		return "future"
	}
	if now.Sub(ix.RecordedAt) > opts.ttl() {
		return "expired"
	}
	for _, e := range ix.Entries {
		if !validToolName(e.Name) {
			return "malformed"
		}
	}
	return ""
}
