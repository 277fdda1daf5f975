package clients

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"

	"sluice/gateway/internal/files"
	"sluice/gateway/internal/linediff"
)

// EntryName is the name sluice installs itself under.
const EntryName = "sluice"

// Server is the entry install writes.
type Server struct {
	Command string   // the sluice executable, absolute
	Args    []string // serve and its flags
	Env     []KV     // what sluice needs to find its files (SLUICE_HOME when set)
}

// InstallOptions says what to install where.
type InstallOptions struct {
	Client *Client
	File   string
	Server Server
	// Remove names entries to take out (--replace: those now served
	// through sluice).
	Remove []string
	// StateDir holds install records and backups (created 0700).
	StateDir string
	Now      time.Time
}

// Plan is an install or uninstall, computed but not yet written.
type Plan struct {
	Client  *Client
	File    string // the file written (symlinks followed)
	Existed bool   // the file existed before
	Before  []byte
	After   []byte // nil with Delete
	Delete  bool   // uninstall of a file install created: remove it
	Removed []string
	// Already, when set, says why there is nothing to do.
	Already string
	Diff    string // the changed lines, for the person to see first

	uninstall  bool
	forgetOnly bool // uninstall --forget: drop the record, leave the file
	rec        record
	stateDir   string
}

// record is what install remembers of one file.
type record struct {
	Client  string    `json:"client"`
	File    string    `json:"file"`
	Existed bool      `json:"existed"`
	Backup  string    `json:"backup,omitempty"` // file name in backups/; "" when the file did not exist
	Before  string    `json:"before,omitempty"` // sha256 of the bytes before
	After   string    `json:"after"`            // sha256 of what install wrote
	At      time.Time `json:"at"`
}

type recordsFile struct {
	Format  int      `json:"format"`
	Records []record `json:"records"`
}

const recordsName = "installs.json"

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func loadRecords(dir string) (*recordsFile, error) {
	path := filepath.Join(dir, recordsName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &recordsFile{Format: 1}, nil
	}
	if err != nil {
		return nil, &FileError{Path: path, Message: "cannot read the install records: " + err.Error(), Err: err}
	}
	var rf recordsFile
	if err := json.Unmarshal(data, &rf); err != nil || rf.Format != 1 {
		return nil, &FileError{Path: path, Message: "the install records are not readable", Fix: "move the file aside; sluice then knows of no installs"}
	}
	return &rf, nil
}

func (rf *recordsFile) find(file string) (int, bool) {
	for i, r := range rf.Records {
		if r.File == file {
			return i, true
		}
	}
	return -1, false
}

func storeRecords(dir string, rf *recordsFile) error {
	data, err := json.MarshalIndent(rf, "", "  ")
	if err != nil {
		return err
	}
	return files.WriteAtomic(filepath.Join(dir, recordsName), append(data, '\n'), 0o600)
}

// resolve follows symlinks of an existing file, so the link stays a link.
func resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r, nil
	}
	return abs, nil
}

func readFile(path string) ([]byte, bool, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, &FileError{Path: path, Message: "cannot read it: " + err.Error(), Err: err}
	}
	if !fi.Mode().IsRegular() {
		return nil, false, &FileError{Path: path, Message: "not a regular file", Fix: "name the client's config file with --config"}
	}
	if fi.Size() > MaxFileBytes {
		return nil, false, &FileError{Path: path, Message: fmt.Sprintf("larger than %d MiB", MaxFileBytes>>20)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, &FileError{Path: path, Message: "cannot read it: " + err.Error(), Err: err}
	}
	return data, true, nil
}

