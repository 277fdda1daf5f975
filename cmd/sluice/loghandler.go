package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"unicode/utf8"
)

// logHandler writes sluice's log as JSON lines, byte for byte what
// slog.NewJSONHandler writes with default options, at a fraction of its
// cost on the lines sluice writes per call: it encodes strings, integers,
// booleans, durations, times and errors itself, without slog's handler
// state, and it hands routine lines to the lockedWriter to be written
// with the next ones (see lockedWriter.logLine). Anything else (groups,
// floats, values that slog marshals as JSON) goes through a real
// slog.JSONHandler with the same attributes, so the output never depends
// on which of the two wrote it.
//
// # Why the log line is hand-encoded
//
// sluice serve logs one line per tool call. Through slog's JSON handler
// that line cost about as much CPU as reading the HTTP request, and it was
// one write to stderr per call, a system call and a wake-up of whatever
// reads the log, on the path of every answer.
type logHandler struct {
	out   *lockedWriter // nil: out is written directly (not a lockedWriter)
	w     io.Writer
	level slog.Level
	pre   []byte       // the attributes of WithAttrs, encoded with a leading ','
	plain bool         // no group is open and pre is ours: encode records ourselves
	slow  slog.Handler // slog's JSON handler with the same attributes and groups
}

func newLogHandler(w io.Writer, level slog.Level) *logHandler {
	h := &logHandler{w: w, level: level, plain: true}
	h.out, _ = w.(*lockedWriter)
	h.slow = slog.NewJSONHandler(slowWriter{h}, &slog.HandlerOptions{Level: level})
	return h
}

// slowWriter takes slog's handler's lines (one Write per record) as
// routine lines; Handle then makes a warning's urgent.
type slowWriter struct{ h *logHandler }

func (s slowWriter) Write(b []byte) (int, error) {
	if s.h.out == nil {
		return s.h.w.Write(b)
	}
	s.h.out.logLine(b, false)
	return len(b), nil
}

func (h *logHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return h
	}
	c := *h
	c.slow = h.slow.WithAttrs(as)
	if c.plain {
		pre := append([]byte(nil), h.pre...)
		for _, a := range as {
			var ok bool
			if pre, ok = appendLogAttr(pre, a); !ok {
				c.plain = false
				break
			}
		}
		c.pre = pre
	}
	return &c
}

// WithGroup opens a group even when name is empty, as slog's JSON handler
// does (slog.Logger.WithGroup never asks for one).
func (h *logHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.slow = h.slow.WithGroup(name)
	c.plain = false
	return &c
}

var logBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	urgent := r.Level >= slog.LevelWarn
	if !h.plain {
		return h.handleSlow(ctx, r, urgent)
	}
	bp := logBufs.Get().(*[]byte)
	b := append((*bp)[:0], '{')
	if !r.Time.IsZero() {
		if y := r.Time.Year(); y < 0 || y >= 10000 {
			logBufs.Put(bp)
			return h.handleSlow(ctx, r, urgent) // slog writes its own error text
		}
		b = append(b, `"time":"`...)
		b = r.Time.AppendFormat(b, "2006-01-02T15:04:05.999999999Z07:00")
		b = append(b, `",`...)
	}
	b = append(b, `"level":`...)
	b = appendLogString(b, r.Level.String())
	b = append(b, `,"msg":`...)
	b = appendLogString(b, r.Message)
	b = append(b, h.pre...)
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		b, ok = appendLogAttr(b, a)
		return ok
	})
	if !ok {
		*bp = b
		logBufs.Put(bp)
		return h.handleSlow(ctx, r, urgent)
	}
	b = append(b, '}', '\n')
	var err error
	if h.out != nil {
		h.out.logLine(b, urgent)
	} else {
		_, err = h.w.Write(b)
	}
	if cap(b) <= 64<<10 {
		*bp = b
		logBufs.Put(bp)
	}
	return err
}

func (h *logHandler) handleSlow(ctx context.Context, r slog.Record, urgent bool) error {
	err := h.slow.Handle(ctx, r)
	if urgent && h.out != nil {
		h.out.Flush()
	}
	return err
}

// appendLogAttr appends ,"key":value as slog's JSON handler writes a
// top-level attribute; ok is false for a value it leaves to slog.
func appendLogAttr(b []byte, a slog.Attr) ([]byte, bool) {
	v := a.Value.Resolve()
	if a.Key == "" && v.Kind() == slog.KindAny && v.Any() == nil {
		return b, true // slog drops an empty attribute
	}
	start := len(b)
	b = append(b, ',')
	b = appendLogString(b, a.Key)
	b = append(b, ':')
	switch v.Kind() {
	case slog.KindString:
		b = appendLogString(b, v.String())
	case slog.KindInt64:
		b = strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		b = strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindBool:
		b = strconv.AppendBool(b, v.Bool())
	case slog.KindDuration:
		b = strconv.AppendInt(b, int64(v.Duration()), 10)
	case slog.KindTime:
		t := v.Time()
		if y := t.Year(); y < 0 || y >= 10000 {
			return b[:start], false
		}
		b = append(b, '"')
		b = t.AppendFormat(b, "2006-01-02T15:04:05.999999999Z07:00")
		b = append(b, '"')
	case slog.KindAny:
		x := v.Any()
		err, isErr := x.(error)
		if _, marshals := x.(json.Marshaler); !isErr || marshals {
			return b[:start], false
		}
		b = appendLogString(b, err.Error())
	default:
		return b[:start], false
	}
	return b, true
}

const logHex = "0123456789abcdef"

// appendLogString appends s as a JSON string the way slog's JSON handler
// does: no HTML escaping, \n \r \t and \" \\ by name, other control
// characters as \u00XX, invalid UTF-8 as \ufffd, and U+2028 and U+2029
// escaped.
func appendLogString(b []byte, s string) []byte {
	b = append(b, '"')
	done := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[done:i]...)
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
				b = append(b, '\\', 'u', '0', '0', logHex[c>>4], logHex[c&0xf])
			}
			i++
			done = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[done:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[done:i]...), '\\', 'u', '2', '0', '2', logHex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		done = i
	}
	return append(append(b, s[done:]...), '"')
}
