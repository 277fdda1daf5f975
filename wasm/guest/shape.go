package guest

import (
	"errors"
	"strconv"
)

// DefaultBudget is the shape filter's default byte budget (16 KiB).
const DefaultBudget = 16384

// MinBudget is the smallest budget ShapeResult accepts: room for the marker.
const MinBudget = 1024

// ErrNotResult reports input that is not a JSON object with a content array.
// Shape no longer fails with it: such input is offloaded whole and shown as
// a prefix of its text (see Shape).
var ErrNotResult = errors.New("shape: input is not an MCP tool result (a JSON object whose content is an array)")

// Shaper keeps MCP tool results within a byte budget. Its buffers are reused
// across calls, so a Shaper is not safe for concurrent use.
type Shaper struct {
	Budget  int                               // bytes; 0 = DefaultBudget
	Offload func(full []byte) (string, error) // stores the full result; nil = not stored
	// Skip, if set, returns the index just past the JSON value starting at
	// index i of the result being shaped (in a guest: InputSkip, the host's
	// native scanner). nil = SkipValue.
	Skip func(i int) (int, error)

	out     []byte // the output (with parts: its own bytes only)
	parts   []Part // with parts: the whole output, in order (see ShapeParts)
	lazy    bool   // this call makes parts: long copies of the input are not copied
	litMark int    // out[litMark:] is not yet in parts
	inBytes int    // bytes of the output that are parts of the input
	content []item
	fixed   [][2]int // spans (key start, value end) of members kept verbatim

	// per-call walk state
	res                []byte
	contentS, scS, scE int
	omitted            int
	topFn              func(k []byte, vs int) (int, error)
	elemFn             func(i int) (int, error)
	itemFn             func(k []byte, vs int) (int, error)
}

// item is one content item found in the single walk: its span and, for the
// kinds that can be cut, where the cuttable parts are.
type item struct {
	s, e     int
	typ      [2]int // raw "type" value
	text     [2]int // raw "text" value (type text)
	resource [2]int // raw "resource" value (type resource)
}

const (
	maxKeptMeta      = 1024 // a top-level _meta up to this size survives shaping
	maxKeptScalar    = 256  // other unknown top-level members up to this size survive
	minTextKeep      = 32   // below this, a cut text is dropped instead
	maxKeptSmallItem = 1024 // room is reserved for later items up to this size
)

// Shape returns the shaped result and true, or (nil, false) when result is
// already within the budget (it then goes on unchanged and nothing is
// offloaded). The returned slice is reused by the next call.
//
// Shaping keeps, in this order of priority: isError, resultType and other
// small top-level members, content items (whole while they fit, then the
// first one that does not fit cut to a prefix with an inline "[… N bytes cut]"
// note, then any later ones that still fit whole), structuredContent if it
// still fits whole. Every omission is counted in a final text item that names
// the omitted size and the handle of the full result. The output is valid
// JSON and never longer than the budget, hence never longer than the input.
func (s *Shaper) Shape(result []byte) ([]byte, bool, error) {
	s.lazy = false
	return s.shape(result)
}

// ShapeParts is Shape with an output made of parts (see ReplaceParts):
// the runs of the input it keeps are named, not copied, when they are
// long. data and parts are reused by the next call.
func (s *Shaper) ShapeParts(result []byte) (data []byte, parts []Part, shaped bool, err error) {
	s.lazy = true
	out, shaped, err := s.shape(result)
	if !shaped || err != nil {
		return nil, nil, shaped, err
	}
	if len(s.parts) == 0 { // a result it could not walk: all its own bytes
		s.parts = append(s.parts, Part{N: len(out)})
	}
	return out, s.parts, true, nil
}

// minPart: shorter runs of the input are copied into the output's own
// bytes (a part costs a host call).
const minPart = 256

// copyIn appends result[i:j] to the output: as a part of the input when
// it is long and the call makes parts, else as bytes.
func (s *Shaper) copyIn(result []byte, i, j int) {
	if !s.lazy || j-i < minPart {
		s.out = append(s.out, result[i:j]...)
		return
	}
	s.flushLit()
	s.parts = append(s.parts, Part{Input: true, Off: i, N: j - i})
	s.inBytes += j - i
}