// PlanInstall computes the install of o.Server into o.File. It writes
// nothing; Apply does.
func PlanInstall(o InstallOptions) (*Plan, error) {
	file, err := resolve(o.File)
	if err != nil {
		return nil, &FileError{Path: o.File, Message: err.Error()}
	}
	p := &Plan{Client: o.Client, File: file, stateDir: o.StateDir}
	rf, err := loadRecords(o.StateDir)
	if err != nil {
		return nil, err
	}
	data, existed, err := readFile(file)
	if err != nil {
		return nil, err
	}
	p.Existed, p.Before = existed, data
	if i, ok := rf.find(file); ok {
		r := rf.Records[i]
		if existed && sum(data) == r.After {
			p.Already = fmt.Sprintf("sluice is already installed in %s (since %s)", file, r.At.Local().Format("2006-01-02 15:04"))
			return p, nil
		}
		return nil, &FileError{Path: file, Err: ErrChanged,
			Message: fmt.Sprintf("changed since 'sluice install %s' wrote it (%s), so sluice will not edit it again", r.Client, r.At.Local().Format("2006-01-02 15:04")),
			Fix:     fmt.Sprintf("if the sluice entry is gone, run 'sluice uninstall %s --config %s --forget' and install again; otherwise leave it as it is", r.Client, file)}
	}
	servers, err := serverNames(o.Client, file, data)
	if err != nil {
		return nil, err
	}
	if _, ok := servers[EntryName]; ok {
		return nil, &FileError{Path: file, Message: fmt.Sprintf("it already has a server named %q that sluice install did not write", EntryName),
			Fix: "remove or rename that entry, then install again"}
	}
	out := data
	for _, name := range o.Remove {
		if _, ok := servers[name]; !ok {
			continue
		}
		next, err := removeEntry(o.Client, file, out, name)
		if err != nil {
			return nil, err
		}
		out = next
		p.Removed = append(p.Removed, name)
	}
	out, err = addEntry(o.Client, file, out, o.Server)
	if err != nil {
		return nil, err
	}
	if err := checkEdit(o.Client, file, data, out, p.Removed, o.Server); err != nil {
		return nil, err
	}
	p.After = out
	p.Diff = linediff.Changed(data, out, Mask)
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	p.rec = record{Client: o.Client.Name, File: file, Existed: existed, After: sum(out), At: now.UTC()}
	if existed {
		p.rec.Before = sum(data)
		p.rec.Backup = fmt.Sprintf("%s-%s-%d.bak", o.Client.Name, sum([]byte(file))[:12], now.UnixNano())
	}
	return p, nil
}

// PlanUninstall computes restoring file as it was before sluice install
// wrote it. forget drops the record without touching the file.
func PlanUninstall(c *Client, file, stateDir string, forget bool) (*Plan, error) {
	file, err := resolve(file)
	if err != nil {
		return nil, &FileError{Path: file, Message: err.Error()}
	}
	p := &Plan{Client: c, File: file, stateDir: stateDir, uninstall: true}
	rf, err := loadRecords(stateDir)
	if err != nil {
		return nil, err
	}
	i, ok := rf.find(file)
	if !ok {
		p.Already = fmt.Sprintf("sluice install has not written %s, so there is nothing to undo", file)
		return p, nil
	}
	r := rf.Records[i]
	p.rec = r
	data, existed, err := readFile(file)
	if err != nil {
		return nil, err
	}
	p.Existed, p.Before = existed, data
	if forget {
		p.forgetOnly = true
		return p, nil
	}
	if !existed || sum(data) != r.After {
		fix := "edit the file by hand to remove the sluice entry"
		if r.Backup != "" {
			fix += "; the file as it was before the install is " + filepath.Join(stateDir, "backups", r.Backup)
		}
		fix += fmt.Sprintf("; then run 'sluice uninstall %s --config %s --forget'", r.Client, file)
		return nil, &FileError{Path: file, Err: ErrChanged, Message: fmt.Sprintf("changed since 'sluice install %s' wrote it (%s); restoring it would lose those changes", r.Client, r.At.Local().Format("2006-01-02 15:04")), Fix: fix}
	}
	if !r.Existed {
		p.Delete = true
		p.Diff = linediff.Changed(data, nil, Mask)
		return p, nil
	}
	backup, err := os.ReadFile(filepath.Join(stateDir, "backups", r.Backup))
	if err != nil || sum(backup) != r.Before {
		return nil, &FileError{Path: filepath.Join(stateDir, "backups", r.Backup), Message: "the backup of " + file + " is missing or damaged, so it cannot be restored byte for byte",
			Fix: fmt.Sprintf("remove the sluice entry by hand, then run 'sluice uninstall %s --config %s --forget'", r.Client, file)}
	}
	p.After = backup
	p.Diff = linediff.Changed(data, backup, Mask)
	return p, nil
}

