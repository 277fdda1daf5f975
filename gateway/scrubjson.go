package gateway

import (
	"bytes"
	"encoding/json"
	"strconv"
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
	end, ok := valueEnd(msg, i)
	if !ok || skipSpace(msg, end) != len(msg) {
		return ss.Scrub(msg) // not JSON: noise, scrubbed as text
	}
	out := ss.scrubValue(nil, msg[i:end], 0)
	if msg[i] == '{' && out[0] != '{' {
		// the secret runs across the message's own members
		return withheld(msg[i:end])
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
		var s string
		if json.Unmarshal(v, &s) != nil {
			return append(dst, `"`+Hidden+`"`...)
		}
		return appendJSONString(dst, ss.Scrub([]byte(s)))
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
// one string (which scrubValue decoded and scrubbed) or number.
func (ss *secretScrubber) spans(b []byte) bool {
	for _, p := range ss.forms {
		if bytes.ContainsAny(p.s, "\" \t\r\n,:[]{}") && p.index(b) >= 0 {
			return true
		}
	}
	return false
}

// scrubMembers appends container v with each key and value scrubbed.
func (ss *secretScrubber) scrubMembers(dst, v []byte, depth int) []byte {
	dst = append(dst, v[0])
	i := skipSpace(v, 1)
	for i < len(v)-1 {
		end, _ := valueEnd(v, i) // v is valid: checked by ScrubMessage
		dst = ss.scrubValue(dst, v[i:end], depth+1)
		i = skipSpace(v, end)
		if v[i] == ':' || v[i] == ',' {
			dst = append(dst, v[i])
			i = skipSpace(v, i+1)
		}
	}
	return append(dst, v[len(v)-1])
}

// skipSpace is the offset of the first byte at or after i that is not
// JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd is the offset just after the JSON value starting at b[i];
// false when b[i:] does not begin with a valid value.
func valueEnd(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1, json.Valid(b[i : j+1])
			}
		}
		return 0, false
	case '{', '[':
		closer := byte('}')
		if b[i] == '[' {
			closer = ']'
		}
		j := skipSpace(b, i+1)
		if j < len(b) && b[j] == closer {
			return j + 1, true
		}
		for j < len(b) {
			if closer == '}' {
				if j >= len(b) || b[j] != '"' {
					return 0, false
				}
				k, ok := valueEnd(b, j)
				if !ok {
					return 0, false
				}
				if j = skipSpace(b, k); j >= len(b) || b[j] != ':' {
					return 0, false
				}
				j = skipSpace(b, j+1)
			}
			k, ok := valueEnd(b, j)
			if !ok {
				return 0, false
			}
			j = skipSpace(b, k)
			if j >= len(b) {
				return 0, false
			}
			switch b[j] {
			case ',':
				j = skipSpace(b, j+1)
			case closer:
				return j + 1, true
			default:
				return 0, false
			}
		}
		return 0, false
	}
	j := i
	for j < len(b) && !bytes.ContainsRune([]byte(" \t\r\n,:]}[{\""), rune(b[j])) {
		j++
	}
	return j, j > i && json.Valid(b[i:j])
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, the rest as it is (valid UTF-8 is kept,
// an invalid byte becomes U+FFFD).
func appendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
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
			dst = append(dst, `\u00`...)
			dst = append(dst, "0123456789abcdef"[r>>4], "0123456789abcdef"[r&15])
		case r == utf8.RuneError && n == 1:
			dst = append(dst, "\ufffd"...)
		default:
			dst = append(dst, s[:n]...)
		}
		s = s[n:]
	}
	return append(dst, '"')
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
