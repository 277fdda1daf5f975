package catalog

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// Entry is what search needs of one tool: no schemas.
type Entry struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	ReadOnly    bool   `json:"readOnly,omitempty"`
	// Hash and Body are the tool's Sum, for comparing with its baseline
	// without reading every schema ("" in an index written before them).
	Hash string `json:"hash,omitempty"`
	Body string `json:"body,omitempty"`
}

// Index is the search side of a catalog, stored beside it so find reads a
// few kilobytes per server instead of every schema.
type Index struct {
	Format     int       `json:"format"`
	Identity   Identity  `json:"identity"`
	Server     Server    `json:"server"`
	Entries    []Entry   `json:"entries"`
	Truncated  bool      `json:"truncated,omitempty"`
	RecordedAt time.Time `json:"recordedAt"`
}

// MaxIndexDescription bounds each indexed description.
const MaxIndexDescription = 1024

func buildIndex(c *Catalog) *Index {
	ix := &Index{Format: Format, Identity: c.Identity, Server: c.Server, Truncated: c.Truncated, RecordedAt: c.RecordedAt, Entries: make([]Entry, 0, len(c.Tools))}
	for _, raw := range c.Tools {
		ix.Entries = append(ix.Entries, EntryOf(raw))
	}
	return ix
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
	return e
}

// LoadIndex returns the search index recorded for id, with the same miss
// rules as Load. A catalog written before indexes existed has none: the
// caller falls back to Load.
func LoadIndex(dir string, id Identity, opts *Options) (*Index, error) {
	path := IndexPath(dir, id)
	miss := func(reason string) (*Index, error) {
		return nil, &MissError{Path: path, Reason: reason}
	}
	data, reason := readCapped(path)
	if reason != "" {
		return miss(reason)
	}
	var ix Index
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ix); err != nil || dec.More() {
		return miss("malformed")
	}
	if ix.Format != Format {
		return miss("version")
	}
	if ix.Identity != id {
		return miss("identity")
	}
	now := opts.now()
	if ix.RecordedAt.IsZero() || ix.RecordedAt.After(now.Add(futureSlack)) {
		return miss("future")
	}
	if now.Sub(ix.RecordedAt) > opts.ttl() {
		return miss("expired")
	}
	if len(ix.Entries) > MaxTools {
		return miss("malformed")
	}
	for _, e := range ix.Entries {
		if !toolName.MatchString(e.Name) {
			return miss("malformed")
		}
	}
	return &ix, nil
}