// Forgetting reports whether the plan only drops the install record.
func (p *Plan) Forgetting() bool { return p.forgetOnly }

// Apply writes the plan: for an install the backup, the record, then the
// file; for an uninstall the file, then the record. Each file is replaced
// atomically; a failed step leaves the earlier state.
func (p *Plan) Apply() error {
	if p.Already != "" {
		return nil
	}
	if !p.Forgetting() {
		if err := p.unchanged(); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(p.stateDir, "backups"), 0o700); err != nil {
		return &FileError{Path: p.stateDir, Message: "cannot create the install state directory: " + err.Error(), Err: err}
	}
	rf, err := loadRecords(p.stateDir)
	if err != nil {
		return err
	}
	if p.uninstall {
		if !p.Forgetting() {
			if p.Delete {
				if err := os.Remove(p.File); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return &FileError{Path: p.File, Message: "cannot remove it: " + err.Error(), Err: err}
				}
			} else if err := files.WriteAtomic(p.File, p.After, mode(p.File)); err != nil {
				return &FileError{Path: p.File, Message: "cannot write it: " + err.Error(), Err: err}
			}
		}
		if i, ok := rf.find(p.File); ok {
			rf.Records = append(rf.Records[:i], rf.Records[i+1:]...)
		}
		if err := storeRecords(p.stateDir, rf); err != nil {
			return &FileError{Path: filepath.Join(p.stateDir, recordsName), Message: "the file is restored but the install record could not be removed: " + err.Error(), Err: err}
		}
		if p.rec.Backup != "" && !p.Forgetting() {
			_ = os.Remove(filepath.Join(p.stateDir, "backups", p.rec.Backup))
		}
		return nil
	}
	if p.Existed {
		if err := files.WriteAtomic(filepath.Join(p.stateDir, "backups", p.rec.Backup), p.Before, 0o600); err != nil {
			return &FileError{Path: p.stateDir, Message: "cannot keep a backup, so nothing was changed: " + err.Error(), Err: err}
		}
	}
	rf.Records = append(rf.Records, p.rec)
	if err := storeRecords(p.stateDir, rf); err != nil {
		return &FileError{Path: filepath.Join(p.stateDir, recordsName), Message: "cannot record the install, so nothing was changed: " + err.Error(), Err: err}
	}
	if !p.Existed {
		if err := os.MkdirAll(filepath.Dir(p.File), 0o700); err != nil {
			return &FileError{Path: p.File, Message: "cannot create its directory: " + err.Error(), Err: err}
		}
	}
	if err := files.WriteAtomic(p.File, p.After, mode(p.File)); err != nil {
		rf.Records = rf.Records[:len(rf.Records)-1]
		_ = storeRecords(p.stateDir, rf)
		return &FileError{Path: p.File, Message: "cannot write it: " + err.Error(), Err: err}
	}
	return nil
}

// unchanged checks that the file is still what the plan was computed
// from: the client may have rewritten it while the user read the diff,
// and writing the planned bytes would drop that edit without a word.
func (p *Plan) unchanged() error {
	data, existed, err := readFile(p.File)
	if err != nil {
		return err
	}
	if existed != p.Existed || !bytes.Equal(data, p.Before) {
		verb := "install"
		if p.uninstall {
			verb = "uninstall"
		}
		return &FileError{Path: p.File, Err: ErrChanged, Message: "changed while sluice " + verb + " was waiting to write it, so nothing was written",
			Fix: "run sluice " + verb + " again to see the change it would make now"}
	}
	return nil
}

