package mcp

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"
)

// Kind is the shape of a JSON-RPC message.
type Kind uint8

// The message kinds.
const (
	KindRequest      Kind = iota + 1 // method and id
	KindNotification                 // method, no id
	KindResponse                     // id and result
	KindError                        // id (possibly null) and error
)

func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	case KindError:
		return "error"
	}
	return "invalid"
}

// Message is one classified JSON-RPC message. ID, Params and Result are
// slices of Raw holding the members' JSON text exactly as sent.
type Message struct {
	Kind   Kind
	ID     json.RawMessage // string or integer; "null" only on KindError
	Method string
	Params json.RawMessage // object or array; nil when absent or null
	Result json.RawMessage
	Error  *RPCError
	Raw    []byte // the whole line
}

// maxDepth bounds nesting in inbound JSON.
const maxDepth = 10000

// Classify validates one line and sorts it into a Message. It checks the
// whole line: valid UTF-8 (never replaced), well-formed JSON, and the JSON-RPC
// 2.0 envelope (jsonrpc "2.0", id string or integer, exactly one of
// result/error on responses, no duplicate envelope members). It does not
// decode params or results: they stay raw JSON.
//
// A line that is valid UTF-8 but not JSON, or a JSON value that is not an
// object, or an object with none of the JSON-RPC members, returns an error
// wrapping ErrNoise. A JSON array returns ErrBatch. Everything else that is
// wrong is an *Error with CodeProtocol.
func Classify(line []byte) (Message, error) {
	m := Message{Raw: line}
	s := scanner{b: line}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '[' {
		if _, err := s.value(); err == nil && s.end() {
			return m, protoErr("batch", ErrBatch)
		}
		return m, noiseOrUTF8(line)
	}
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return m, noiseOrUTF8(line)
	}
	var f envelope
	if err := s.object(&f); err != nil || !s.end() {
		if errors.Is(err, errDuplicate) {
			return m, protoErr("message has a duplicate \""+f.dup+"\" member", nil)
		}
		return m, noiseOrUTF8(line)
	}
	if f.jsonrpc == nil {
		if f.id == nil && f.method == nil && f.result == nil && f.errv == nil {
			return m, &Error{Code: CodeProtocol, Op: "read", Message: "a JSON object that is not a JSON-RPC message", Err: ErrNoise}
		}
		return m, protoErr("message lacks \"jsonrpc\": \"2.0\"", nil)
	}
	if string(f.jsonrpc) != `"2.0"` {
		return m, protoErr("\"jsonrpc\" is not \"2.0\"", nil)
	}
	if f.params != nil {
		switch f.params[0] {
		case '{', '[':
			m.Params = f.params
		case 'n':
		default:
			return m, protoErr("\"params\" is neither an object nor an array", nil)
		}
	}
	if f.method != nil {
		name, ok := jsonString(f.method)
		if !ok {
			return m, protoErr("\"method\" is not a string", nil)
		}
		if f.result != nil || f.errv != nil {
			return m, protoErr("a message has both \"method\" and \"result\"/\"error\"", nil)
		}
		m.Method = name
		if f.id == nil {
			m.Kind = KindNotification
			return m, nil
		}
		if !validID(f.id) {
			return m, protoErr("request id is neither a string nor an integer", nil)
		}
		m.Kind, m.ID = KindRequest, f.id
		return m, nil
	}
	if m.Params != nil {
		return m, protoErr("a response carries \"params\"", nil)
	}
	if f.id == nil {
		return m, protoErr("message has neither \"method\" nor \"id\"", nil)
	}
	switch {
	case f.result != nil && f.errv != nil:
		return m, protoErr("response has both \"result\" and \"error\"", nil)
	case f.result != nil:
		if !validID(f.id) {
			return m, protoErr("response id is neither a string nor an integer", nil)
		}
		m.Kind, m.ID, m.Result = KindResponse, f.id, f.result
		return m, nil
	case f.errv != nil:
		if string(f.id) != "null" && !validID(f.id) {
			return m, protoErr("error response id is neither a string, an integer nor null", nil)
		}
		e, err := parseRPCError(f.errv)
		if err != nil {
			return m, err
		}
		m.Kind, m.ID, m.Error = KindError, f.id, e
		return m, nil
	}
	return m, protoErr("response has neither \"result\" nor \"error\"", nil)
}

func protoErr(msg string, cause error) *Error {
	if cause != nil && msg == "batch" {
		return &Error{Code: CodeProtocol, Op: "read", Message: "server sent a JSON-RPC batch (array); batches were removed in MCP 2025-06-18", Err: cause}
	}
	return &Error{Code: CodeProtocol, Op: "read", Message: msg, Err: cause}
}

func noiseOrUTF8(line []byte) error {
	if !utf8.Valid(line) {
		return &Error{Code: CodeProtocol, Op: "read", Message: "server wrote a line that is not valid UTF-8", Err: ErrInvalidUTF8}
	}
	return &Error{Code: CodeProtocol, Op: "read", Message: "server wrote a line that is not JSON", Err: ErrNoise}
}

