package wasm

import (
	"strconv"
	"unicode/utf8"
)

// Meta is the per-call context a guest reads with meta_read, encoded as a
// small JSON object (see ABI.md, "Per-call meta"). Tool arguments are never
// included: they may hold secrets.
type Meta struct {
	Server    string // server id
	Tool      string // tool name (without the server prefix)
	Stage     string // "result" or "context"
	RequestID string // for correlating logs
	Item      int    // mode text: index of the content item in the result
	MimeType  string // mode text: the item's mimeType (embedded resource text), if any
	// ValidInput: the caller has checked that the input is valid JSON
	// (RFC 8259, strings valid UTF-8), as the gateway's MCP framing does
	// for every upstream message and the host does for every filter's
	// output. It is not shown to the guest. A built-in filter's output is
	// then validated without looking again at the runs of input string
	// characters it copied with output_input (see trustedSpans); any other
	// output is validated in full. Leave it false when unsure: the output
	// is then validated in full. In -race builds such output is
	// validated in full as well, and an input that was not valid fails
	// the call.
	ValidInput bool
}

// encode renders the meta document. Field order is fixed; strings are
// escaped so any Go string (even invalid UTF-8) yields valid JSON.
func (m Meta) encode(mode Mode, inputBytes, maxOutput int) []byte {
	return m.appendEncoded(make([]byte, 0, 160+len(m.Server)+len(m.Tool)+len(m.RequestID)+len(m.MimeType)), mode, inputBytes, maxOutput)
}

// appendEncoded appends the meta document (see encode) to b.
func (m Meta) appendEncoded(b []byte, mode Mode, inputBytes, maxOutput int) []byte {
	b = append(b, `{"abi":1,"mode":`...)
	b = appendJSONString(b, string(mode))
	if m.Server != "" {
		b = append(b, `,"server":`...)
		b = appendJSONString(b, m.Server)
	}
	if m.Tool != "" {
		b = append(b, `,"tool":`...)
		b = appendJSONString(b, m.Tool)
	}
	if m.Stage != "" {
		b = append(b, `,"stage":`...)
		b = appendJSONString(b, m.Stage)
	}
	if m.RequestID != "" {
		b = append(b, `,"requestId":`...)
		b = appendJSONString(b, m.RequestID)
	}
	if mode == ModeText {
		b = append(b, `,"item":`...)
		b = strconv.AppendInt(b, int64(m.Item), 10)
		if m.MimeType != "" {
			b = append(b, `,"mimeType":`...)
			b = appendJSONString(b, m.MimeType)
		}
	}
	b = append(b, `,"inputBytes":`...)
	b = strconv.AppendInt(b, int64(inputBytes), 10)
	b = append(b, `,"maxOutputBytes":`...)
	b = strconv.AppendInt(b, int64(maxOutput), 10)
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as a JSON string; invalid UTF-8 becomes U+FFFD
// and U+2028/U+2029 are escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			if r == utf8.RuneError {
				b = append(b, "\ufffd"...)
			} else {
				b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			}
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