func mode(path string) os.FileMode {
	if fi, err := os.Stat(path); err == nil {
		return fi.Mode().Perm()
	}
	return 0o600
}

// serverNames decodes the server list of a client's file (name ->
// entry as decoded).
func serverNames(c *Client, file string, data []byte) (map[string]any, error) {
	root, err := decodeRoot(c, file, data)
	if err != nil {
		return nil, err
	}
	m, _ := root[c.Key].(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

func decodeRoot(c *Client, file string, data []byte) (map[string]any, error) {
	root := map[string]any{}
	if c.Format == FormatTOML {
		if _, err := toml.Decode(string(data), &root); err != nil {
			return nil, &FileError{Path: file, Message: "not valid TOML: " + firstLine(err.Error()), Fix: "fix it first; sluice does not edit a file it cannot read"}
		}
		return root, nil
	}
	b := blank(data)
	if len(bytes.TrimSpace(b)) == 0 {
		return root, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, &FileError{Path: file, Message: "not a JSON object", Fix: "fix it first; sluice does not edit a file it cannot read"}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, &FileError{Path: file, Message: "not a JSON object", Fix: "fix it first; sluice does not edit a file it cannot read"}
	}
	if s, ok := obj[c.Key]; ok {
		if _, isObj := s.(map[string]any); !isObj {
			return nil, &FileError{Path: file, Message: c.Key + " is not an object", Fix: "fix it first; sluice does not edit a file it cannot read"}
		}
	}
	return obj, nil
}

// checkEdit proves the edit did only what it should: decoding after,
// without the sluice entry and with the removed entries put back, gives
// exactly what decoding before gave.
func checkEdit(c *Client, file string, before, after []byte, removed []string, s Server) error {
	b, err := decodeRoot(c, file, before)
	if err != nil {
		return err
	}
	a, err := decodeRoot(c, file, after)
	if err != nil {
		return &FileError{Path: file, Message: "internal: the edited file does not decode: " + err.Error()}
	}
	as, _ := a[c.Key].(map[string]any)
	if as == nil || as[EntryName] == nil {
		return &FileError{Path: file, Message: "internal: the edited file has no sluice entry"}
	}
	delete(as, EntryName)
	bs, _ := b[c.Key].(map[string]any)
	if bs == nil {
		bs = map[string]any{}
		if len(as) == 0 {
			delete(a, c.Key)
		}
	}
	for _, r := range removed {
		if _, ok := as[r]; ok {
			return &FileError{Path: file, Message: "internal: " + r + " is still there after removing it"}
		}
		as[r] = bs[r]
	}
	if _, had := b[c.Key]; !had && len(as) == 0 {
		delete(a, c.Key)
	}
	if !reflect.DeepEqual(a, b) {
		return &FileError{Path: file, Message: "the edit would change more than the server list, so it was not made", Fix: "add sluice to the file by hand"}
	}
	return nil
}

// entryJSON is the sluice entry for c as JSON.
func entryJSON(c *Client, s Server, prefix, unit string) []byte {
	type entry struct {
		Type    string            `json:"type,omitempty"`
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env,omitempty"`
	}
	e := entry{Command: s.Command, Args: s.Args}
	if c.Name == "vscode" || c.Name == "claude-code" {
		e.Type = "stdio"
	}
	if len(s.Env) > 0 {
		e.Env = map[string]string{}
		for _, kv := range s.Env {
			e.Env[kv.Key] = kv.Value
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, unit)
	_ = enc.Encode(e)
	return bytes.TrimRight(b.Bytes(), "\n")
}

// addEntry inserts the sluice entry.
func addEntry(c *Client, file string, data []byte, s Server) ([]byte, error) {
	if c.Format == FormatTOML {
		return addTOML(data, c.Key, s), nil
	}
	b := blank(data)
	if len(bytes.TrimSpace(b)) == 0 {
		return []byte("{\n  " + q(c.Key) + ": {\n    " + q(EntryName) + ": " + string(entryJSON(c, s, "    ", "  ")) + "\n  }\n}\n"), nil
	}
	root, rootEnd, err := members(b, 0)
	if err != nil {
		return nil, &FileError{Path: file, Message: "not a JSON object", Fix: "fix it first"}
	}
	if m, ok := find(root, c.Key); ok {
		return insertMember(data, b, m.ValueStart, q(EntryName), func(prefix, unit string) string { return string(entryJSON(c, s, prefix, unit)) })
	}
	open := bytes.IndexByte(b, '{')
	_ = rootEnd
	return insertMember(data, b, open, q(c.Key), func(prefix, unit string) string {
		return "{\n" + prefix + unit + q(EntryName) + ": " + string(entryJSON(c, s, prefix+unit, unit)) + "\n" + prefix + "}"
	})
}

// insertMember adds key: value as the last member of the object at
// objStart, in the indentation its members use.
func insertMember(data, b []byte, objStart int, key string, value func(prefix, unit string) string) ([]byte, error) {
	ms, closeAt, err := members(b, objStart)
	if err != nil {
		return nil, err
	}
	objIndent := indentAt(b, objStart)
	if len(ms) == 0 {
		unit := "  "
		ins := "\n" + objIndent + unit + key + ": " + value(objIndent+unit, unit) + "\n" + objIndent
		out := append([]byte(nil), data[:objStart+1]...)
		out = append(out, ins...)
		return append(out, data[closeAt:]...), nil
	}
	last := ms[len(ms)-1]
	ind := indentAt(b, last.KeyStart)
	unit := strings.TrimPrefix(ind, objIndent)
	if unit == "" || unit == ind && objIndent != "" {
		unit = "  "
	}
	sameLine := !bytes.Contains(b[objStart:last.KeyStart], []byte("\n"))
	sep := ",\n" + ind
	if sameLine {
		sep = ", "
		ind = objIndent
	}
	ins := sep + key + ": " + value(ind, unit)
	out := append([]byte(nil), data[:last.ValueEnd]...)
	out = append(out, ins...)
	return append(out, data[last.ValueEnd:]...), nil
}

// removeEntry cuts the entry name out of the client's server list
// (every occurrence: a duplicate key would otherwise survive).
func removeEntry(c *Client, file string, data []byte, name string) ([]byte, error) {
	if c.Format == FormatTOML {
		return removeTOML(file, data, c.Key, name)
	}
	for {
		out, err := removeJSON(file, data, c.Key, name)
		if err != nil || len(out) == len(data) {
			return out, err
		}
		data = out
	}
}

// removeJSON cuts the first member name of the key object.
func removeJSON(file string, data []byte, key, name string) ([]byte, error) {
	c := &Client{Key: key}
	b := blank(data)
	root, _, err := members(b, 0)
	if err != nil {
		return nil, &FileError{Path: file, Message: "not a JSON object"}
	}
	m, ok := find(root, c.Key)
	if !ok {
		return data, nil
	}
	ms, _, err := members(b, m.ValueStart)
	if err != nil {
		return nil, &FileError{Path: file, Message: c.Key + ": " + err.Error()}
	}
	for i, x := range ms {
		if x.Key != name {
			continue
		}
		var start, end int
		switch {
		case i > 0:
			start, end = ms[i-1].ValueEnd, x.ValueEnd
		case len(ms) > 1:
			start, end = x.KeyStart, ms[1].KeyStart
		default:
			start, end = x.KeyStart, x.ValueEnd
			// An empty object keeps its braces; drop the whitespace too.
			for start > 0 && strings.ContainsRune(" \t\r\n", rune(b[start-1])) {
				start--
			}
			for end < len(b) && strings.ContainsRune(" \t\r\n,", rune(b[end])) {
				end++
			}
		}
		out := append([]byte(nil), data[:start]...)
		return append(out, data[end:]...), nil
	}
	return data, nil
}

// addTOML appends a [key.sluice] table.
func addTOML(data []byte, key string, s Server) []byte {
	out := append([]byte(nil), data...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	if len(bytes.TrimSpace(out)) > 0 {
		out = append(out, '\n')
	}
	qs := make([]string, len(s.Args))
	for i, a := range s.Args {
		qs[i] = q(a)
	}
	out = append(out, fmt.Sprintf("[%s.%s]\ncommand = %s\nargs = [%s]\n", key, EntryName, q(s.Command), strings.Join(qs, ", "))...)
	if len(s.Env) > 0 {
		var kv []string
		for _, e := range s.Env {
			kv = append(kv, q(e.Key)+" = "+q(e.Value))
		}
		out = append(out, fmt.Sprintf("env = { %s }\n", strings.Join(kv, ", "))...)
	}
	return out
}

var tomlHeader = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$`) })

// removeTOML cuts the [key.name] table and its sub-tables.
func removeTOML(file string, data []byte, key, name string) ([]byte, error) {
	lines := strings.SplitAfter(string(data), "\n")
	var out strings.Builder
	cutting, cut := false, false
	for _, l := range lines {
		trim := strings.TrimSpace(l)
		if strings.HasPrefix(trim, "[") {
			cutting = false
			if m := tomlHeader().FindStringSubmatch(trim); m != nil {
				parts := splitDotted(m[1])
				if len(parts) >= 2 && parts[0] == key && parts[1] == name {
					cutting, cut = true, true
				}
			}
		}
		if !cutting {
			out.WriteString(l)
		}
	}
	if !cut {
		return nil, &FileError{Path: file, Message: fmt.Sprintf("server %q is not written as a [%s.%s] table, so it cannot be removed safely", name, key, name), Fix: "remove it by hand, or install without --replace"}
	}
	return []byte(out.String()), nil
}

// splitDotted splits a TOML dotted key, unquoting quoted parts.
func splitDotted(k string) []string {
	var parts []string
	for len(k) > 0 {
		k = strings.TrimSpace(k)
		var part string
		switch {
		case strings.HasPrefix(k, `"`):
			end := strings.Index(k[1:], `"`)
			if end < 0 {
				return nil
			}
			p, err := strconv.Unquote(k[:end+2])
			if err != nil {
				return nil
			}
			part, k = p, k[end+2:]
		case strings.HasPrefix(k, "'"):
			end := strings.Index(k[1:], "'")
			if end < 0 {
				return nil
			}
			part, k = k[1:end+1], k[end+2:]
		default:
			end := strings.IndexByte(k, '.')
			if end < 0 {
				end = len(k)
			}
			part, k = strings.TrimSpace(k[:end]), k[end:]
		}
		parts = append(parts, part)
		k = strings.TrimSpace(k)
		k = strings.TrimPrefix(k, ".")
	}
	return parts
}

var pairPat = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`"?([A-Za-z0-9_.-]+)"?(\s*[:=]\s*)"((?:[^"\\]|\\.)*)"`)
})

// Mask hides, in one line of a client's file, every quoted value that
// looks like a secret (by its key or its shape), so a diff can be shown.
func Mask(line string) string {
	return pairPat().ReplaceAllStringFunc(line, func(m string) string {
		sub := pairPat().FindStringSubmatch(m)
		if !LooksSecret(sub[1], sub[3]) {
			return m
		}
		i := strings.LastIndex(m, sub[3])
		return m[:i] + "(hidden)" + m[i+len(sub[3]):]
	})
}
