package front

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"unicode/utf8"
)

// This file bounds what a listing (tools/list, resources/list,
// resources/templates/list, prompts/list) carries of upstream definitions
// (see "Why a tool listing has a byte budget" in doc.go).

const (
	// DefaultMaxToolListingBytes is the default cap on one upstream tool's
	// definition in a tools/list answer (Options.MaxToolListingBytes).
	DefaultMaxToolListingBytes = 8 << 10
	// DefaultMaxListingBytes is the default cap on all upstream tool
	// definitions of one tools/list answer (Options.MaxListingBytes).
	DefaultMaxListingBytes = 128 << 10
	// MinToolListingBytes is the smallest per-tool cap: what a shortened
	// definition needs for its name, a permissive schema and the note
	// saying how to see the whole.
	MinToolListingBytes = 512
	// maxListedTitleBytes bounds a shortened definition's title.
	maxListedTitleBytes = 128
	// minKeptDescriptionBytes is how much of a description a shortened
	// definition keeps before it gives up the next field.
	minKeptDescriptionBytes = 256
)

// wholeDefinition says how to see a shortened definition whole: through
// describe in gateway mode, through the CLI in flat mode (which has no
// describe tool).
func wholeDefinition(capability string, gateway bool) string {
	if gateway {
		return fmt.Sprintf(`the whole definition: describe {"capabilities":[%q]}`, capability)
	}
	return "the whole definition: sluice describe " + capability
}

// listBudgets returns the byte budget of each definition: sizes[i] is
// definition i's size. Each gets at most perTool; when they would still
// total more than total, the largest are cut to one common budget (never
// below MinToolListingBytes) so that small definitions stay whole.
func listBudgets(sizes []int, perTool, total int) []int {
	out := make([]int, len(sizes))
	sum := 0
	for i, s := range sizes {
		out[i] = min(s, perTool)
		sum += out[i]
	}
	if sum <= total {
		return out
	}
	sorted := append([]int(nil), out...)
	sort.Ints(sorted)
	// Find the largest common cap b with sum(min(s, b)) <= total.
	b, used := MinToolListingBytes, 0
	for i, s := range sorted {
		rest := len(sorted) - i
		if used+s*rest > total {
			b = max(MinToolListingBytes, (total-used)/rest)
			break
		}
		used += s
	}
	for i := range out {
		out[i] = min(out[i], b)
	}
	return out
}

// shortenTool returns the tool definition raw bounded to budget bytes
// (within a few bytes of JSON escaping), and whether it shortened it. It
// gives up, in order: the title's length, icons, _meta, outputSchema, the
// description's length, the input schema (for a permissive one: the tool
// stays callable, the upstream still validates its arguments) and the
// annotations. The description then says the definition was shortened
// and, in whole, how to see it whole.
func shortenTool(raw json.RawMessage, budget int, whole string) (json.RawMessage, bool) {
	return shortenDef(raw, budget, whole, toolMembers, []func(map[string]json.RawMessage){
		func(f map[string]json.RawMessage) { delete(f, "icons") },
		func(f map[string]json.RawMessage) { delete(f, "_meta") },
		func(f map[string]json.RawMessage) { delete(f, "outputSchema") },
		func(f map[string]json.RawMessage) { f["inputSchema"] = json.RawMessage(`{"type":"object"}`) },
		func(f map[string]json.RawMessage) { delete(f, "annotations") },
	})
}

// shortenEntry bounds a listed resource, resource template or prompt the
// way shortenTool bounds a tool. What identifies the entry (uri,
// uriTemplate, name, mimeType, a prompt's argument names and whether they
// are required) is kept; it gives up, in order: the title's length, icons,
// _meta, annotations, the description's length and a prompt's argument
// titles and descriptions. An entry whose identifying members alone are
// over the budget comes back with them whole; the listing then leaves out
// one that is over the per-entry cap (MaxToolListingBytes) and says so in
// a warning, since no shortening can make it fit.
func shortenEntry(raw json.RawMessage, budget int, whole string) (json.RawMessage, bool) {
	return shortenDef(raw, budget, whole, entryMembers, []func(map[string]json.RawMessage){
		func(f map[string]json.RawMessage) { delete(f, "icons") },
		func(f map[string]json.RawMessage) { delete(f, "_meta") },
		func(f map[string]json.RawMessage) { delete(f, "annotations") },
		func(f map[string]json.RawMessage) {
			var args []map[string]json.RawMessage
			if a, ok := f["arguments"]; !ok || json.Unmarshal(a, &args) != nil {
				return
			}
			for _, arg := range args {
				for k := range arg {
					if k != "name" && k != "required" {
						delete(arg, k)
					}
				}
			}
			f["arguments"] = mustJSON(args)
		},
	})
}

// toolMembers and entryMembers are the members a listed tool, and a
// listed resource, template or prompt, can carry to the agent: the
// server library drops any other when it registers the item, so a
// shortened definition gives them up first.
var (
	toolMembers  = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta", "icons", "execution"}
	entryMembers = []string{"uri", "uriTemplate", "name", "title", "description", "mimeType", "size", "annotations", "_meta", "icons", "arguments"}
)

// shortenDef bounds the definition raw to budget bytes: it keeps only the
// known members, gives up what drops remove in order, and says in its
// description that it did.
func shortenDef(raw json.RawMessage, budget int, whole string, known []string, drops []func(map[string]json.RawMessage)) (json.RawMessage, bool) {
	if len(raw) <= budget {
		return raw, false
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return raw, false // register reports it
	}
	for k := range fields {
		if !slices.Contains(known, k) {
			delete(fields, k)
		}
	}
	var desc string
	if d, ok := fields["description"]; ok {
		_ = json.Unmarshal(d, &desc)
	}
	if t, ok := fields["title"]; ok {
		var title string
		if json.Unmarshal(t, &title) == nil && len(title) > maxListedTitleBytes {
			fields["title"] = mustJSON(cutUTF8(title, maxListedTitleBytes))
		}
	}
	note := fmt.Sprintf(" [sluice: definition shortened from %d to %d bytes; %s]", len(raw), budget, whole)
	size := func() int {
		delete(fields, "description")
		return len(mustJSON(fields)) + len(`,"description":""`)
	}
	// fit sets the description to what room is left beside the note, and
	// reports whether that left at least keep bytes of it.
	fit := func(keep int) bool {
		room := budget - size() - len(note)
		if room < keep {
			return false
		}
		fields["description"] = mustJSON(cutJSONString(desc, room) + note)
		return true
	}
	keep := min(len(desc), minKeptDescriptionBytes)
	for i := 0; !fit(keep); i++ {
		if i == len(drops) {
			if !fit(0) { // only the name is left: the note alone
				fields["description"] = mustJSON(note)
			}
			break
		}
		drops[i](fields)
	}
	return mustJSON(fields), true
}

// cutJSONString cuts s so that its JSON encoding (quotes excluded) takes
// at most room bytes, at a rune boundary.
func cutJSONString(s string, room int) string {
	if len(mustJSON(s))-2 <= room {
		return s
	}
	// Binary search the longest prefix that fits once escaped.
	lo, hi := 0, len(s)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if len(mustJSON(cutUTF8(s, mid)))-2 <= room {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return cutUTF8(s, lo)
}

// cutUTF8 is s cut to at most n bytes at a rune boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func mustJSON(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // strings and raw messages always encode
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// clip returns s cut to at most n bytes on a character boundary, with
// "…" when cut: for naming an oversized entry in a log line.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
