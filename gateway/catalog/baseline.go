package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// BaselineFormat is the on-disk format version of a baseline file. Format
// 1 bound name, title, description, inputSchema, outputSchema and
// annotations; format 2 binds _meta, icons and execution too. A format-1
// file still loads; Upgrade brings it to format 2 (see "Why a baseline
// upgrade adopts the new fields" in doc.go).
const BaselineFormat = 2

// formatOneFields is how many of hashedFields format 1 bound.
const formatOneFields = 6

// Baseline origins: why the baseline holds what it holds.
const (
	OriginFirstListing = "first-listing" // the server's first recorded listing
	OriginReview       = "review"        // a person accepted a change (sluice review --accept)
	OriginPolicy       = "policy"        // onToolChange: accept recorded it automatically
)

// Baseline is the reviewed tool set of one server: a hash per tool and one
// for the set, with each tool's hashed definition kept for a readable diff.
// Unlike a catalog it never expires and is not bound to the declaration
// digest: a changed declaration must not reset what was reviewed.
type Baseline struct {
	Format     int            `json:"format"`
	Identity   Identity       `json:"identity"` // Digest and Cwd are always empty
	Set        string         `json:"set"`
	Tools      []BaselineTool `json:"tools"`
	Origin     string         `json:"origin"`
	ReviewedAt time.Time      `json:"reviewedAt"`
	// UpgradedFrom is the format this baseline was upgraded from (0: none).
	UpgradedFrom int `json:"upgradedFrom,omitempty"`
	// Instructions is the server's reviewed instructions text (its
	// initialize answer's), relayed to agents in place of any other text
	// the server gives until a person reviews it. nil: recorded before
	// baselines bound instructions; the next listing records them.
	Instructions *string `json:"instructions,omitempty"`
}

// InstructionsChanged reports whether now differs from the reviewed
// instructions. A baseline that never recorded them reports no change.
func (b *Baseline) InstructionsChanged(now string) bool {
	return b != nil && b.Instructions != nil && *b.Instructions != now
}

// WithInstructions sets the reviewed instructions text and returns b.
func (b *Baseline) WithInstructions(s string) *Baseline {
	b.Instructions = &s
	return b
}

// BaselineTool is one reviewed tool.
type BaselineTool struct {
	Name string          `json:"name"`
	Hash string          `json:"hash"`
	Body string          `json:"body"` // hash of everything but the name: finds renames
	Def  json.RawMessage `json:"def"`  // the hashed fields, canonical JSON
	// Format, when set, is the older format Def was recorded in (kept by
	// Upgrade for a tool that did not match its listing): Def records
	// only the fields that format bound.
	Format int `json:"format,omitempty"`
}

// Sum is what the comparison needs of one listed tool.
type Sum struct {
	Name string
	Hash string // over hashedFields
	Body string // the same without the name
}

// hashedFields are the parts of a tool definition a baseline binds:
// everything the model reads or a client acts on. The first
// formatOneFields are what format 1 bound.
var hashedFields = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta", "icons", "execution"}

// baselineKey is the identity a baseline is filed under: the catalog's
// without digest and cwd.
func baselineKey(id Identity) Identity {
	id.Digest, id.Cwd = "", ""
	return id
}

// BaselinePath is where the baseline for id lives inside dir.
func BaselinePath(dir string, id Identity) string {
	return filepath.Join(dir, "baselines", FileName(baselineKey(id)))
}

// Definition returns the hashed fields of a raw tool as canonical JSON
// (keys sorted at every level, numbers as written, no insignificant
// space): the same definition always gives the same bytes.
func Definition(raw json.RawMessage) (json.RawMessage, error) {
	return definitionOf(raw, hashedFields)
}

// definitionOf is Definition over the given fields.
func definitionOf(raw json.RawMessage, fields []string) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	proj := map[string]any{}
	for _, f := range fields {
		v, ok := obj[f]
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			continue
		}
		c, err := canonical(v)
		if err != nil {
			return nil, err
		}
		proj[f] = c
	}
	return marshalPlain(proj)
}

