package clients

import (
	"bytes"
	"errors"
	"fmt"
)

// blank returns src with JSONC comments and trailing commas replaced by
// spaces (newlines kept), so the result is JSON with every remaining byte
// at its original offset.
func blank(src []byte) []byte {
	b := append([]byte(nil), src...)
	n := len(b)
	// lastComma: offset of a comma that may turn out to be trailing.
	lastComma := -1
	for i := 0; i < n; i++ {
		switch c := b[i]; {
		case c == '"':
			lastComma = -1
			i++
			for i < n && b[i] != '"' {
				if b[i] == '\\' {
					i++
				}
				i++
			}
		case c == '/' && i+1 < n && b[i+1] == '/':
			for i < n && b[i] != '\n' {
				b[i] = ' '
				i++
			}
		case c == '/' && i+1 < n && b[i+1] == '*':
			b[i], b[i+1] = ' ', ' '
			i += 2
			for i < n && !(b[i] == '*' && i+1 < n && b[i+1] == '/') {
				if b[i] != '\n' {
					b[i] = ' '
				}
				i++
			}
			if i < n {
				b[i], b[i+1] = ' ', ' '
				i++
			}
		case c == ',':
			lastComma = i
		case c == '}' || c == ']':
			if lastComma >= 0 {
				b[lastComma] = ' '
			}
			lastComma = -1
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		default:
			lastComma = -1
		}
	}
	return b
}

// member is one member of a JSON object, as byte offsets.
type member struct {
	Key        string
	KeyStart   int // the opening quote of the key
	ValueStart int
	ValueEnd   int // one past the value
}

var errSyntax = errors.New("not valid JSON")

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

func skipString(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return 0, errSyntax
	}
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		}
	}
	return 0, errSyntax
}

// skipValue returns the end of the value starting at i (whitespace
// skipped before).
func skipValue(b []byte, i int) (int, error) {
	i = skipWS(b, i)
	if i >= len(b) {
		return 0, errSyntax
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				e, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
		}
		return 0, errSyntax
	default:
		j := i
		for j < len(b) && !bytes.ContainsRune([]byte(",}] \t\r\n"), rune(b[j])) {
			j++
		}
		if j == i {
			return 0, errSyntax
		}
		return j, nil
	}
}

// members lists the members of the object starting at start ('{'), and
// returns the offset of its closing '}'.
func members(b []byte, start int) ([]member, int, error) {
	i := skipWS(b, start)
	if i >= len(b) || b[i] != '{' {
		return nil, 0, fmt.Errorf("%w: an object was expected", errSyntax)
	}
	var out []member
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil, i, nil
	}
	for {
		ks := i
		ke, err := skipString(b, i)
		if err != nil {
			return nil, 0, err
		}
		key, err := unquote(b[ks:ke])
		if err != nil {
			return nil, 0, err
		}
		i = skipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return nil, 0, errSyntax
		}
		vs := skipWS(b, i+1)
		ve, err := skipValue(b, vs)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, member{Key: key, KeyStart: ks, ValueStart: vs, ValueEnd: ve})
		i = skipWS(b, ve)
		if i >= len(b) {
			return nil, 0, errSyntax
		}
		if b[i] == '}' {
			return out, i, nil
		}
		if b[i] != ',' {
			return nil, 0, errSyntax
		}
		i = skipWS(b, i+1)
	}
}

func find(ms []member, key string) (member, bool) {
	// The last of duplicate keys wins, as encoding/json decodes it.
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Key == key {
			return ms[i], true
		}
	}
	return member{}, false
}

// lineOf is the 1-based line of offset i.
func lineOf(b []byte, i int) int {
	return bytes.Count(b[:min(i, len(b))], []byte("\n")) + 1
}

// indentAt is the leading whitespace of the line holding offset i.
func indentAt(b []byte, i int) string {
	s := bytes.LastIndexByte(b[:i], '\n') + 1
	e := s
	for e < len(b) && (b[e] == ' ' || b[e] == '\t') {
		e++
	}
	return string(b[s:e])
}
