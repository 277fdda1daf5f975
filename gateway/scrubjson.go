package gateway

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// This file scrubs the JSON-RPC messages a server writes on its stdout
// (or a remote server answers) of the credentials the gateway gave it,
// before the client core reads them.
//
// # Why the messages are scrubbed where they enter
//
// A server that repeats what it was started with (an error message
// quoting its argv, a log notification dumping its environment, a tool
// that echoes a header) would otherwise put the credential in every
// place a message goes: the agent's result, the catalog cache on disk,
// `sluice find`, traces and offload files, the dashboard and the log.
// One rewrite where each message is received covers them all, and
// costs nothing for a server given no credential (no scrubber is set).
//
// # Why JSON-aware
//
// A secret inside a JSON string may be escaped ("\u003c" for '<', "\/"
// for '/', "\"" for a quote), and replacing bytes blindly could break
// the message (a match across a string's end). A message holding no
// secret in any of its printed forms is passed on as it is (one search
// per form); one that does is walked value by value: a string is
// decoded, scrubbed and written again when it changed; a number or a
// match across values is replaced, as the smallest value around it, by
// the string "(hidden)". A message that is not JSON is scrubbed as text.

// maxScrubDepth bounds the nesting the walk descends; a deeper value
// that holds a secret is replaced whole.
const maxScrubDepth = 64

// messages is ScrubMessage as mcp.Options.Scrub wants it; nil for a nil
// scrubber (a server given no credential: its messages are not looked at).
func (ss *secretScrubber) messages() func([]byte) []byte {
	if ss == nil {
		return nil
	}
	return ss.ScrubMessage
}

// ScrubMessage returns msg with every secret hidden, still valid JSON
// when msg was; msg itself (no copy) when it holds none.
//
// # Why the walk has no recursion and reads each byte a bounded number of times
//
// A line may be as long as the server's line cap (64 MiB) and nested as
// deep as its bytes allow ("[[[[…"). A walk that recursed per level
// would grow the goroutine's stack with the depth (past 1 GB the Go
// runtime ends the whole process, every other server with it); one
// that searched each level's subtree again would cost depth×length of
// the reader's time. So the message is scrubbed in one pass that keeps,
// per form, the offset of its next match, and a container deeper than
// maxScrubDepth is skipped over as one value: kept as it is when it
// holds no form, hidden whole when it does. A match across values is
// then found in one more pass over the result, with a stack of the
// containers open only down to maxScrubDepth.
//
// # Why a string with a \u or \/ escape is decoded
//
// A client reads a string's text, not its bytes: "\u0068unter2" is
// "hunter2", and an encoder may escape any character that way (Gson
// writes '=' and '\” as \u003d and \u0027, PHP a quote as \u0022)
// or escape '/' in one place and not another. No list of forms covers
// them all, so a string holding such an escape is decoded and its text
// searched for the secrets; the rest (\n, \", \\) is written the one
// way every encoder does, which the forms hold. A message with no form
// and no such escape is passed on after one search per form and one
// for a backslash.
//
// # Why an escaped message is decoded whole before it is walked
//
// Some encoders escape in every message (PHP writes each '/' as \/ and
// each non-ASCII letter as \uXXXX, .NET escapes + ' < > &), so for
// their servers "holds such an escape" is every message. Decoding every
// escape of the whole message into one reused buffer keeps each
// string's text contiguous in it (a string's decoded body is its
// escapes and bytes decoded in place), so a secret any string's text
// holds is found there by the same searches; a message where none is
// found is passed on without the walk, which decodes string by string.
func (ss *secretScrubber) ScrubMessage(msg []byte) []byte {
	if !ss.contains(msg) && (!decodable(msg) || !ss.containsDecoded(msg)) {
		return msg
	}
	i := skipSpace(msg, 0)
	if i == len(msg) {
		return ss.Scrub(msg)
	}
	end := valueEnd(msg, i)
	tree, changed := ss.scrubTree(msg[i:end])
	if t, hid := ss.hideSpans(tree); hid {
		tree, changed = t, true
	}
	if msg[i] == '{' && tree[0] != '{' {
		// the secret runs across the message's own members
		return withheld(msg[i:end])
	}
	out := tree
	if i > 0 || end < len(msg) {
		out = append(append(make([]byte, 0, len(msg)), msg[:i]...), tree...)
		out = append(out, ss.Scrub(msg[end:])...) // nothing but white space in a valid message
		changed = changed || !bytes.Equal(out, msg)
	}
	if ss.contains(out) && !json.Valid(out) {
		return ss.Scrub(msg) // not JSON (noise): scrubbed as text
	}
	if !changed {
		return msg
	}
	return out
}