// canonical decodes JSON keeping numbers as their source text.
func canonical(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// marshalPlain marshals without HTML escaping (encoding/json sorts map
// keys; json.Number keeps a number's text).
func marshalPlain(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// SumOf hashes one raw tool. A tool that cannot be decoded hashes as its
// bytes, so it still differs from anything reviewed.
func SumOf(raw json.RawMessage) Sum {
	def, err := Definition(raw)
	if err != nil {
		h := hash(raw)
		return Sum{Hash: h, Body: h}
	}
	return sumDef(def)
}

func sumDef(def json.RawMessage) Sum {
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(def, &obj)
	var name string
	_ = json.Unmarshal(obj["name"], &name)
	delete(obj, "name")
	body, _ := marshalPlain(obj)
	return Sum{Name: name, Hash: hash(def), Body: hash(body)}
}

func hash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// SetHash hashes a whole tool set: every (name, hash) pair in name order.
func SetHash(sums []Sum) string {
	s := append([]Sum(nil), sums...)
	sort.Slice(s, func(i, j int) bool { return s[i].Name < s[j].Name })
	h := sha256.New()
	for _, t := range s {
		h.Write([]byte(t.Name))
		h.Write([]byte{0})
		h.Write([]byte(t.Hash))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// NewBaseline builds the baseline of a listing.
func NewBaseline(id Identity, tools []json.RawMessage, origin string, now time.Time) *Baseline {
	b := &Baseline{Format: BaselineFormat, Identity: baselineKey(id), Origin: origin, ReviewedAt: now.UTC(), Tools: []BaselineTool{}}
	var sums []Sum
	for _, raw := range tools {
		def, err := Definition(raw)
		if err != nil {
			continue
		}
		s := sumDef(def)
		sums = append(sums, s)
		b.Tools = append(b.Tools, BaselineTool{Name: s.Name, Hash: s.Hash, Body: s.Body, Def: def})
	}
	sort.Slice(b.Tools, func(i, j int) bool { return b.Tools[i].Name < b.Tools[j].Name })
	b.Set = SetHash(sums)
	return b
}

// Upgrade returns b in the current format, given the server's listing as
// recorded now (b itself when it is current). A tool whose listed
// definition matches the reviewed one on every field b's format bound
// adopts its listed definition whole: the fields b did not record are
// taken as they are listed, as a first listing's are. Any other tool
// keeps its reviewed definition, which records none of the new fields,
// so it stays changed and review shows them.
func (b *Baseline) Upgrade(listing []json.RawMessage) *Baseline {
	if b.Format >= BaselineFormat {
		return b
	}
	listed := map[string]json.RawMessage{}
	for _, raw := range listing {
		def, err := definitionOf(raw, hashedFields[:formatOneFields])
		if err != nil {
			continue
		}
		if s := sumDef(def); s.Name != "" {
			listed[s.Name] = raw
		}
	}
	nb := &Baseline{Format: BaselineFormat, Identity: b.Identity, Origin: b.Origin, ReviewedAt: b.ReviewedAt, UpgradedFrom: b.Format, Instructions: b.Instructions, Tools: make([]BaselineTool, 0, len(b.Tools))}
	sums := make([]Sum, 0, len(b.Tools))
	for _, t := range b.Tools {
		adopted := false
		if raw, ok := listed[t.Name]; ok {
			if old, err := definitionOf(raw, hashedFields[:formatOneFields]); err == nil && sumDef(old).Hash == t.Hash {
				if def, err := Definition(raw); err == nil {
					s := sumDef(def)
					t, adopted = BaselineTool{Name: s.Name, Hash: s.Hash, Body: s.Body, Def: def}, true
				}
			}
		}
		if !adopted && t.Format == 0 {
			t.Format = b.Format
		}
		nb.Tools = append(nb.Tools, t)
		sums = append(sums, Sum{Name: t.Name, Hash: t.Hash, Body: t.Body})
	}
	nb.Set = SetHash(sums)
	return nb
}

// Tool returns the reviewed tool named name.
func (b *Baseline) Tool(name string) (BaselineTool, bool) {
	i := sort.Search(len(b.Tools), func(i int) bool { return b.Tools[i].Name >= name })
	if i < len(b.Tools) && b.Tools[i].Name == name {
		return b.Tools[i], true
	}
	return BaselineTool{}, false
}

// LoadBaseline returns the baseline recorded for id: ErrNoBaseline when
// there is none, a *BaselineError when the file is unusable (the caller
// must then hold every tool, since nothing reviewed can be read).
func LoadBaseline(dir string, id Identity) (*Baseline, error) {
	b, _, err := loadBaseline(dir, id)
	return b, err
}

// loadBaseline is LoadBaseline that also returns the file's FileInfo,
// taken from the descriptor it was read through.
func loadBaseline(dir string, id Identity) (*Baseline, os.FileInfo, error) {
	path := BaselinePath(dir, id)
	data, fi, reason := readCapped(path)
	switch reason {
	case "":
	case "absent":
		return nil, nil, ErrNoBaseline
	default:
		return nil, nil, &BaselineError{Path: path, Reason: reason}
	}
	var b Baseline
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil || dec.More() {
		return nil, nil, &BaselineError{Path: path, Reason: "malformed"}
	}
	if b.Format < 1 || b.Format > BaselineFormat {
		return nil, nil, &BaselineError{Path: path, Reason: "version"}
	}
	if b.Identity != baselineKey(id) {
		return nil, nil, &BaselineError{Path: path, Reason: "identity"}
	}
	if len(b.Tools) > MaxTools {
		return nil, nil, &BaselineError{Path: path, Reason: "malformed"}
	}
	sort.Slice(b.Tools, func(i, j int) bool { return b.Tools[i].Name < b.Tools[j].Name })
	return &b, fi, nil
}

// StoreBaseline records b atomically (0600 in a 0700 directory).
func StoreBaseline(dir string, b *Baseline) error {
	if b == nil {
		return errors.New("catalog: nil baseline")
	}
	out := *b
	out.Format = BaselineFormat
	out.Identity = baselineKey(out.Identity)
	data, err := json.Marshal(&out)
	if err != nil {
		return err
	}
	if len(data) > MaxFileBytes {
		return &BaselineError{Path: BaselinePath(dir, out.Identity), Reason: "oversized"}
	}
	fi, ok := writeAtomic(BaselinePath(dir, out.Identity), data)
	if !ok {
		return &BaselineError{Path: BaselinePath(dir, out.Identity), Reason: "unwritable"}
	}
	_, _ = writeAtomic(baselineSetPath(dir, out.Identity), encodeSet(out.Identity, out.Set, linkOf(fi)))
	return nil
}

// baselineSetPath is where the compact set file of id's baseline lives.
func baselineSetPath(dir string, id Identity) string {
	p := BaselinePath(dir, id)
	return p[:len(p)-len(".json")] + ".set"
}

func encodeSet(id Identity, set string, src link) []byte {
	var e encoder
	e.link(src)
	e.uint(BaselineFormat)
	encodeIdentity(&e, baselineKey(id))
	e.str(set)
	return e.file(setMagic)
}

// BaselineSet returns the set hash of id's baseline (Baseline.Set) with the
// errors of LoadBaseline, reading a small compact file beside the baseline
// instead of every reviewed definition. A set file that is absent,
// corrupt, of another version or no longer derived from the baseline file
// (stale) is never used: the baseline is read whole and the set file
// rewritten from it.
func BaselineSet(dir string, id Identity) (string, error) {
	path := baselineSetPath(dir, id)
	if data, reason := readSmall(path, nil); reason == "" {
		if d, reason := openCompact(data, setMagic); reason == "" {
			src := d.link()
			format := d.uint()
			bid := decodeIdentity(d)
			set := d.str()
			if d.done() && format == BaselineFormat && bid == baselineKey(id) && src.current(BaselinePath(dir, id)) {
				return set, nil
			}
		}
	}
	b, fi, err := loadBaseline(dir, id)
	if err != nil {
		return "", err
	}
	_, _ = writeAtomic(path, encodeSet(id, b.Set, linkOf(fi)))
	return b.Set, nil
}

// RemoveBaseline deletes the baseline recorded for id, if any.
func RemoveBaseline(dir string, id Identity) error {
	for _, p := range []string{baselineSetPath(dir, id), BaselinePath(dir, id)} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// Rename is a tool that kept its definition under a new name.
type Rename struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Change is how a listing differs from its baseline. Names are sorted.
type Change struct {
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Renamed []Rename `json:"renamed,omitempty"`
	Changed []string `json:"changed,omitempty"`
	Set     string   `json:"set"` // the listing's set hash
}

// None reports whether the listing is the baseline.
func (c Change) None() bool {
	return len(c.Added)+len(c.Removed)+len(c.Renamed)+len(c.Changed) == 0
}

// Held lists the listed tools that are not as reviewed: added, renamed to
// and changed.
func (c Change) Held() []string {
	out := append([]string(nil), c.Added...)
	for _, r := range c.Renamed {
		out = append(out, r.To)
	}
	out = append(out, c.Changed...)
	sort.Strings(out)
	return out
}

// Compare says how a listing (one Sum per tool) differs from b. A listed
// tool whose body matches a removed tool's, under a new name, is a rename.
func Compare(b *Baseline, listed []Sum) Change {
	ch := Change{Set: SetHash(listed)}
	if b != nil && b.Set == ch.Set {
		return ch
	}
	old := map[string]BaselineTool{}
	if b != nil {
		for _, t := range b.Tools {
			old[t.Name] = t
		}
	}
	now := map[string]bool{}
	var fresh []Sum
	for _, s := range listed {
		now[s.Name] = true
		o, ok := old[s.Name]
		switch {
		case !ok:
			fresh = append(fresh, s)
		case o.Hash != s.Hash:
			ch.Changed = append(ch.Changed, s.Name)
		}
	}
	gone := map[string]BaselineTool{}
	if b != nil {
		for _, t := range b.Tools {
			if !now[t.Name] {
				gone[t.Name] = t
			}
		}
	}
	for _, s := range fresh {
		from := ""
		for _, name := range sortedKeys(gone) {
			if gone[name].Body == s.Body {
				from = name
				break
			}
		}
		if from != "" {
			ch.Renamed = append(ch.Renamed, Rename{From: from, To: s.Name})
			delete(gone, from)
			continue
		}
		ch.Added = append(ch.Added, s.Name)
	}
	ch.Removed = sortedKeys(gone)
	sort.Strings(ch.Added)
	sort.Strings(ch.Changed)
	sort.Slice(ch.Renamed, func(i, j int) bool { return ch.Renamed[i].To < ch.Renamed[j].To })
	return ch
}

func sortedKeys(m map[string]BaselineTool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
