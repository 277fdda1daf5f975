package guest

import (
	"bytes"
	"errors"
	"math/bits"
)

// Redaction of whole results: every string, found by keyword (see "Why
// the guest asks the host where the anchors are" in redact.go).

var errNotObject = errors.New("redact: input is not a JSON object")

// joinReach is how much of each side of a boundary between adjacent text
// items is searched for a secret split across it.
const joinReach = 512

// textItem is a text content item: the span of its raw "text" string and
// what the search across boundaries found for it.
type textItem struct {
	s, e   int
	next   bool // the next content item is a text item too
	head   edge // mask its first bytes (a secret that began in the item before)
	inside bool // the whole item lies inside a private key that began before it
}

// edge masks the first or last n decoded bytes of a string.
type edge struct {
	n    int
	rule string
}

// RedactResult masks secrets in every string of the result (content items
// of every type, structuredContent, _meta, annotations; values and member
// names alike) and in secrets split across adjacent text items. It
// returns (nil, false, nil) when nothing had to change. The returned slice
// is reused by the next call.
func (r *Redactor) RedactResult(result []byte) ([]byte, bool, error) {
	i := SkipSpace(result, 0)
	if i >= len(result) || result[i] != '{' {
		return nil, false, errNotObject
	}
	if e, err := r.skipValue(result, i); err != nil || SkipSpace(result, e) != len(result) {
		return nil, false, errNotObject
	}
	find := r.Find
	if len(r.extra) > 0 {
		find = r.allStrings // configured patterns have no anchors: every string
	} else if find == nil {
		if r.native == nil {
			r.native = nativeFind()
		}
		find = r.native
	}
	r.items = r.items[:0]
	if !r.noJoin {
		r.textItems(result)
	}
	if len(r.recs) == 0 {
		r.recs = make([]FindRecord, 1024)
	}
	w := resultWriter{r: r, b: result, out: r.out[:0]}
	r.cur = r.cur[:0]
	off, from := 0, 0
	for {
		n, err := find(result, off, from, findKeys, r.recs)
		if err != nil {
			return nil, false, errors.New("redact: " + err.Error())
		}
		for _, rec := range r.recs[:n] {
			if f := findFollow[rec.Key]; f != nil {
				if e := int(rec.Pos) + keyLens[rec.Key]; e < int(rec.End)-1 && !f[result[e]] {
					continue // what follows rules every match out
				}
			}
			if len(r.cur) > 0 && rec.Start != r.cur[0].Start {
				if err := w.flush(); err != nil {
					return nil, false, err
				}
			}
			r.cur = append(r.cur, rec)
		}
		if n < len(r.recs) {
			break
		}
		last := r.recs[n-1]
		off, from = int(last.Start), int(last.Pos)+1
	}
	if err := w.flush(); err != nil {
		return nil, false, err
	}
	if err := w.itemsBefore(len(result)); err != nil {
		return nil, false, err
	}
	r.out = w.out
	if !w.changed {
		return nil, false, nil
	}
	w.out = append(w.out, result[w.last:]...)
	r.out = w.out
	return w.out, true, nil
}

func (r *Redactor) skipValue(b []byte, i int) (int, error) {
	if r.Skip != nil {
		return r.Skip(i)
	}
	return SkipValue(b, i)
}

// allStrings is a FindFunc reporting every string once (Key uKey: redact
// it whole), for configured patterns.
func (r *Redactor) allStrings(in []byte, offset, from int, _ []byte, buf []FindRecord) (int, error) {
	n := 0
	for i := offset; i < len(in) && n < len(buf); {
		q := bytes.IndexByte(in[i:], '"')
		if q < 0 {
			break
		}
		s := i + q
		var e int
		var err error
		if r.Skip != nil {
			e, err = r.Skip(s)
		} else {
			e, err = SkipString(in, s)
		}
		if err != nil {
			return 0, err
		}
		i = e
		if s+1 >= from {
			buf[n] = FindRecord{int32(s), int32(e), int32(s + 1), uKey}
			n++
		}
	}
	return n, nil
}