// decodeBufs holds the buffers containsDecoded decodes into; one larger
// than maxPooledDecode is left to the collector.
var decodeBufs sync.Pool

const maxPooledDecode = 1 << 20

// containsDecoded tells whether msg, every JSON escape in it decoded,
// holds a form of a secret (see ScrubMessage).
func (ss *secretScrubber) containsDecoded(msg []byte) bool {
	bp, _ := decodeBufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	buf := (*bp)[:0]
	if cap(buf) < len(msg) {
		buf = make([]byte, 0, len(msg)) // a decode is never longer than its input
	}
	buf = decodeEscapes(buf, msg)
	found := ss.contains(buf)
	if cap(buf) <= maxPooledDecode {
		*bp = buf
		decodeBufs.Put(bp)
	}
	return found
}

// decodeEscapes appends b to dst with each JSON string escape replaced
// by what it stands for, as encoding/json decodes it (a lone surrogate
// is U+FFFD); a malformed escape is copied as it is.
func decodeEscapes(dst, b []byte) []byte {
	for {
		k := bytes.IndexByte(b, '\\')
		if k < 0 || k+1 == len(b) {
			return append(dst, b...)
		}
		dst = append(dst, b[:k]...)
		c := b[k+1]
		n := 2
		switch c {
		case '"', '\\', '/':
			dst = append(dst, c)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(b[k+2:])
			if !ok {
				dst = append(dst, '\\', c)
				break
			}
			n = 6
			if utf16.IsSurrogate(r) {
				r2, ok2 := rune(-1), false
				if len(b) >= k+12 && b[k+6] == '\\' && b[k+7] == 'u' {
					r2, ok2 = hex4(b[k+8:])
				}
				if d := utf16.DecodeRune(r, r2); ok2 && d != utf8.RuneError {
					r, n = d, 12
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
		default:
			dst = append(dst, '\\', c)
		}
		b = b[k+n:]
	}
}

// hex4 reads the four hex digits a \u escape carries.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// decodable tells whether b holds a \u or \/ escape (see ScrubMessage).
func decodable(b []byte) bool {
	for {
		k := bytes.IndexByte(b, '\\')
		if k < 0 || k+1 == len(b) {
			return false
		}
		if c := b[k+1]; c == 'u' || c == '/' {
			return true
		}
		b = b[k+2:]
	}
}

// withheld is the message that replaces obj when a secret runs across
// its members: an error answer to the same request when obj has a clean
// id, else a line the client sets aside.
func withheld(obj []byte) []byte {
	var m struct {
		ID     json.RawMessage  `json:"id"`
		Method *json.RawMessage `json:"method"`
	}
	err := json.Unmarshal(obj, &m)
	if err == nil && m.Method == nil && len(m.ID) > 0 && string(m.ID) != "null" && m.ID[0] != '{' && m.ID[0] != '[' {
		return []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32603,"message":"the server's answer repeated a credential it was given; withheld"}}`)
	}
	// A request or notification (its id is the server's, not one of
	// ours to answer), or no clean id: a log line in its place, valid
	// JSON-RPC, so a client that fails on stdout noise keeps the server.
	return []byte(withheldNote)
}

// withheldNote replaces a server's request or notification that
// withheld gives up on.
const withheldNote = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","logger":"sluice","data":"the server's message repeated a credential it was given; withheld"}}`

// scrubTree is v (one JSON value holding a secret form) with each match
// inside a string (key or value) replaced by Hidden, each number or
// literal holding one and each container deeper than maxScrubDepth
// holding one replaced by the string Hidden, and everything else as it
// is, in one pass without recursion.
func (ss *secretScrubber) scrubTree(v []byte) ([]byte, bool) {
	nx := ss.nextMatches(v)
	var dst []byte
	done := 0 // v[:done] is in dst
	replace := func(from, to int, with []byte) {
		if dst == nil {
			dst = make([]byte, 0, len(v))
		}
		dst = append(dst, v[done:from]...)
		dst = append(dst, with...)
		done = to
	}
	hidden := []byte(`"` + Hidden + `"`)
	depth := 0
	for i := 0; i < len(v); {
		switch c := v[i]; c {
		case '{', '[':
			if depth < maxScrubDepth {
				depth++
				i++
				continue
			}
			end := valueEnd(v, i)
			if nx.within(i, end) || decodable(v[i:end]) && ss.containsDecoded(v[i:end]) {
				replace(i, end, hidden) // its strings are not decoded one by one here
			}
			i = end
		case '}', ']':
			depth--
			i++
		case ' ', '\t', '\n', '\r', ',', ':':
			i++
		case '"':
			end := stringEnd(v, i)
			if end-i < 2 || v[end-1] != '"' {
				if nx.within(i, end) {
					replace(i, end, hidden) // not ended: not JSON
				}
				i = end
				break
			}
			body, changed := v[i+1:end-1], false
			if nx.within(i, end) {
				for _, p := range ss.forms {
					if !p.text {
						b := p.replaceAligned(body)
						changed = changed || len(b) != len(body) || len(b) > 0 && &b[0] != &body[0]
						body = b
					}
				}
			}
			if decodable(body) {
				var s string
				if json.Unmarshal(append(append([]byte{'"'}, body...), '"'), &s) == nil && ss.contains([]byte(s)) {
					body, changed = appendJSONText(nil, ss.Scrub([]byte(s))), true
				}
			}
			if changed {
				replace(i+1, end-1, body)
			}
			i = end
		default:
			end := valueEnd(v, i)
			if nx.within(i, end) {
				replace(i, end, hidden)
			}
			i = end
		}
	}
	if dst == nil {
		return v, false
	}
	return append(dst, v[done:]...), true
}

// appendJSONText appends s as the inside of a JSON string: quotes,
// backslashes and control characters escaped, the rest as it is (an
// invalid UTF-8 byte becomes U+FFFD).
func appendJSONText(dst, s []byte) []byte {
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		switch {
		case r == '"' || r == '\\':
			dst = append(dst, '\\', byte(r))
		case r == '\n':
			dst = append(dst, `\n`...)
		case r == '\r':
			dst = append(dst, `\r`...)
		case r == '\t':
			dst = append(dst, `\t`...)
		case r < 0x20:
			dst = appendU(dst, r)
		case r == utf8.RuneError && n == 1:
			dst = append(dst, "\ufffd"...)
		default:
			dst = append(dst, s[:n]...)
		}
		s = s[n:]
	}
	return dst
}

// nextMatch is, per form of a scrubber, the offset in b of its first
// match at or after the last offset asked about.
type nextMatch struct {
	ss    *secretScrubber
	b     []byte
	at    []int // per form; len(b) when none is left
	first int   // the least of at
}

func (ss *secretScrubber) nextMatches(b []byte) *nextMatch {
	nx := &nextMatch{ss: ss, b: b, at: make([]int, len(ss.forms))}
	for k := range nx.at {
		nx.at[k] = -1
	}
	return nx
}

// within tells whether a form matches wholly inside b[from:to]. Offsets
// asked about only grow, so each form's searches together read b once.
func (nx *nextMatch) within(from, to int) bool {
	if to <= nx.first {
		return false
	}
	found := false
	nx.first = len(nx.b)
	for k, p := range nx.ss.forms {
		if nx.at[k] < from {
			if j := p.index(nx.b[from:]); j >= 0 {
				nx.at[k] = from + j
			} else {
				nx.at[k] = len(nx.b)
			}
		}
		// a later match of the same form ends later still
		if nx.at[k]+len(p.s) <= to {
			found = true
		}
		nx.first = min(nx.first, nx.at[k])
	}
	return found
}

// hideSpans replaces in v (scrubTree's) the innermost container around
// each match of a form that has a byte a JSON token ends at (a quote,
// white space, a comma, colon or bracket) by the string Hidden: only
// such a form can run across two values; any other match lies inside
// one string (which scrubTree scrubbed) or number. Hiding may join new
// text, so it is done again, a few times at most, before the whole
// value goes.
// It returns v itself and false when nothing is hidden.
func (ss *secretScrubber) hideSpans(v []byte) ([]byte, bool) {
	if len(ss.spanning) == 0 {
		return v, false
	}
	for round := range 4 {
		w, hid := ss.hideSpansOnce(v)
		if !hid {
			return v, round > 0
		}
		v = w
	}
	return []byte(`"` + Hidden + `"`), true
}

// hideSpansOnce is one pass of hideSpans over v, byte by byte with a
// stack of the containers open (up to maxScrubDepth+1 of them: nothing
// deeper holds a whole match, as scrubTree hid such a container);
// false when no spanning form matches.
func (ss *secretScrubber) hideSpansOnce(v []byte) ([]byte, bool) {
	type open struct {
		at   int
		hide bool
	}
	type active struct {
		end, least int // least: the fewest containers open over the match
	}
	next := make([]int, len(ss.spanning)) // per form, its next match; -1: none
	first := -1                           // the least of next but -1
	for k, p := range ss.spanning {
		next[k] = p.index(v)
		if next[k] >= 0 && (first < 0 || next[k] < first) {
			first = next[k]
		}
	}
	if first < 0 {
		return v, false
	}
	var (
		stack  []open
		acts   []active
		spans  [][2]int // containers to hide, inner ones first
		whole  bool
		depth  int
		inStr  bool
		escape bool
	)
	for i, c := range v {
		opener, closer := false, false
		switch {
		case escape:
			escape = false
		case inStr:
			switch c {
			case '\\':
				escape = true
			case '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			opener = true
		case c == '}' || c == ']':
			closer = true
		}
		if opener {
			depth++
			if len(stack) <= maxScrubDepth {
				stack = append(stack, open{at: i})
			}
		}
		if i == first {
			first = -1
			for k, p := range ss.spanning {
				if next[k] == i {
					acts = append(acts, active{end: i + len(p.s), least: depth})
					if j := p.index(v[i+len(p.s):]); j >= 0 {
						next[k] = i + len(p.s) + j
					} else {
						next[k] = -1
					}
				}
				if next[k] >= 0 && (first < 0 || next[k] < first) {
					first = next[k]
				}
			}
		}
		for a := 0; a < len(acts); a++ {
			acts[a].least = min(acts[a].least, depth)
			if acts[a].end == i+1 {
				if n := min(acts[a].least, len(stack)); n > 0 {
					stack[n-1].hide = true
				} else {
					whole = true // outside every container (or not JSON)
				}
				acts = append(acts[:a], acts[a+1:]...)
				a--
			}
		}
		if closer {
			if depth > 0 && depth <= len(stack) {
				if top := stack[len(stack)-1]; top.hide {
					spans = append(spans, [2]int{top.at, i + 1})
				}
				stack = stack[:len(stack)-1]
			}
			depth--
		}
	}
	if whole {
		return []byte(`"` + Hidden + `"`), true
	}
	if len(spans) == 0 {
		return v, false
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	out := make([]byte, 0, len(v))
	done := 0
	for _, s := range spans {
		if s[0] < done {
			continue // inside one already hidden
		}
		out = append(out, v[done:s[0]]...)
		out = append(out, `"`+Hidden+`"`...)
		done = s[1]
	}
	return append(out, v[done:]...), true
}

// skipSpace is the offset of the first byte at or after i that is not
// JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd is the offset just after the JSON value starting at b[i]
// (at least i+1; the end of b when it does not end).
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i + 1
	for j < len(b) && !strings.ContainsRune(" \t\r\n,:]}[{\"", rune(b[j])) {
		j++
	}
	return j
}

// stringEnd is the offset just after the JSON string starting at b[i]:
// after the first quote not escaped (an even run of backslashes before
// it).
func stringEnd(b []byte, i int) int {
	for j := i + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b)
		}
		j += k
		if !escaped(b, j) {
			return j + 1
		}
		j++
	}
}