// flushLit ends the run of the output's own bytes so far as a part.
func (s *Shaper) flushLit() {
	if len(s.out) > s.litMark {
		s.parts = append(s.parts, Part{Off: s.litMark, N: len(s.out) - s.litMark})
		s.litMark = len(s.out)
	}
}

// size is the output's length so far.
func (s *Shaper) size() int { return len(s.out) + s.inBytes }

func (s *Shaper) shape(result []byte) ([]byte, bool, error) {
	budget := s.Budget
	if budget == 0 {
		budget = DefaultBudget
	}
	if budget < MinBudget {
		return nil, false, errors.New("shape: budgetBytes must be at least " + strconv.Itoa(MinBudget))
	}
	if len(result) <= budget {
		return nil, false, nil
	}
	s.parts, s.litMark, s.inBytes = s.parts[:0], 0, 0
	s.fixed = s.fixed[:0]
	s.content = s.content[:0]
	s.res, s.contentS, s.scS, s.scE, s.omitted = result, -1, -1, -1, 0
	if s.topFn == nil { // bound once: method values passed as funcs allocate
		s.topFn, s.elemFn, s.itemFn = s.top, s.elem, s.itemMember
	}
	// One walk over the input: the content array and its items are parsed
	// in place; every other value is skipped once (by the host in a guest).
	_, err := Object(result, 0, s.topFn)
	scS, scE, omitted := s.scS, s.scE, s.omitted
	s.res = nil
	handle := ""
	if s.Offload != nil {
		if h, err := s.Offload(result); err == nil {
			handle = h
		}
	}
	if err != nil {
		// Not a result shaping can walk: never pass it on whole.
		out := s.shapeRaw(result, budget, handle)
		return out, true, nil
	}
	// (A result without content is shaped as one with none.)

	// The marker is written last but its room is reserved first, sized for
	// the largest omitted count possible.
	markerMax := markerSize(budget, len(result), len(result), handle)

	s.out = append(s.out[:0], `{"content":[`...)
	fixedLen := 0
	for _, f := range s.fixed {
		fixedLen += 1 + f[1] - f[0]
	}
	// {"content":[ ... ,MARKER] ,fixed... }
	remaining := budget - s.size() - markerMax - 1 /* ] */ - fixedLen - 1 /* } */
	if remaining < 0 {
		// Only possible with very large kept members: drop them.
		for _, f := range s.fixed {
			omitted += f[1] - f[0]
		}
		s.fixed = s.fixed[:0]
		remaining = budget - s.size() - markerMax - 2
	}
	cut := false
	for i := range s.content {
		it := &s.content[i]
		sz := it.e - it.s
		sep := 1 // the comma before the marker or the next item
		if sz+sep <= remaining {
			s.copyIn(result, it.s, it.e)
			s.out = append(s.out, ',')
			remaining -= sz + sep
			continue
		}
		if !cut {
			cut = true
			// Leave room for small items after this one (notes such as
			// "page 1 of 3"), up to a quarter of what is left.
			reserve := 0
			for _, later := range s.content[i+1:] {
				if n := later.e - later.s + 1; n <= maxKeptSmallItem {
					reserve += n
				}
			}
			reserve = min(reserve, remaining/4)
			before := s.size()
			s.cutItem(result, it, remaining-reserve)
			kept := s.size() - before
			remaining -= kept
			omitted += sz - kept
			continue
		}
		omitted += sz
	}
	scKeep := scS >= 0 && 1+len(`"structuredContent":`)+scE-scS <= remaining
	if scS >= 0 && !scKeep {
		omitted += scE - scS
	}
	s.out = marker(s.out, budget, len(result), omitted, handle)
	s.out = append(s.out, ']')
	if scKeep {
		s.out = append(s.out, `,"structuredContent":`...)
		s.copyIn(result, scS, scE)
	}
	for _, f := range s.fixed {
		s.out = append(s.out, ',')
		s.copyIn(result, f[0], f[1])
	}
	s.out = append(s.out, '}')
	if n := s.size(); n > budget || n >= len(result) {
		return nil, false, errors.New("shape: internal error: shaped result over budget")
	}
	if s.lazy {
		s.flushLit()
	}
	return s.out, true, nil
}