func parseRPCError(raw []byte) (*RPCError, error) {
	if raw[0] != '{' {
		return nil, protoErr("\"error\" is not an object", nil)
	}
	var w struct {
		Code    json.RawMessage `json:"code"`
		Message *string         `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, protoErr("malformed \"error\" object", err)
	}
	if w.Code == nil || w.Message == nil {
		return nil, protoErr("\"error\" lacks \"code\" or \"message\"", nil)
	}
	code, err := strconv.Atoi(string(w.Code))
	if err != nil {
		return nil, protoErr("\"error.code\" is not an integer", nil)
	}
	e := &RPCError{Code: code, Message: *w.Message}
	if len(w.Data) > 0 {
		e.Data = append(json.RawMessage(nil), w.Data...)
	}
	return e, nil
}

// validID reports whether raw is a JSON string or an integer.
func validID(raw []byte) bool {
	switch c := raw[0]; {
	case c == '"':
		return true
	case c == '-' || (c >= '0' && c <= '9'):
		return bytes.IndexAny(raw, ".eE") < 0
	}
	return false
}

// idKey is the canonical text of an id: integers as sent (the grammar allows
// one spelling), strings with escapes resolved.
func idKey(raw []byte) string {
	if len(raw) > 0 && raw[0] == '"' && bytes.IndexByte(raw, '\\') >= 0 {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			b, _ := json.Marshal(s)
			return string(b)
		}
	}
	return string(raw)
}

// jsonString decodes a JSON string value.
func jsonString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// plainKey returns a raw member key with escapes resolved (re-encoded), so
// it can be compared with a quoted name; keys without escapes are returned
// as they are, without allocating.
func plainKey(key []byte) []byte {
	if bytes.IndexByte(key, '\\') < 0 {
		return key
	}
	k, _ := jsonString(key)
	b, _ := json.Marshal(k)
	return b
}

// envelope holds the raw JSON-RPC members of a top-level object.
type envelope struct {
	jsonrpc, id, method, params, result, errv []byte
	dup                                       string
}

var errDuplicate = errors.New("duplicate member")
var errSyntax = errors.New("invalid JSON")

// scanner is a validating, non-allocating JSON skipper.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// object scans a top-level object, recording envelope members.
func (s *scanner) object(f *envelope) error {
	s.i++ // '{'
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		s.ws()
		ks := s.i
		if err := s.str(); err != nil {
			return err
		}
		key := s.b[ks:s.i]
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return errSyntax
		}
		s.i++
		s.ws()
		v, err := s.value()
		if err != nil {
			return err
		}
		var slot *[]byte
		switch string(plainKey(key)) {
		case `"jsonrpc"`:
			slot = &f.jsonrpc
		case `"id"`:
			slot = &f.id
		case `"method"`:
			slot = &f.method
		case `"params"`:
			slot = &f.params
		case `"result"`:
			slot = &f.result
		case `"error"`:
			slot = &f.errv
		}
		if slot != nil {
			if *slot != nil {
				f.dup, _ = jsonString(key)
				return errDuplicate
			}
			*slot = v
		}
		s.ws()
		if s.i >= len(s.b) {
			return errSyntax
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return errSyntax
		}
	}
}

// value skips one JSON value starting at s.i (no leading whitespace) and
// returns its text. Containers are walked iteratively with an explicit stack.
func (s *scanner) value() ([]byte, error) {
	start := s.i
	var stackBuf [64]byte
	stack := stackBuf[:0]
	for {
		// Expect a value.
		s.ws()
		if s.i >= len(s.b) {
			return nil, errSyntax
		}
		switch c := s.b[s.i]; c {
		case '{', '[':
			if len(stack) >= maxDepth {
				return nil, errSyntax
			}
			s.i++
			s.ws()
			if s.i < len(s.b) && s.b[s.i] == c+2 { // '}' == '{'+2, ']' == '['+2
				s.i++
				goto after
			}
			stack = append(stack, c)
			if c == '{' {
				if err := s.key(); err != nil {
					return nil, err
				}
			}
			continue
		case '"':
			if err := s.str(); err != nil {
				return nil, err
			}
		case 't':
			if !s.lit("true") {
				return nil, errSyntax
			}
		case 'f':
			if !s.lit("false") {
				return nil, errSyntax
			}
		case 'n':
			if !s.lit("null") {
				return nil, errSyntax
			}
		default:
			if err := s.num(); err != nil {
				return nil, err
			}
		}
	after:
		// After a value: close containers or move to the next element.
		for {
			if len(stack) == 0 {
				return s.b[start:s.i], nil
			}
			s.ws()
			if s.i >= len(s.b) {
				return nil, errSyntax
			}
			c := s.b[s.i]
			top := stack[len(stack)-1]
			if c == ',' {
				s.i++
				if top == '{' {
					s.ws()
					if err := s.key(); err != nil {
						return nil, err
					}
				}
				break
			}
			if c != top+2 {
				return nil, errSyntax
			}
			s.i++
			stack = stack[:len(stack)-1]
		}
	}
}

// key scans `"name" :` inside an object.
func (s *scanner) key() error {
	if err := s.str(); err != nil {
		return err
	}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return errSyntax
	}
	s.i++
	return nil
}

func (s *scanner) lit(w string) bool {
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return true
	}
	return false
}

func (s *scanner) num() error {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return errSyntax
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return errSyntax
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return errSyntax
		}
	}
	s.i = i
	return nil
}

const (
	ones = 0x0101010101010101
	high = 0x8080808080808080
)

// str scans a string starting at its opening quote, validating escapes,
// control characters and (once, at the end) UTF-8.
func (s *scanner) str() error {
	b := s.b
	i := s.i
	if i >= len(b) || b[i] != '"' {
		return errSyntax
	}
	i++
	start := i
	var acc uint64 // OR of every byte seen: a set high bit means non-ASCII
	for {
		// Fast path: eight bytes at a time while none is '"', '\\' or a
		// control character. Bytes >= 0x80 pass and are validated below.
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			q := w ^ ('"' * ones)
			bs := w ^ ('\\' * ones)
			special := ((q - ones) &^ q) | ((bs - ones) &^ bs) | ((w - 0x20*ones) &^ w)
			if special&high != 0 {
				break
			}
			acc |= w
			i += 8
		}
		if i >= len(b) {
			return errSyntax
		}
		c := b[i]
		switch {
		case c == '"':
			if acc&high != 0 && !utf8.Valid(b[start:i]) {
				return errSyntax
			}
			s.i = i + 1
			return nil
		case c == '\\':
			if i+1 >= len(b) {
				return errSyntax
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return errSyntax
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return errSyntax
					}
				}
				i += 6
			default:
				return errSyntax
			}
		case c < 0x20:
			return errSyntax
		default:
			acc |= uint64(c)
			i++
		}
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// member returns the raw value of a top-level member of a JSON object
// (already validated: a classified message's params or result, or
// outbound params), or nil if absent.
//
// # Why it does not validate
//
// The call path asks a result for resultType and isError, and outbound
// params for _meta, right after the bytes were validated; walking them
// with the validating scanner again (escapes, UTF-8, number grammar) was
// most of those lookups' cost. On valid JSON only quotes, backslashes in
// strings and brackets decide where a value ends. On invalid input it
// still stays in bounds and ends.
func member(obj []byte, name string) (v []byte) {
	Members(obj, func(key, value []byte) bool {
		if k := plainKey(key); len(k) == len(name)+2 && string(k[1:len(k)-1]) == name {
			v = value
			return false
		}
		return true
	})
	return v
}

// member2 is member for two names in one walk: the first member named a
// and the first named b (nil when there is none).
func member2(obj []byte, a, b string) (va, vb []byte) {
	Members(obj, func(key, value []byte) bool {
		k := plainKey(key)
		if len(k) < 2 {
			return true
		}
		switch name := k[1 : len(k)-1]; {
		case va == nil && string(name) == a:
			va = value
		case vb == nil && string(name) == b:
			vb = value
		}
		return va == nil || vb == nil
	})
	return va, vb
}

// Members calls fn with each top-level member of obj, a valid JSON object
// (a classified message's params or result: see member), in order: its
// key as written (quotes and escapes included) and its value, until fn
// returns false. It reads only quotes, backslashes in strings and
// brackets; on invalid input it stays in bounds and stops.
func Members(obj []byte, fn func(key, value []byte) bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	for i = skipSpace(obj, i+1); i < len(obj) && obj[i] == '"'; {
		ke := validStringEnd(obj, i)
		key := obj[i:ke]
		i = skipSpace(obj, ke)
		if i >= len(obj) || obj[i] != ':' {
			return
		}
		i = skipSpace(obj, i+1)
		if i >= len(obj) {
			return
		}
		ve := validValueEnd(obj, i)
		if !fn(key, obj[i:ve]) {
			return
		}
		i = skipSpace(obj, ve)
		if i >= len(obj) || obj[i] != ',' {
			return
		}
		i = skipSpace(obj, i+1)
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// validStringEnd returns the index past the string whose opening quote is
// b[i], in valid JSON (len(b) when it is not closed).
func validStringEnd(b []byte, i int) int {
	for i++; i < len(b); {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		i += j
		bs := 0
		for k := i - 1; b[k] == '\\'; k-- { // b[k] stops at the opening quote at worst
			bs++
		}
		if bs%2 == 0 {
			return i + 1
		}
		i++
	}
	return len(b)
}

// validValueEnd returns the index past the value starting at b[i], in
// valid JSON (len(b) when it does not end).
func validValueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return validStringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = validStringEnd(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(b)
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}