// escaped tells whether b[j] follows an odd run of backslashes.
func escaped(b []byte, j int) bool {
	n := 0
	for j-n > 0 && b[j-n-1] == '\\' {
		n++
	}
	return n%2 == 1
}

// replaceAligned replaces each match of p in body, the inside of a
// valid JSON string, that begins where a character does (not inside an
// escape sequence such as "\n" or "\u0041", which would be no match of
// the text and whose replacement would break the string) by Hidden. A
// match beginning there ends where a character does too: p is a
// sequence of whole characters and escapes.
func (p foldPat) replaceAligned(body []byte) []byte {
	var out []byte
	from, done := 0, 0
	for {
		k := p.index(body[from:])
		if k < 0 {
			break
		}
		at := from + k
		if !charStart(body, at) {
			from = at + 1
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(body))
		}
		out = append(append(out, body[done:at]...), Hidden...)
		from = at + len(p.s)
		done = from
	}
	if out == nil {
		return body
	}
	return append(out, body[done:]...)
}

// charStart tells whether body[at] begins a character of the JSON
// string body: not the escaped byte after a backslash, nor one of the
// four hex digits of a \u escape.
func charStart(body []byte, at int) bool {
	if escaped(body, at) {
		return false
	}
	for k := 2; k <= 5 && at-k >= 0; k++ {
		if body[at-k] == '\\' && body[at-k+1] == 'u' && !escaped(body, at-k) {
			return false
		}
	}
	return true
}