func (s *Shaper) skip(i int) (int, error) {
	if s.Skip != nil {
		return s.Skip(i)
	}
	return SkipValue(s.res, i)
}

// top handles one top-level member.
func (s *Shaper) top(k []byte, vs int) (int, error) {
	result := s.res
	if KeyIs(k, "content") && result[vs] == '[' {
		s.contentS = vs
		return Array(result, vs, s.elemFn)
	}
	ve, err := s.skip(vs)
	if err != nil {
		return 0, err
	}
	switch {
	case KeyIs(k, "structuredContent"):
		s.scS, s.scE = vs, ve
	case KeyIs(k, "content"):
		return 0, ErrNotResult // content that is not an array
	case KeyIs(k, "_meta") && ve-vs <= maxKeptMeta,
		ve-vs <= maxKeptScalar:
		s.fixed = append(s.fixed, [2]int{ptrDiff(result, k), ve})
	default:
		s.omitted += ve - vs
	}
	return ve, nil
}

// elem handles one content item.
func (s *Shaper) elem(i int) (int, error) {
	s.content = append(s.content, item{s: i})
	var e int
	var err error
	if s.res[i] == '{' {
		e, err = Object(s.res, i, s.itemFn)
	} else {
		e, err = s.skip(i)
	}
	s.content[len(s.content)-1].e = e
	return e, err
}

// itemMember records the parts of the current item that can be cut.
func (s *Shaper) itemMember(k []byte, vs int) (int, error) {
	ve, err := s.skip(vs)
	it := &s.content[len(s.content)-1]
	switch {
	case KeyIs(k, "type"):
		it.typ = [2]int{vs, ve}
	case KeyIs(k, "text"):
		it.text = [2]int{vs, ve}
	case KeyIs(k, "resource"):
		it.resource = [2]int{vs, ve}
	}
	return ve, err
}

// ptrDiff returns the offset of sub inside b (sub must be a subslice of b).
func ptrDiff(b, sub []byte) int {
	return cap(b) - cap(sub)
}

// cutItem appends a shortened form of the content item (plus a trailing
// comma) that fits in room bytes, or nothing.
func (s *Shaper) cutItem(result []byte, it *item, room int) {
	typ := result[it.typ[0]:it.typ[1]]
	text := result[it.text[0]:it.text[1]]
	res := result[it.resource[0]:it.resource[1]]
	switch {
	case KeyIs(typ, "text") && len(text) >= 2 && text[0] == '"':
		s.cutText(result, `{"type":"text","text":"`, `"}`, it.text[0], text, room)
	case KeyIs(typ, "resource") && len(res) > 0 && res[0] == '{':
		rtext, ok := Lookup(res, "text")
		if !ok || len(rtext) < 2 || rtext[0] != '"' {
			break
		}
		head := []byte(`{"type":"resource","resource":{`)
		if uri, ok := Lookup(res, "uri"); ok && len(uri) <= 2048 {
			head = append(head, `"uri":`...)
			head = append(head, uri...)
			head = append(head, ',')
		}
		if mt, ok := Lookup(res, "mimeType"); ok && len(mt) <= 256 {
			head = append(head, `"mimeType":`...)
			head = append(head, mt...)
			head = append(head, ',')
		}
		head = append(head, `"text":"`...)
		s.cutText(result, string(head), `"}}`, it.resource[0]+ptrDiff(res, rtext), rtext, room)
	}
}

// cutText appends head + prefix-of-text + note + tail + ',' within room;
// text is the raw string (quotes included) at result[at:].
func (s *Shaper) cutText(result []byte, head, tail string, at int, text []byte, room int) {
	raw := text[1 : len(text)-1]
	noteMax := len(" \u2026 [") + digits(len(raw)) + len(" bytes cut]")
	avail := room - len(head) - len(tail) - noteMax - 1
	if avail < minTextKeep {
		return
	}
	n := CutRaw(raw, avail)
	s.out = append(s.out, head...)
	s.copyIn(result, at+1, at+1+n)
	s.out = cutNote(s.out, len(raw)-n)
	s.out = append(s.out, tail...)
	s.out = append(s.out, ',')
}

func cutNote(dst []byte, n int) []byte {
	dst = append(dst, " \u2026 ["...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, " bytes cut]"...)
}

