package sandbox

// This file is `format % args` built in one buffer of its exact size:
// starlark-go's grows its builder piece by piece (about five times the
// result allocated, two and a quarter at the peak), so the operator was
// charged three times its result and a script formatting near its cap was
// refused for memory it would not have used.

import (
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// percentPiece is one part of a planned `%` result: literal text of the
// format, a string argument (quoted for %r), or a small piece starlark-go
// formatted alone.
type percentPiece struct {
	text  string
	quote bool
}

// maxPercentPieces bounds the pieces planPercent keeps (each 24 bytes,
// and a scalar's its own small string): a format of more directives is
// left to starlark-go, charged for its growing builder.
const maxPercentPieces = 1 << 14

// planPercent reads format as starlark-go's `%` does, with args as
// percentArgs left them (containers rendered), and returns the pieces of
// the result and its exact length (a quoted piece counted at the length
// quotedLen bounds it by). ok is false on any format or argument error,
// and past maxPercentPieces: the caller then lets starlark-go run it.
func planPercent(format string, x starlark.Value) (pieces []percentPiece, size int64, ok bool) {
	index, nargs := 0, 1
	tuple, isTuple := x.(starlark.Tuple)
	if isTuple {
		nargs = len(tuple)
	}
	add := func(p percentPiece) { pieces, size = addPiece(pieces, size, p) }
	for {
		i := strings.IndexByte(format, '%')
		if i < 0 {
			add(percentPiece{text: format})
			break
		}
		add(percentPiece{text: format[:i]})
		if len(pieces) > maxPercentPieces {
			return nil, 0, false
		}
		format = format[i+1:]
		if format != "" && format[0] == '%' {
			add(percentPiece{text: "%"})
			format = format[1:]
			continue
		}
		var arg starlark.Value
		if format != "" && format[0] == '(' {
			format = format[1:]
			j := strings.IndexByte(format, ')')
			if j < 0 {
				return nil, 0, false
			}
			m, isMap := x.(starlark.Mapping)
			if !isMap {
				return nil, 0, false
			}
			v, found, _ := m.Get(starlark.String(format[:j]))
			if !found {
				return nil, 0, false
			}
			arg = v
			format = format[j+1:]
		} else {
			if index >= nargs {
				return nil, 0, false
			}
			if isTuple {
				arg = tuple[index]
			} else {
				arg = x
			}
		}
		if format == "" {
			return nil, 0, false
		}
		c := format[0]
		switch s, isStr := arg.(starlark.String); {
		case isStr && c == 's':
			add(percentPiece{text: string(s)})
		case isStr && c == 'r':
			add(percentPiece{text: string(s), quote: true})
		case c == 's' || c == 'r':
			if r, isRendered := arg.(rendered); isRendered {
				add(percentPiece{text: r.text})
				break
			}
			fallthrough
		default:
			// one directive of a scalar: small (an integer has at most
			// maxIntBits), formatted by starlark-go itself
			v, err := starlark.Binary(syntax.PERCENT, starlark.String("%"+string(c)), starlark.Tuple{arg})
			if err != nil {
				return nil, 0, false
			}
			add(percentPiece{text: string(v.(starlark.String))})
		}
		format = format[1:]
		index++
	}
	if _, isMap := x.(starlark.Mapping); index < nargs && !isMap {
		return nil, 0, false
	}
	return pieces, size, true
}

// addPiece appends p to pieces of size bytes, counting a quoted piece at
// the length quotedLen bounds it by; an empty text adds nothing.
func addPiece(pieces []percentPiece, size int64, p percentPiece) ([]percentPiece, int64) {
	if p.text == "" && !p.quote {
		return pieces, size
	}
	if p.quote {
		return append(pieces, p), size + quotedLen(p.text)
	}
	return append(pieces, p), size + int64(len(p.text))
}

// buildPercent joins planned pieces into one buffer of size bytes.
func buildPercent(pieces []percentPiece, size int64) string {
	var b strings.Builder
	b.Grow(int(size))
	for _, p := range pieces {
		if p.quote {
			quoteTo(&b, p.text)
		} else {
			b.WriteString(p.text)
		}
	}
	return b.String()
}
