package gateway

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
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
func (ss *secretScrubber) ScrubMessage(msg []byte) []byte {
	if !ss.contains(msg) {
		return msg
	}
	i := skipSpace(msg, 0)
	if i == len(msg) {
		return ss.Scrub(msg)
	}
	end := valueEnd(msg, i)
	out := append(make([]byte, 0, len(msg)), msg[:i]...)
	out = ss.scrubValue(out, msg[i:end], 0)
	if msg[i] == '{' && out[i] != '{' {
		// the secret runs across the message's own members
		return withheld(msg[i:end])
	}
	out = append(out, ss.Scrub(msg[end:])...) // nothing but white space in a valid message
	if ss.contains(out) && !json.Valid(out) {
		// not JSON (noise): scrubbed as text
		return ss.Scrub(msg)
	}
	return out
}

// withheld is the message that replaces obj when a secret runs across
// its members: an error answer to the same request when obj has a clean
// id, else a line the client sets aside.
func withheld(obj []byte) []byte {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(obj, &m) == nil && len(m.ID) > 0 && string(m.ID) != "null" && m.ID[0] != '{' && m.ID[0] != '[' {
		return []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32603,"message":"the server's answer repeated a credential it was given; withheld"}}`)
	}
	return []byte(Hidden)
}

// scrubValue appends v (one JSON value holding a secret form, or not)
// scrubbed to dst.
func (ss *secretScrubber) scrubValue(dst, v []byte, depth int) []byte {
	if !ss.contains(v) {
		return append(dst, v...)
	}
	switch v[0] {
	case '"':
		if len(v) < 2 || v[len(v)-1] != '"' {
			break // not ended: not JSON
		}
		body := v[1 : len(v)-1]
		for _, p := range ss.forms {
			body = p.replaceAligned(body)
		}
		dst = append(append(dst, '"'), body...)
		return append(dst, '"')
	case '{', '[':
		if depth >= maxScrubDepth {
			break
		}
		start := len(dst)
		dst = ss.scrubMembers(dst, v, depth)
		if ss.spans(dst[start:]) {
			// a secret across members: the container goes
			dst = dst[:start]
			break
		}
		return dst
	}
	return append(dst, `"`+Hidden+`"`...)
}

// spans tells whether b holds a secret form that has a byte a JSON
// token ends at (a quote, white space, a comma, colon or bracket): only
// such a form can run across two values; any other match lies inside
// one string (which scrubValue scrubbed) or number.
func (ss *secretScrubber) spans(b []byte) bool {
	for _, p := range ss.forms {
		if bytes.ContainsAny(p.s, "\" \t\r\n,:[]{}") && p.index(b) >= 0 {
			return true
		}
	}
	return false
}

// scrubMembers appends container v with each key and value scrubbed,
// the white space and punctuation between them as they are.
func (ss *secretScrubber) scrubMembers(dst, v []byte, depth int) []byte {
	dst = append(dst, v[0])
	for i := 1; i < len(v); {
		switch v[i] {
		case ' ', '\t', '\r', '\n', ',', ':', '}', ']':
			dst = append(dst, v[i])
			i++
			continue
		}
		end := valueEnd(v, i)
		dst = ss.scrubValue(dst, v[i:end], depth+1)
		i = end
	}
	return dst
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