// textItems records the text items of the result's content array, in
// order (member names compared after unescaping). A result it cannot walk
// has none: its strings are still redacted one by one.
func (r *Redactor) textItems(b []byte) {
	_, err := Object(b, 0, func(k []byte, vs int) (int, error) {
		if !KeyIs(k, "content") || b[vs] != '[' {
			return r.skipValue(b, vs)
		}
		prevText := false
		return Array(b, vs, func(is int) (int, error) {
			if b[is] != '{' {
				prevText = false
				return r.skipValue(b, is)
			}
			isText := false
			ts, te := -1, -1
			e, err := Object(b, is, func(k []byte, vs int) (int, error) {
				ve, err := r.skipValue(b, vs)
				if err != nil {
					return 0, err
				}
				switch {
				case KeyIs(k, "type"):
					isText = b[vs] == '"' && KeyIs(b[vs:ve], "text")
				case KeyIs(k, "text") && b[vs] == '"':
					ts, te = vs, ve
				}
				return ve, nil
			})
			if err != nil {
				return 0, err
			}
			isText = isText && ts >= 0
			if isText {
				if prevText {
					r.items[len(r.items)-1].next = true
				}
				r.items = append(r.items, textItem{s: ts, e: te})
			}
			prevText = isText
			return e, nil
		})
	})
	if err != nil {
		r.items = r.items[:0]
	}
}

// resultWriter assembles the redacted result: raw bytes up to each
// rewritten span, then the span's new form.
type resultWriter struct {
	r       *Redactor
	b       []byte
	out     []byte
	last    int // b[:last] is accounted for in out
	changed bool
	item    int // next text item to handle
}

// replace puts repl in place of b[s:e].
func (w *resultWriter) replace(s, e int, repl []byte) {
	w.out = append(w.out, w.b[w.last:s]...)
	w.out = append(w.out, repl...)
	w.last = e
	w.changed = true
}

// flush redacts the string whose records are r.cur (and, first, the text
// items before it that have none).
func (w *resultWriter) flush() error {
	r := w.r
	if len(r.cur) == 0 {
		return nil
	}
	s, e := int(r.cur[0].Start), int(r.cur[0].End)
	if err := w.itemsBefore(s); err != nil {
		return err
	}
	var it *textItem
	if w.item < len(r.items) && r.items[w.item].s == s {
		it = &r.items[w.item]
		w.item++
	}
	err := w.redactString(s, e, r.cur, it)
	r.cur = r.cur[:0]
	return err
}

// itemsBefore handles the text items that start before pos and have no
// keyword: they may still hold part of a secret split across items.
func (w *resultWriter) itemsBefore(pos int) error {
	for w.item < len(w.r.items) && w.r.items[w.item].s < pos {
		it := &w.r.items[w.item]
		w.item++
		if err := w.redactString(it.s, it.e, nil, it); err != nil {
			return err
		}
	}
	return nil
}

// redactString redacts the string b[s:e] given its keyword records; it
// is text item it (nil if not one).
func (w *resultWriter) redactString(s, e int, recs []FindRecord, it *textItem) error {
	r := w.r
	var head, tail edge
	if it != nil {
		head = it.head
		if it.next {
			var err error
			tail, err = w.join(it, recs)
			if err != nil {
				return err
			}
		}
		if it.inside {
			head = edge{n: -1, rule: builtinRules[privateKeyRule].name}
		}
	}
	whole := head.n != 0 || tail.n != 0
	for _, rec := range recs {
		if rec.Key == uKey {
			whole = true
			break
		}
	}
	if whole {
		var err error
		r.str, err = AppendUnquote(r.str[:0], w.b[s:e])
		if err != nil {
			return errors.New("redact: " + err.Error())
		}
		text := applyEdges(r.str, head, tail)
		text, changed := r.RedactText(text)
		if changed || head.n != 0 || tail.n != 0 {
			r.win = AppendQuote(r.win[:0], text)
			w.replace(s, e, r.win)
		}
		return nil
	}
	if len(recs) == 0 {
		return nil
	}
	return w.windows(s, e, recs)
}

