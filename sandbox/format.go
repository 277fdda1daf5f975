package sandbox

// This file is str.format built in one buffer of its exact size, as `%`
// is (percent.go): starlark-go's grows its builder field by field, so
// format was charged three times its result and a script formatting near
// its cap was refused for memory it would not have used.

import (
	"strings"

	"go.starlark.net/starlark"
)

// planFormat reads format as starlark-go's str.format does, with args and
// kwargs as preRender left them (containers rendered), and returns the
// pieces of the result and its exact length (a quoted piece counted at
// the length quotedLen bounds it by). ok is false on any error of the
// format or its arguments, for an argument it does not print itself (bytes,
// a range, a function: starlark-go's own repr), and past maxPercentPieces:
// the caller then lets starlark-go run it, so results and errors stay
// starlark-go's.
func planFormat(format string, args starlark.Tuple, kwargs []starlark.Tuple) (pieces []percentPiece, size int64, ok bool) {
	add := func(p percentPiece) { pieces, size = addPiece(pieces, size, p) }
	var auto, manual bool
	index := 0
	for {
		if len(pieces) > maxPercentPieces {
			return nil, 0, false
		}
		literal := format
		i := strings.IndexByte(format, '{')
		if i >= 0 {
			literal = format[:i]
		}
		// "}}" is a literal '}'; a lone '}' is an error
		for {
			j := strings.IndexByte(literal, '}')
			if j < 0 {
				add(percentPiece{text: literal})
				break
			}
			if len(literal) == j+1 || literal[j+1] != '}' {
				return nil, 0, false
			}
			add(percentPiece{text: literal[:j+1]})
			literal = literal[j+2:]
			if len(pieces) > maxPercentPieces {
				return nil, 0, false
			}
		}
		if i < 0 {
			return pieces, size, true
		}
		if i+1 < len(format) && format[i+1] == '{' {
			add(percentPiece{text: "{"})
			format = format[i+2:]
			continue
		}
		format = format[i+1:]
		end := strings.IndexByte(format, '}')
		if end < 0 {
			return nil, 0, false
		}
		field := format[:end]
		format = format[end+1:]
		name, conv, spec := field, "s", ""
		if k := strings.IndexByte(field, '!'); k < 0 {
			if c := strings.IndexByte(field, ':'); c >= 0 {
				name, spec = field[:c], field[c+1:]
			}
		} else {
			name = field[:k]
			conv = field[k+1:]
			if before, after, found := strings.Cut(conv, ":"); found {
				conv, spec = before, after
			}
		}
		var arg starlark.Value
		if name == "" {
			if manual || index >= len(args) {
				return nil, 0, false
			}
			auto = true
			arg = args[index]
			index++
		} else if num, isNum := formatDecimal(name); isNum {
			if auto || num >= len(args) {
				return nil, 0, false
			}
			manual = true
			arg = args[num]
		} else {
			for _, kv := range kwargs {
				if string(kv[0].(starlark.String)) == name {
					arg = kv[1]
					break
				}
			}
			if arg == nil {
				return nil, 0, false
			}
		}
		if spec != "" || (conv != "s" && conv != "r") {
			return nil, 0, false
		}
		switch a := arg.(type) {
		case starlark.String:
			add(percentPiece{text: string(a), quote: conv == "r"})
		case rendered:
			add(percentPiece{text: a.text})
		case starlark.NoneType, starlark.Bool, starlark.Int, starlark.Float:
			// small (an integer has at most maxIntBits), the same text
			// for both conversions
			add(percentPiece{text: a.String()})
		default:
			return nil, 0, false
		}
	}
}

// formatDecimal is starlark-go's reading of a field name as a number: a
// run of decimal digits that does not overflow ("" is a number too, but
// the caller has taken that as automatic numbering).
func formatDecimal(s string) (int, bool) {
	x := 0
	for i := 0; i < len(s); i++ {
		d := s[i] - '0'
		if d > 9 {
			return 0, false
		}
		x = x*10 + int(d)
		if x < 0 {
			return 0, false
		}
	}
	return x, true
}
