package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
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
	red   *logRedactor // shared by the handlers derived from this one
	// foreignPre: an attribute of WithAttrs may carry what a server sent
	// (see foreignAttr).
	foreignPre bool
	safePre    []byte // the attributes of WithAttrs that cannot (see safeLine)
}

func newLogHandler(w io.Writer, level slog.Level) *logHandler {
	h := &logHandler{w: w, level: level, plain: true, red: &logRedactor{active: map[uint64]bool{}}}
	h.out, _ = w.(*lockedWriter)
	h.slow = slog.NewJSONHandler(slowWriter{h}, &slog.HandlerOptions{Level: level})
	return h
}

// slowWriter takes slog's handler's lines (one Write per record) as
// routine lines; Handle then makes a warning's urgent. Once a redactor is
// set every such line goes through it: slog's handler writes the values
// sluice's own encoding leaves to it (groups, floats, marshalled values),
// which are not looked at one by one.
type slowWriter struct{ h *logHandler }

func (s slowWriter) Write(b []byte) (int, error) {
	n := len(b)
	if s.h.red.on() {
		if out, ok := s.h.red.redact(context.Background(), bytes.TrimSuffix(b, []byte("\n"))); ok {
			b = append(out, '\n')
		} else {
			b = []byte(`{"msg":"a log line was withheld: the redaction filters could not run over it"}` + "\n")
		}
	}
	if s.h.out == nil {
		_, err := s.h.w.Write(b)
		return n, err
	}
	s.h.out.logLine(b, false)
	return n, nil
}

// # Why log lines go through the redaction filters
//
// What a server sends (an error message, a progress token, a line of its
// stderr relayed at debug level) reaches log lines at every level; a
// secret in it must not reach the operator's log when the results that
// carry it are redacted for the model. So once the gateway is open
// (redactWith), every line with an attribute that may carry such text
// (foreignAttr: any string or error under a key sluice does not fill
// itself) is run, whole, through every builtin:redact filter declared
// (Gateway.RedactLog), and so is every relayed stderr line. The per-call
// line carries only sluice's own values and costs nothing more. A line
// the filters cannot run over is written without those attributes,
// saying so; a line logged while its own goroutine is redacting another
// (the filters' own messages) is written the same way, never redacted
// by a recursion.

// logRedactor is the redaction the log lines of one command go through.
type logRedactor struct {
	fn     atomic.Pointer[redactFunc]
	mu     sync.Mutex
	active map[uint64]bool // goroutines redacting a line now
}

type redactFunc func(ctx context.Context, obj []byte) ([]byte, error)

// redactWith makes every log line and relayed stderr line that may carry
// a server's text go through fn (the gateway's RedactLog) from now on.
func (h *logHandler) redactWith(fn redactFunc) { h.red.fn.Store(&fn) }

func (r *logRedactor) on() bool { return r.fn.Load() != nil }

// redact runs obj (a JSON object) through the redactor; ok is false when
// it could not, or when this goroutine is already redacting a line.
func (r *logRedactor) redact(ctx context.Context, obj []byte) (out []byte, ok bool) {
	fn := r.fn.Load()
	if fn == nil {
		return obj, true
	}
	id := goroutineID()
	r.mu.Lock()
	if r.active[id] {
		r.mu.Unlock()
		return nil, false
	}
	r.active[id] = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.active, id)
		r.mu.Unlock()
	}()
	out, err := (*fn)(ctx, obj)
	if err != nil || !json.Valid(out) {
		return nil, false
	}
	return out, true
}