// applyEdges masks the first head.n and last tail.n bytes of text (-1:
// all of it).
func applyEdges(text []byte, head, tail edge) []byte {
	if head.n == 0 && tail.n == 0 {
		return text
	}
	hn, tn := head.n, tail.n
	if hn < 0 || tn < 0 || hn+tn >= len(text) {
		name := head.rule
		if name == "" {
			name = tail.rule
		}
		return append([]byte("[REDACTED:"+name+"]"), nil...)
	}
	var out []byte
	if hn > 0 {
		out = append(out, "[REDACTED:"+head.rule+"]"...)
	}
	out = append(out, text[hn:len(text)-tn]...)
	if tn > 0 {
		out = append(out, "[REDACTED:"+tail.rule+"]"...)
	}
	return out
}

// windows redacts a string without \u escapes around its keywords only.
func (w *resultWriter) windows(s, e int, recs []FindRecord) error {
	r, b := w.r, w.b
	cs, ce := s+1, e-1
	k := 0
	// extend grows the window end to cover the records within reach of it.
	extend := func(end int) int {
		for k < len(recs) && int(recs[k].Pos) < end+4 {
			end = max(end, min(ce, int(recs[k].Pos)+findReach[recs[k].Key]))
			k++
		}
		return end
	}
	for k < len(recs) {
		first := k
		a := alignStart(b, cs, int(recs[k].Pos)-1)
		end := extend(int(recs[k].Pos))
		for {
			end = alignEnd(b, cs, ce, end)
			text, err := w.decodeWindow(a, end, recs[first:k])
			if err != nil {
				return err
			}
			r.clip = false
			nt, changed := r.applyRules(text)
			if r.clip && end < ce {
				end = extend(min(ce, end+max(end-a, 256)))
				continue
			}
			if changed {
				r.str = appendQuoteBody(r.str[:0], nt)
				w.replace(a, end, r.str)
			}
			break
		}
	}
	return nil
}

// decodeWindow decodes the raw string bytes b[a:end] (no \u escapes)
// into r.win and makes the candidates of every rule from the records'
// positions, mapped to the decoded text (a record on the second byte of
// an escape maps to the escape's byte, where no anchor check passes).
func (w *resultWriter) decodeWindow(a, end int, recs []FindRecord) ([]byte, error) {
	r, raw := w.r, w.b[a:end]
	for m := r.builtins &^ uEscapeBit; m != 0; m &= m - 1 {
		k := bits.TrailingZeros32(m)
		r.cands[k] = r.cands[k][:0]
	}
	r.win = r.win[:0]
	ri, last := 0, -1
	mark := func(upto, shift int) { // records before raw index upto sit at decoded index raw-shift
		for ; ri < len(recs) && int(recs[ri].Pos)-a < upto; ri++ {
			if d := int(recs[ri].Pos) - a - shift; d != last && d >= 0 {
				last = d
				r.pending = append(r.pending, d)
			}
		}
	}
	r.pending = r.pending[:0]
	for i := 0; i < len(raw); {
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 {
			j = len(raw)
		} else {
			j += i
		}
		mark(j, i-len(r.win))
		r.win = append(r.win, raw[i:j]...)
		if j == len(raw) {
			break
		}
		if j+1 >= len(raw) {
			return nil, errors.New("redact: " + ErrSyntax.Error())
		}
		mark(j+2, j-len(r.win)) // a record on the escape maps to its decoded byte
		c := raw[j+1]
		switch c {
		case '"', '\\', '/':
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		default:
			return nil, errors.New("redact: " + ErrSyntax.Error())
		}
		r.win = append(r.win, c)
		i = j + 2
	}
	for _, d := range r.pending {
		if d < len(r.win) {
			r.candidate(r.win, d, r.builtins)
		}
	}
	return r.win, nil
}

// alignStart moves a raw string position that falls on the second byte
// of an escape back to the backslash; positions before cs become cs.
func alignStart(b []byte, cs, a int) int {
	if a <= cs {
		return cs
	}
	n := 0
	for j := a - 1; j >= cs && b[j] == '\\'; j-- {
		n++
	}
	if n%2 == 1 {
		a--
	}
	for k := 0; k < 3 && a > cs && b[a]&0xC0 == 0x80; k++ {
		a-- // not inside a UTF-8 sequence: the window is re-encoded whole
	}
	return a
}

// alignEnd moves a window end that would split an escape past it (the
// string has no \u escapes, so escapes are two bytes).
func alignEnd(b []byte, cs, ce, end int) int {
	if end >= ce {
		return ce
	}
	n := 0
	for j := end - 1; j >= cs && b[j] == '\\'; j-- {
		n++
	}
	if n%2 == 1 {
		end++
	}
	for k := 0; k < 3 && end < ce && b[end]&0xC0 == 0x80; k++ {
		end++
	}
	return min(end, ce)
}