// jsonForms are the ways s may appear inside a JSON string a server
// writes: as it is, and escaped the ways encoders do (quotes,
// backslashes and control characters always; '<', '>', '&' and U+2028/9
// as \u00XX by Go's encoder; '/' as "\/" by PHP's and others; every
// non-ASCII character as \uXXXX by Python's), each combination once, and
// each escaped form escaped once more.
func jsonForms(s string) []string {
	forms := []string{s}
	add := func(e string) {
		for _, o := range forms {
			if o == e {
				return
			}
		}
		forms = append(forms, e)
	}
	for f := 0; f < 8; f++ {
		add(escapeJSON(s, f&1 != 0, f&2 != 0, f&4 != 0))
	}
	for _, e := range forms[1:] {
		// JSON text inside a JSON string (a tool's text result holding
		// a JSON document): escaped twice
		add(escapeJSON(e, false, false, false))
	}
	return forms
}

// escapeJSON is s escaped as inside a JSON string (without the quotes).
func escapeJSON(s string, html, slash, ascii bool) string {
	var b []byte
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r == '\t':
			b = append(b, `\t`...)
		case r == '/' && slash:
			b = append(b, `\/`...)
		case r < 0x20, html && (r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029):
			b = appendU(b, r)
		case ascii && r >= 0x80:
			if r >= 0x10000 {
				r -= 0x10000
				b = appendU(appendU(b, 0xd800+(r>>10)), 0xdc00+(r&0x3ff))
			} else {
				b = appendU(b, r)
			}
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return string(b)
}

func appendU(b []byte, r rune) []byte {
	h := strconv.FormatInt(int64(r), 16)
	for len(h) < 4 {
		h = "0" + h
	}
	return append(append(b, `\u`...), h...)
}