// goroutineID is the running goroutine's number, from the first line of
// its stack trace ("goroutine 12 [running]:").
func goroutineID() uint64 {
	var buf [40]byte
	b := bytes.TrimPrefix(buf[:runtime.Stack(buf[:], false)], []byte("goroutine "))
	var id uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

// ownLogKey reports the attributes whose values sluice fills itself (ids
// it made, names it validated, outcomes, addresses it listens on), never
// with what a server sent.
func ownLogKey(k string) bool {
	switch k {
	case "request_id", "tool", "capability", "outcome", "server",
		"filter", "mode", "addr", "path", "session", "client":
		return true
	}
	return false
}

// foreignAttr reports whether a may carry what a server sent: a string,
// error or other value under a key ownLogKey does not report.
func foreignAttr(a slog.Attr) bool {
	switch a.Value.Resolve().Kind() {
	case slog.KindInt64, slog.KindUint64, slog.KindBool, slog.KindDuration, slog.KindTime, slog.KindFloat64:
		return false
	}
	return !ownLogKey(a.Key)
}

// serverStderr is where the servers' stderr lines are relayed (at debug
// level): each goes through the redactor before it is written.
func (h *logHandler) serverStderr() io.Writer { return relayWriter{h} }

type relayWriter struct{ h *logHandler }

func (w relayWriter) Write(p []byte) (int, error) {
	line := p
	if w.h.red.on() {
		obj, _ := json.Marshal(map[string]string{"text": string(p)})
		out, ok := w.h.red.redact(context.Background(), obj)
		var v struct{ Text string }
		if !ok || json.Unmarshal(out, &v) != nil {
			v.Text = "(a server's stderr line was withheld: the redaction filters could not run over it)\n"
		}
		line = []byte(v.Text)
	}
	if _, err := w.h.w.Write(line); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (h *logHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return h
	}
	c := *h
	c.slow = h.slow.WithAttrs(as)
	for _, a := range as {
		if foreignAttr(a) {
			c.foreignPre = true
		} else if b, ok := appendLogAttr(nil, a); ok {
			c.safePre = append(append([]byte(nil), c.safePre...), b...)
		}
	}
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
		b = appendLogTime(b, r.Time)
		b = append(b, `",`...)
	}
	b = append(b, `"level":`...)
	b = appendLogString(b, r.Level.String())
	b = append(b, `,"msg":`...)
	b = appendLogString(b, r.Message)
	b = append(b, h.pre...)
	ok := true
	// Whether the line may carry a server's text (foreign) is worked out
	// in the same pass, and only when a redactor would act on it.
	red := h.red.on()
	foreign := h.foreignPre
	r.Attrs(func(a slog.Attr) bool {
		b, ok = appendLogAttr(b, a)
		if ok && red && !foreign {
			foreign = foreignAttr(a)
		}
		return ok
	})
	if !ok {
		*bp = b
		logBufs.Put(bp)
		return h.handleSlow(ctx, r, urgent)
	}
	b = append(b, '}', '\n')
	if red && foreign {
		if out, ok := h.red.redact(context.Background(), b[:len(b)-1]); ok {
			b = append(append(b[:0], out...), '\n')
		} else {
			b = h.safeLine(b[:0], r)
		}
	}
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

// safeLine is r's line without the attributes that may carry what a
// server sent, saying that they were withheld (the redaction filters
// could not run over them).
func (h *logHandler) safeLine(b []byte, r slog.Record) []byte {
	b = append(b, '{')
	if !r.Time.IsZero() {
		b = append(b, `"time":"`...)
		b = r.Time.AppendFormat(b, "2006-01-02T15:04:05.999999999Z07:00")
		b = append(b, `",`...)
	}
	b = append(b, `"level":`...)
	b = appendLogString(b, r.Level.String())
	b = append(b, `,"msg":`...)
	b = appendLogString(b, r.Message)
	b = append(b, h.safePre...)
	r.Attrs(func(a slog.Attr) bool {
		if !foreignAttr(a) {
			if nb, ok := appendLogAttr(b, a); ok {
				b = nb
			}
		}
		return true
	})
	return append(b, `,"withheld":"the attributes that may carry a server's text: the redaction filters could not run over them"}`+"\n"...)
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

// appendLogTime appends t as slog's JSON handler writes a record's time
// (t.AppendFormat with "2006-01-02T15:04:05.999999999Z07:00"): the date,
// the clock and the zone are formatted once per second and location, and
// only the fraction each time.
func appendLogTime(b []byte, t time.Time) []byte {
	sec, loc := t.Unix(), t.Location()
	c := logSecond.Load()
	if c == nil || c.sec != sec || c.loc != loc {
		c = &logSecondText{sec: sec, loc: loc,
			head: t.AppendFormat(nil, "2006-01-02T15:04:05"), zone: t.AppendFormat(nil, "Z07:00")}
		logSecond.Store(c)
	}
	b = append(b, c.head...)
	if ns := t.Nanosecond(); ns != 0 {
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i >= 1; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, c.zone...)
}

// logSecondText is one second's date, clock and zone as appendLogTime
// writes them; shared by every line of that second, only read.
type logSecondText struct {
	sec        int64
	loc        *time.Location
	head, zone []byte
}

var logSecond atomic.Pointer[logSecondText]

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