// The marker's fixed parts (see marker).
const (
	mkHead     = `{"type":"text","text":"[sluice: this result was `
	mkOver     = ` bytes, over the `
	mkBudget   = `-byte context budget; `
	mkOmitted  = ` bytes were omitted. `
	mkStored   = `The full result is stored under handle `
	mkRead     = `; read it in pages by that handle.]"}`
	mkLink     = `,{"type":"resource_link","uri":"` + ResultURIPrefix
	mkName     = `","name":"`
	mkDesc     = `","mimeType":"application/json","description":"the full result (`
	mkPages    = ` bytes), readable in pages"}`
	mkNotStore = `The full result could not be stored.]"}`
)

// marker appends the final text item naming what was omitted and where the
// full result is.
func marker(dst []byte, budget, total, omitted int, handle string) []byte {
	dst = append(dst, mkHead...)
	dst = strconv.AppendInt(dst, int64(total), 10)
	dst = append(dst, mkOver...)
	dst = strconv.AppendInt(dst, int64(budget), 10)
	dst = append(dst, mkBudget...)
	dst = strconv.AppendInt(dst, int64(omitted), 10)
	dst = append(dst, mkOmitted...)
	if handle != "" {
		dst = append(dst, mkStored...)
		h := len(dst)
		dst = appendPlain(dst, handle)
		plain := dst[h:]
		dst = append(dst, mkRead...)
		// The same, for clients: a link to the stored result.
		dst = append(dst, mkLink...)
		dst = append(dst, plain...)
		dst = append(dst, mkName...)
		dst = append(dst, dst[h:h+len(handle)]...)
		dst = append(dst, mkDesc...)
		dst = strconv.AppendInt(dst, int64(total), 10)
		dst = append(dst, mkPages...)
	} else {
		dst = append(dst, mkNotStore...)
	}
	return dst
}

// markerSize is len(marker(nil, budget, total, omitted, handle)), without
// building it.
func markerSize(budget, total, omitted int, handle string) int {
	n := len(mkHead) + digits(total) + len(mkOver) + digits(budget) + len(mkBudget) + digits(omitted) + len(mkOmitted)
	if handle == "" {
		return n + len(mkNotStore)
	}
	return n + len(mkStored) + 3*len(handle) + len(mkRead) + len(mkLink) + len(mkName) + len(mkDesc) + digits(total) + len(mkPages)
}

// ResultURIPrefix names a stored result as a resource:
// sluice://results/<handle>.
const ResultURIPrefix = "sluice://results/"

// appendPlain appends a handle: opaque but short and plain; anything that
// would need escaping becomes '_'.
func appendPlain(dst []byte, h string) []byte {
	for i := 0; i < len(h); i++ {
		if c := h[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			dst = append(dst, '_')
		} else {
			dst = append(dst, c)
		}
	}
	return dst
}

// shapeRaw shapes input that is not a result it can walk (not JSON, not
// an object, content not an array): the model gets a prefix of its text,
// cut within the budget, and the marker naming the stored whole.
func (s *Shaper) shapeRaw(result []byte, budget int, handle string) []byte {
	const head, tail = `{"content":[{"type":"text","text":`, `},`
	room := budget - len(head) - len(tail) - markerSize(budget, len(result), len(result), handle) - 2 /* ]} */ - len(" \u2026 [") - digits(len(result)) - len(" bytes cut]") - 2
	n := min(len(result), max(room, 0))
	var q []byte
	for {
		for n > 0 && n < len(result) && result[n]&0xC0 == 0x80 {
			n-- // not inside a UTF-8 sequence
		}
		q = appendQuoteBody(s.out[:0], result[:n])
		if len(q) <= room || n == 0 {
			break
		}
		n = max(0, n-(len(q)-room)-1)
	}
	body := append([]byte(nil), q...)
	out := append(s.out[:0], head...)
	out = append(out, '"')
	out = append(out, body...)
	out = cutNote(out, len(result)-n)
	out = append(out, '"')
	out = append(out, tail...)
	out = marker(out, budget, len(result), len(result)-n, handle)
	out = append(out, "]}"...)
	s.out = out
	return out
}

func digits(n int) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}
