package trust

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"sluice/gateway/internal/files"
)

// File name and caps.
const (
	FileName      = "trust.json"
	LockSuffix    = ".lock"
	MaxFileBytes  = 1 << 20 // bytes read from trust.json at most
	MaxRecords    = 256
	FormatVersion = 1

	maxRootBytes = 4096
	maxFields    = 32
)

// Action classes a record may carry.
const (
	ActionRead    = "read"
	ActionExecute = "execute"
	ActionUnknown = "unknown"
)

// Record binds a project root, a server id and the digest of the server's
// declaration. ActionClass is a policy annotation and not part of the
// binding: changing it never makes a record stale.
type Record struct {
	ProjectRoot string            `json:"projectRoot"` // canonical (symlink-free, absolute)
	ID          string            `json:"id"`
	Digest      string            `json:"digest"`           // 64 lowercase hex
	Fields      map[string]string `json:"fields,omitempty"` // per-field digests, to name what changed
	// Program is the absolute path the declared command resolved to when
	// it was trusted; a different program behind the same name makes the
	// record stale. Records written before programs were bound have none
	// and are stale.
	Program     string    `json:"program,omitempty"`
	ActionClass string    `json:"actionClass"`
	TrustedAt   time.Time `json:"trustedAt"`
}

type fileBody struct {
	Version int      `json:"version"`
	Records []Record `json:"records"`
}

// State is what Read found. A missing file is an empty state without
// diagnostics; an unusable one is an empty state with one. Warnings name
// records the file holds that are set aside (see Ignored) while every
// other record is in force.
type State struct {
	Path        string
	Records     []Record
	Diagnostics []Diagnostic
	Warnings    []Diagnostic
}

// Ignored is a record the file holds whose only fault is a server id that
// ends in "_", which earlier versions accepted. Such an id can no longer
// be declared (a capability is split at its first "__", so "fx_" and
// tool "echo" would read as server "fx" and tool "_echo"), so the record
// can never apply; it is set aside instead of making the whole file
// unusable, kept on every rewrite (a write never drops what the operator
// recorded), and removed by Remove like any record.
type Ignored struct {
	Index  int // position in the file
	Record Record
}

// ignoredWarning is the diagnostic Read gives for an ignored record.
func ignoredWarning(path string, ig Ignored) Diagnostic {
	return Diagnostic{
		File: path,
		Message: fmt.Sprintf("record %d: server id %q ends in _, which a server id may no longer do (\"__\" separates server and tool in capability names); the record is ignored, the other records are in force",
			ig.Index, ig.Record.ID),
		Fix: "remove it with `" + untrustCommand(ig.Record.ID, ig.Record.ProjectRoot) + "` and trust the server again under an id that does not end in _",
	}
}

// Find returns the record for (root, id).
func (s *State) Find(root, id string) (Record, bool) {
	if s == nil {
		return Record{}, false
	}
	root = filepath.Clean(root)
	for _, r := range s.Records {
		if r.ProjectRoot == root && r.ID == id {
			return r, true
		}
	}
	return Record{}, false
}

// FilePath returns <configDir>/trust.json.
func FilePath(configDir string) string { return filepath.Join(configDir, FileName) }

// CanonicalRoot returns the absolute, symlink-free form of a project root.
func CanonicalRoot(dir string) (string, error) { return files.Canonical(dir) }

