package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"

	"sluice/gateway/internal/files"
	"sluice/gateway/proc"
)

// Format is the on-disk format version; a file with another version is a miss.
const Format = 1

// Defaults and caps.
const (
	DefaultTTL   = 24 * time.Hour
	MaxFileBytes = 16 << 20 // a file larger than this is a miss
	MaxTools     = 500      // tools beyond this are not written
	// futureSlack tolerates small clock differences between writer and reader.
	futureSlack = 5 * time.Minute
)

// Identity binds a catalog to the declaration that produced it.
type Identity struct {
	ProjectRoot     string `json:"projectRoot"`
	Scope           string `json:"scope"`
	DeclarationPath string `json:"declarationPath"`
	ServerID        string `json:"serverId"`
	Digest          string `json:"digest"`
	Cwd             string `json:"cwd"`
}

// Server describes the server as it introduced itself.
type Server struct {
	Name            string `json:"name,omitempty"`
	Version         string `json:"version,omitempty"`
	Title           string `json:"title,omitempty"`
	Era             string `json:"era,omitempty"` // modern | legacy
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	Instructions    string `json:"instructions,omitempty"`
}

// Catalog is one server's recorded tool listing. Tools are kept as the raw
// JSON objects the server sent, so schemas and numbers survive untouched.
type Catalog struct {
	Format     int               `json:"format"`
	Identity   Identity          `json:"identity"`
	Server     Server            `json:"server"`
	Tools      []json.RawMessage `json:"tools"`
	Truncated  bool              `json:"truncated,omitempty"`
	RecordedAt time.Time         `json:"recordedAt"`
}

// Options tunes Load and Store. The zero value means the documented defaults.
type Options struct {
	TTL time.Duration    // default DefaultTTL
	Now func() time.Time // default time.Now
}

func (o *Options) ttl() time.Duration {
	if o == nil || o.TTL <= 0 {
		return DefaultTTL
	}
	return o.TTL
}

func (o *Options) now() time.Time {
	if o == nil || o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

// FileName is the catalog file name for an identity: a SHA-256 of project
// root, scope, declaration path and server id.
func FileName(id Identity) string {
	h := sha256.New()
	for _, f := range []string{id.ProjectRoot, id.Scope, id.DeclarationPath, id.ServerID} {
		var n [8]byte
		l := uint64(len(f))
		for i := range n {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil)) + ".json"
}

// Path is where the catalog for id lives inside dir.
func Path(dir string, id Identity) string {
	return filepath.Join(dir, "catalogs", FileName(id))
}

// IndexPath is where the search index for id lives inside dir.
func IndexPath(dir string, id Identity) string {
	p := Path(dir, id)
	return p[:len(p)-len(".json")] + ".index"
}

// legacyIndexPath is where earlier versions kept a JSON search index.
func legacyIndexPath(dir string, id Identity) string {
	p := Path(dir, id)
	return p[:len(p)-len(".json")] + ".index.json"
}

// validToolName is ^[A-Za-z0-9_.\-/]{1,128}$, checked without a regexp
// (find checks every indexed name).
func validToolName(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-' || c == '/') {
			return false
		}
	}
	return true
}