// join looks for secrets split across the boundary between text item it
// and the items after it: the decoded end of it (from its first
// private-key BEGIN, if any, else joinReach bytes) joined to the start of
// the adjacent text items after it (joinReach bytes, more when a match or
// a check runs to that end). A match that crosses the boundary masks the
// end of it (the returned edge) and the start of each later item it
// reaches (their head, or all of an item it covers); a private key still
// open where the joined text ends covers the items after, up to an END
// marker.
func (w *resultWriter) join(it *textItem, recs []FindRecord) (edge, error) {
	r, b := w.r, w.b
	if it.inside {
		// it lies inside an open key: so does the next one, up to its END.
		return edge{}, w.openKey(&r.items[w.item])
	}
	as, ae := it.s+1, it.e-1
	ls := max(as, ae-joinReach)
	for _, rec := range recs {
		if rec.Key == 0 && int(rec.Pos) < ls { // "-----begin"
			ls = int(rec.Pos)
		}
	}
	ls = alignStart(b, as, ls)
	var err error
	r.win, err = appendUnquoteBody(r.win[:0], b[ls:ae])
	if err != nil {
		return edge{}, errors.New("redact: " + err.Error())
	}
	nl := len(r.win)
	type part struct {
		idx, off, end int
		whole         bool
	}
	var parts [8]part
	for budget := joinReach; ; budget *= 16 {
		j := r.win[:nl]
		np := 0
		for x := w.item; x < len(r.items) && np < len(parts); x++ {
			nx := &r.items[x]
			cs, ce := nx.s+1, nx.e-1
			re := alignEnd(b, cs, ce, cs+budget-(len(j)-nl))
			off := len(j)
			if j, err = appendUnquoteBody(j, b[cs:re]); err != nil {
				return edge{}, errors.New("redact: " + err.Error())
			}
			parts[np] = part{idx: x, off: off, end: len(j), whole: re == ce}
			np++
			if re < ce || !nx.next || len(j)-nl >= budget {
				break
			}
		}
		r.win = j
		r.clip = false
		r.scan(j, r.builtins)
		var tail edge
		open := false
		var spans [][2]int
		var names []string
		for i := range builtinRules {
			if r.builtins&(1<<i) == 0 || len(r.cands[i]) == 0 {
				continue
			}
			for _, m := range r.matches(i, j) {
				if m[0] < nl && m[1] > nl {
					spans = append(spans, [2]int{m[0], m[1]})
					names = append(names, builtinRules[i].name)
					if i == privateKeyRule && m[1] == len(j) {
						open = true
					}
				}
			}
		}
		if r.clip && budget == joinReach {
			continue // look further once
		}
		for k, sp := range spans {
			if nl-sp[0] > tail.n {
				tail = edge{n: nl - sp[0], rule: names[k]}
			}
			for _, pt := range parts[:np] {
				nx := &r.items[pt.idx]
				switch {
				case sp[1] >= pt.end && pt.whole:
					nx.head = edge{n: -1, rule: names[k]} // all of it
				case sp[1] > pt.off && sp[1]-pt.off > nx.head.n && nx.head.n >= 0:
					nx.head = edge{n: sp[1] - pt.off, rule: names[k]}
				}
			}
		}
		if last := parts[np-1]; open && last.whole {
			r.items[last.idx].inside = true
		}
		return tail, nil
	}
}

// openKey masks the start of item nx up to the end of the first private
// key END marker in it (all of it when it has none: the key goes on).
func (w *resultWriter) openKey(nx *textItem) error {
	r := w.r
	var err error
	r.win, err = AppendUnquote(r.win[:0], w.b[nx.s:nx.e])
	if err != nil {
		return errors.New("redact: " + err.Error())
	}
	r.endFrom, r.endAt = -1, -1
	if e := r.nextPEMEnd(r.win, 0); e >= 0 {
		if e > nx.head.n {
			nx.head = edge{n: e, rule: builtinRules[privateKeyRule].name}
		}
		return nil
	}
	nx.inside = true
	return nil
}