var (
	idRe     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`) })
	digestRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}$`) })
	fieldRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,31}$`) })
)

// validate checks a record's grammar; index -1 means "not from the file".
func validate(r *Record, index int) error {
	bad := func(field, msg string) error { return &RecordError{Index: index, Field: field, Msg: msg} }
	switch {
	case r.ProjectRoot == "" || !filepath.IsAbs(r.ProjectRoot):
		return bad("projectRoot", "must be an absolute path")
	case len(r.ProjectRoot) > maxRootBytes:
		return bad("projectRoot", fmt.Sprintf("longer than %d bytes", maxRootBytes))
	case strings.IndexByte(r.ProjectRoot, 0) >= 0:
		return bad("projectRoot", "contains a NUL byte")
	case filepath.Clean(r.ProjectRoot) != r.ProjectRoot:
		return bad("projectRoot", "is not a clean path")
	case !idRe().MatchString(r.ID) || strings.Contains(r.ID, "__"):
		return bad("id", "is not a valid server id")
	case strings.HasSuffix(r.ID, "_"):
		return bad("id", fmt.Sprintf("%q ends in _: a server id may not end in _, since \"__\" separates server and tool in capability names (%q would read as server %q)",
			r.ID, r.ID+"_tool", strings.TrimRight(r.ID, "_")))
	case !digestRe().MatchString(r.Digest):
		return bad("digest", "must be 64 lowercase hex digits")
	case len(r.Fields) > maxFields:
		return bad("fields", fmt.Sprintf("more than %d entries", maxFields))
	case r.Program != "" && (!filepath.IsAbs(r.Program) || filepath.Clean(r.Program) != r.Program):
		return bad("program", "must be a clean absolute path")
	case len(r.Program) > maxRootBytes:
		return bad("program", fmt.Sprintf("longer than %d bytes", maxRootBytes))
	case strings.IndexByte(r.Program, 0) >= 0:
		return bad("program", "contains a NUL byte")
	}
	for k, v := range r.Fields {
		if !fieldRe().MatchString(k) || !digestRe().MatchString(v) {
			return bad("fields", "entries must map a field name to 64 lowercase hex digits")
		}
	}
	switch r.ActionClass {
	case "", ActionRead, ActionExecute, ActionUnknown:
	default:
		return bad("actionClass", "must be read, execute, unknown or empty (no class: the tools' annotations decide)")
	}
	return nil
}

// Decode parses trust file bytes strictly: the version must match, unknown
// fields, trailing data, invalid or duplicate records and more than
// MaxRecords records are errors wrapping ErrCorrupt. A record whose only
// fault is an id ending in "_" is not an error: it is returned among the
// ignored records (see Ignored), not among the usable ones.
func Decode(data []byte) (recs []Record, ignored []Ignored, err error) {
	if len(data) > MaxFileBytes {
		return nil, nil, fmt.Errorf("%w: larger than %d bytes", ErrCorrupt, MaxFileBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var body fileBody
	if err := dec.Decode(&body); err != nil {
		return nil, nil, fmt.Errorf("%w: not valid trust JSON: %v", ErrCorrupt, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("%w: trailing data after the JSON object", ErrCorrupt)
	}
	if body.Version != FormatVersion {
		return nil, nil, fmt.Errorf("%w: version %d, want %d", ErrCorrupt, body.Version, FormatVersion)
	}
	if len(body.Records) > MaxRecords {
		return nil, nil, fmt.Errorf("%w: %d records, over the cap of %d", ErrCorrupt, len(body.Records), MaxRecords)
	}
	seen := map[[2]string]bool{}
	recs = make([]Record, 0, len(body.Records))
	for i := range body.Records {
		r := &body.Records[i]
		if err := validate(r, i); err != nil {
			if !retiredID(r, i) {
				return nil, nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
			}
			ignored = append(ignored, Ignored{Index: i, Record: *r})
		} else {
			recs = append(recs, *r)
		}
		k := [2]string{r.ProjectRoot, r.ID}
		if seen[k] {
			return nil, nil, fmt.Errorf("%w: record %d: duplicate record for %s in %s", ErrCorrupt, i, r.ID, r.ProjectRoot)
		}
		seen[k] = true
	}
	return recs, ignored, nil
}

// retiredID reports whether r's only fault is an id ending in "_": the id
// is valid in the grammar earlier versions wrote, and the record is valid
// with any good id in its place.
func retiredID(r *Record, index int) bool {
	if !strings.HasSuffix(r.ID, "_") || !idRe().MatchString(r.ID) || strings.Contains(r.ID, "__") {
		return false
	}
	c := *r
	c.ID = "x"
	return validate(&c, index) == nil
}

// Encode renders records in the file format, sorted by (projectRoot, id).
func Encode(records []Record) ([]byte, error) {
	rs := append([]Record(nil), records...)
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].ProjectRoot != rs[j].ProjectRoot {
			return rs[i].ProjectRoot < rs[j].ProjectRoot
		}
		return rs[i].ID < rs[j].ID
	})
	if rs == nil {
		rs = []Record{}
	}
	b, err := json.MarshalIndent(fileBody{Version: FormatVersion, Records: rs}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// readFile reads the trust file with the cap. Missing = (nil, nil, nil).
func readFile(path string) ([]Record, []Ignored, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, &FileError{Path: path, Msg: fmt.Sprintf("cannot stat: %v", err), Fix: "check the file's permissions", Err: err}
	}
	if !st.Mode().IsRegular() {
		return nil, nil, &FileError{Path: path, Msg: "not a regular file", Fix: "remove it; trust records are rewritten by `sluice trust`", Err: ErrCorrupt}
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, &FileError{Path: path, Msg: fmt.Sprintf("cannot open: %v", err), Fix: "check the file's permissions", Err: err}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, nil, &FileError{Path: path, Msg: fmt.Sprintf("cannot read: %v", err), Fix: "check the file's permissions", Err: err}
	}
	recs, ignored, err := Decode(data)
	if err != nil {
		return nil, nil, &FileError{Path: path, Msg: strings.TrimPrefix(err.Error(), "trust: "),
			Fix: "move the file aside and re-run `sluice trust` for each project server", Err: err}
	}
	return recs, ignored, nil
}

// Read loads the trust file at path. It never fails and never writes: a
// missing file is an empty state, an unusable one is an empty state plus a
// diagnostic.
func Read(path string) *State {
	st := &State{Path: path, Records: []Record{}}
	recs, ignored, err := readFile(path)
	if err != nil {
		var fe *FileError
		d := Diagnostic{File: path, Message: err.Error()}
		if errors.As(err, &fe) {
			d.Message, d.Fix = fe.Msg+"; no project server is trusted until it is fixed", fe.Fix
		}
		st.Diagnostics = append(st.Diagnostics, d)
		return st
	}
	if recs != nil {
		st.Records = recs
	}
	for _, ig := range ignored {
		st.Warnings = append(st.Warnings, ignoredWarning(path, ig))
	}
	return st
}

// Upsert adds or replaces the record for (rec.ProjectRoot, rec.ID) in the
// trust file at path. The root is canonicalized (it must exist); an empty
// ActionClass records no class (the gateway treats the server's tools as
// unknown unless their annotations say read-only) and a zero TrustedAt
// means now. The
// read-modify-write runs under an exclusive lock on path+".lock" and the
// file is replaced atomically (0600), so concurrent writers lose nothing.
// An unusable existing file is not overwritten (ErrCorrupt).
func Upsert(path string, rec Record) error {
	root, err := CanonicalRoot(rec.ProjectRoot)
	if err != nil {
		return &RecordError{Index: -1, Field: "projectRoot", Msg: fmt.Sprintf("cannot resolve %s: %v", rec.ProjectRoot, err)}
	}
	rec.ProjectRoot = root
	if rec.TrustedAt.IsZero() {
		rec.TrustedAt = time.Now().UTC().Truncate(time.Second)
	}
	if len(rec.Fields) == 0 {
		rec.Fields = nil
	}
	if err := validate(&rec, -1); err != nil {
		return err
	}
	return update(path, func(recs []Record, ignored int) ([]Record, error) {
		for i := range recs {
			if recs[i].ProjectRoot == rec.ProjectRoot && recs[i].ID == rec.ID {
				recs[i] = rec
				return recs, nil
			}
		}
		if len(recs)+ignored >= MaxRecords {
			return nil, fmt.Errorf("%w: the file already holds %d records; remove stale ones with `sluice untrust`", ErrFull, MaxRecords)
		}
		return append(recs, rec), nil
	}, nil)
}

// Remove deletes the record for (root, id) and reports whether one
// existed. root is canonicalized when it still exists, else used cleaned.
func Remove(path, root, id string) (bool, error) {
	if c, err := CanonicalRoot(root); err == nil {
		root = c
	} else {
		root = filepath.Clean(root)
	}
	removed := false
	match := func(r Record) bool { return r.ProjectRoot == root && r.ID == id }
	err := update(path, func(recs []Record, _ int) ([]Record, error) {
		out := recs[:0]
		for _, r := range recs {
			if match(r) {
				removed = true
				continue
			}
			out = append(out, r)
		}
		return out, nil
	}, func(r Record) bool {
		if match(r) {
			removed = true
			return false
		}
		return true
	})
	return removed, err
}

// update runs a locked read-modify-write of the trust file. Ignored
// records are written back as they were unless keep says otherwise.
func update(path string, modify func(recs []Record, ignored int) ([]Record, error), keep func(Record) bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return &FileError{Path: path, Msg: fmt.Sprintf("cannot create directory: %v", err), Err: err}
	}
	unlock, err := lock(path + LockSuffix)
	if err != nil {
		return &FileError{Path: path, Msg: fmt.Sprintf("cannot lock: %v", err), Err: err}
	}
	defer unlock()
	recs, ignored, err := readFile(path)
	if err != nil {
		return err
	}
	if recs == nil {
		recs = []Record{}
	}
	recs, err = modify(recs, len(ignored))
	if err != nil {
		return err
	}
	for _, ig := range ignored {
		if keep == nil || keep(ig.Record) {
			recs = append(recs, ig.Record)
		}
	}
	data, err := Encode(recs)
	if err != nil {
		return err
	}
	if err := writeAtomic(path, data); err != nil {
		return &FileError{Path: path, Msg: fmt.Sprintf("cannot write: %v", err), Err: err}
	}
	return nil
}

// lock takes the exclusive lock on the sidecar lock file (files.Lock).
func lock(path string) (func(), error) { return files.Lock(path) }

// writeAtomic replaces path with data, mode 0600 (files.WriteAtomic).
func writeAtomic(path string, data []byte) error { return files.WriteAtomic(path, data, 0o600) }