// toolHead is what Load insists on for every tool.
type toolHead struct {
	Name        *string         `json:"name"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// ValidTool reports whether a raw tool object would survive Load: a JSON
// object in UTF-8 with a valid name and an object inputSchema. json.Valid
// alone lets other bytes through inside strings, and the raw tool reaches
// agents verbatim (describe, flat tools/list).
func ValidTool(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' || !utf8.Valid(raw) || !json.Valid(raw) {
		return false
	}
	var h toolHead
	if err := json.Unmarshal(raw, &h); err != nil || h.Name == nil || !validToolName(*h.Name) {
		return false
	}
	s := bytes.TrimSpace(h.InputSchema)
	return len(s) > 0 && s[0] == '{'
}

// Load returns the catalog recorded for id, or an error wrapping ErrMiss.
func Load(dir string, id Identity, opts *Options) (*Catalog, error) {
	c, _, err := load(dir, id, opts)
	return c, err
}

// load is Load that also returns the catalog file's FileInfo, taken from
// the descriptor it was read through.
func load(dir string, id Identity, opts *Options) (*Catalog, os.FileInfo, error) {
	path := Path(dir, id)
	miss := func(reason string) (*Catalog, os.FileInfo, error) {
		return nil, nil, &MissError{Path: path, Reason: reason}
	}
	data, fi, reason := readCapped(path)
	if reason != "" {
		return miss(reason)
	}
	var c Catalog
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || dec.More() {
		return miss("malformed")
	}
	if c.Format != Format {
		return miss("version")
	}
	if c.Identity != id {
		return miss("identity")
	}
	now := opts.now()
	if c.RecordedAt.IsZero() || c.RecordedAt.After(now.Add(futureSlack)) {
		return miss("future")
	}
	if now.Sub(c.RecordedAt) > opts.ttl() {
		return miss("expired")
	}
	if len(c.Tools) > MaxTools {
		return miss("malformed")
	}
	for _, t := range c.Tools {
		if !ValidTool(t) {
			return miss("malformed")
		}
	}
	return &c, fi, nil
}

// Store records c atomically (temp file, fsync, rename; 0600 in a 0700
// directory). Tools that Load would reject are dropped first. It reports
// whether the catalog was written; a failure never matters to the caller's
// live listing.
func Store(dir string, c *Catalog, opts *Options) bool {
	if c == nil {
		return false
	}
	out := *c
	out.Format = Format
	if out.RecordedAt.IsZero() {
		out.RecordedAt = opts.now()
	}
	out.RecordedAt = out.RecordedAt.UTC()
	out.Tools = make([]json.RawMessage, 0, len(c.Tools))
	for _, t := range c.Tools {
		if len(out.Tools) == MaxTools {
			out.Truncated = true
			break
		}
		if ValidTool(t) {
			out.Tools = append(out.Tools, compact(t))
		}
	}
	data, err := json.Marshal(&out)
	if err != nil || len(data) > MaxFileBytes {
		return false
	}
	fi, ok := writeAtomic(Path(dir, out.Identity), data)
	if !ok {
		return false
	}
	_ = os.Remove(legacyIndexPath(dir, out.Identity)) // the JSON index of earlier versions
	data = encodeIndex(buildIndex(&out), linkOf(fi))
	if data == nil {
		return false
	}
	_, ok = writeAtomic(IndexPath(dir, out.Identity), data)
	return ok
}

// writeAtomic replaces path with data (files.WriteAtomicInfo): 0600 in a
// private directory (proc.MkdirPrivate: 0700, on Windows an owner-only
// access list instead of whatever %LOCALAPPDATA% grants). fi is the
// written file's.
func writeAtomic(path string, data []byte) (os.FileInfo, bool) {
	if err := proc.MkdirPrivate(filepath.Dir(path)); err != nil {
		return nil, false
	}
	fi, err := files.WriteAtomicInfo(path, data, 0o600)
	return fi, err == nil
}

// Remove deletes the catalog (and its index) recorded for id, if any.
func Remove(dir string, id Identity) error {
	for _, p := range []string{IndexPath(dir, id), legacyIndexPath(dir, id)} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	err := os.Remove(Path(dir, id))
	if os.IsNotExist(err) {
		return nil
	}
	return err
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// readCapped reads a whole regular file of at most MaxFileBytes and
// returns it with the descriptor's FileInfo; reason is the miss reason
// when it cannot.
func readCapped(path string) ([]byte, os.FileInfo, string) {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil, "absent"
		}
		return nil, nil, "unreadable"
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, nil, "unreadable"
	}
	if st.Size() > MaxFileBytes {
		return nil, nil, "oversized"
	}
	data := make([]byte, st.Size()+1)
	n := 0
	for n < len(data) {
		m, err := f.Read(data[n:])
		n += m
		if err != nil || m == 0 {
			break
		}
	}
	if n > MaxFileBytes || int64(n) > st.Size() {
		return nil, nil, "oversized"
	}
	return data[:n], st, ""
}
