package front

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A minimal reader of JSON the caller has already validated (json.Valid,
// or bytes the upstream client's framer checked). The stdio fast path
// uses it to find members without decoding into maps: it never
// unescapes, so a caller that needs a string's value takes the plain ones
// (no backslash, ASCII) and leaves the rest to encoding/json. (The HTTP
// fast path's scanner, httpscan.go, validates as it goes; this one walks
// bytes known to be valid, which is all the stdio path needs.)

// rawWS returns the index of the first non-space byte at or after i.
func rawWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// rawSkip returns the index just past the value starting at i (b[i] is
// its first byte), or -1 when b is cut short.
func rawSkip(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return rawString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = rawString(b, i)
				if i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	default: // number, true, false, null
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// rawString returns the index just past the string starting at b[i] ('"').
func rawString(b []byte, i int) int {
	i++
	for i < len(b) {
		switch b[i] {
		case '\\':
			i += 2
			continue
		case '"':
			return i + 1
		}
		i++
	}
	return -1
}

// eachMember calls fn with every member of the object obj (validated
// JSON): the key as written, quotes included, and the raw value. It stops
// early when fn returns false, and reports false when obj is not an
// object or fn stopped it.
func eachMember(obj []byte, fn func(key, val []byte) bool) bool {
	i := rawWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i = rawWS(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return true
	}
	for i < len(obj) {
		ke := rawString(obj, i)
		if ke < 0 {
			return false
		}
		key := obj[i:ke]
		i = rawWS(obj, ke)
		if i >= len(obj) || obj[i] != ':' {
			return false
		}
		i = rawWS(obj, i+1)
		ve := rawSkip(obj, i)
		if ve < 0 {
			return false
		}
		if !fn(key, obj[i:ve]) {
			return false
		}
		i = rawWS(obj, ve)
		if i >= len(obj) {
			return false
		}
		if obj[i] == '}' {
			return true
		}
		if obj[i] != ',' {
			return false
		}
		i = rawWS(obj, i+1)
	}
	return false
}

// eachElement calls fn with every element of the array arr (validated
// JSON); like eachMember it reports false when arr is no array or fn
// stopped it.
func eachElement(arr []byte, fn func(val []byte) bool) bool {
	i := rawWS(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return false
	}
	i = rawWS(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return true
	}
	for i < len(arr) {
		ve := rawSkip(arr, i)
		if ve < 0 {
			return false
		}
		if !fn(arr[i:ve]) {
			return false
		}
		i = rawWS(arr, ve)
		if i >= len(arr) {
			return false
		}
		if arr[i] == ']' {
			return true
		}
		if arr[i] != ',' {
			return false
		}
		i = rawWS(arr, i+1)
	}
	return false
}

// asciiString returns the text of a JSON string that needs no decoding
// (no escapes, printable ASCII only), and ok false for anything else.
func asciiString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	s := v[1 : len(v)-1]
	for _, c := range s {
		if c < 0x20 || c >= 0x80 || c == '\\' || c == '"' {
			return "", false
		}
	}
	return string(s), true
}

// isKey reports whether key (as written, quotes included) is the plain
// name.
func isKey(key []byte, name string) bool {
	return len(key) == len(name)+2 && string(key[1:len(key)-1]) == name
}

// quickCall reads a frame (validated JSON) that is a plain tools/call
// request — exactly the members jsonrpc "2.0", id (an integer of at most 15
// digits or a plain string), method "tools/call" and an object params —
// without the SDK's decoder, into the request the SDK would decode. ok is
// false for every other frame, which then takes the general check.
func quickCall(line []byte) (_ *jsonrpc.Request, ok bool) {
	if !nestedBelow(line, maxDepth) {
		return nil, false
	}
	return readCall(bytes.TrimSpace(line))
}

// readCall is quickCall for a frame known to be valid JSON nested less
// than maxDepth deep, without surrounding whitespace.
func readCall(line []byte) (_ *jsonrpc.Request, ok bool) {
	var top [4]member
	ms, ok := members(top[:0], line)
	if !ok {
		return nil, false
	}
	return callOf(ms)
}

// callOf is readCall for a line's top-level members (as members reports
// them).
func callOf(ms []member) (_ *jsonrpc.Request, ok bool) {
	if len(ms) != 4 {
		return nil, false
	}
	var ver, id, method, params []byte
	for _, m := range ms {
		if m.escaped {
			return nil, false // the general decoder decides
		}
		var dst *[]byte
		switch string(m.name) {
		case "jsonrpc":
			dst = &ver
		case "id":
			dst = &id
		case "method":
			dst = &method
		case "params":
			dst = &params
		default:
			return nil, false
		}
		if *dst != nil {
			return nil, false // a duplicate: the general decoder decides
		}
		*dst = m.value
	}
	if string(ver) != `"2.0"` || string(method) != `"tools/call"` || params[0] != '{' {
		return nil, false
	}
	var rid jsonrpc.ID
	var err error
	if id[0] == '"' {
		s, plain := asciiString(id)
		if !plain {
			return nil, false
		}
		rid, err = jsonrpc.MakeID(s)
	} else {
		// The SDK decodes a numeric id as a float64: only integers it
		// holds exactly are read here.
		digits := id
		if len(digits) > 0 && digits[0] == '-' {
			digits = digits[1:]
		}
		if len(digits) == 0 || len(digits) > 15 {
			return nil, false
		}
		for _, c := range digits {
			if c < '0' || c > '9' {
				return nil, false
			}
		}
		n, perr := strconv.ParseInt(string(id), 10, 64)
		if perr != nil {
			return nil, false
		}
		rid, err = jsonrpc.MakeID(float64(n))
	}
	if err != nil {
		return nil, false
	}
	return &jsonrpc.Request{ID: rid, Method: "tools/call", Params: bytes.Clone(params)}, true
}

// encodeResult encodes a result response the way the SDK's connection
// does (jsonrpc first, the id, the result compacted, no HTML escaping,
// newline-terminated), when the id is an integer or a string needing no
// escapes; ok is false otherwise (and for an error response), and the
// connection encodes it.
func encodeResult(resp *jsonrpc.Response) (_ []byte, ok bool) {
	if len(resp.Result) == 0 || !json.Valid(resp.Result) {
		return nil, false
	}
	return appendResult(make([]byte, 0, len(resp.Result)+48), resp)
}

// appendResult is encodeResult appending to b, for a result known to be
// valid JSON (one this front produced: passResult, json.Marshal).
func appendResult(b []byte, resp *jsonrpc.Response) (_ []byte, ok bool) {
	if resp.Error != nil || len(resp.Result) == 0 {
		return nil, false
	}
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	switch v := resp.ID.Raw().(type) {
	case int64:
		b = strconv.AppendInt(b, v, 10)
	case string:
		for i := 0; i < len(v); i++ {
			if c := v[i]; c < 0x20 || c >= 0x80 || c == '\\' || c == '"' {
				return nil, false
			}
		}
		b = append(append(append(b, '"'), v...), '"')
	default:
		return nil, false
	}
	b = append(b, `,"result":`...)
	b = appendCompact(b, resp.Result)
	return append(b, '}', '\n'), true
}

// appendCompact appends v, valid JSON, without the whitespace outside its
// strings, as encoding/json compacts a RawMessage.
func appendCompact(b, v []byte) []byte {
	start := 0
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '"':
			i = rawString(v, i) - 1
		case ' ', '\t', '\n', '\r':
			b = append(b, v[start:i]...)
			for i+1 < len(v) && (v[i+1] == ' ' || v[i+1] == '\t' || v[i+1] == '\n' || v[i+1] == '\r') {
				i++
			}
			start = i + 1
		}
	}
	return append(b, v[start:]...)
}

// nestedBelow reports whether the valid JSON b nests fewer than limit
// objects and arrays deep: the SDK's decoder refuses a message nested
// deeper (maxDepth), so a frame read without it must be refused too.
func nestedBelow(b []byte, limit int) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = skipValidString(b, i) - 1
		case '{', '[':
			if depth++; depth >= limit {
				return false
			}
		case '}', ']':
			depth--
		}
	}
	return true
}
