package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// jsonErr is an error that marshals itself: slog writes its JSON, not its
// text.
type jsonErr struct{}

func (jsonErr) Error() string                { return "as text" }
func (jsonErr) MarshalJSON() ([]byte, error) { return []byte(`{"as":"json"}`), nil }

var regexpTime = regexp.MustCompile(`"time":"[^"]*"`)

type valuer struct{}

func (valuer) LogValue() slog.Value { return slog.StringValue("resolved") }

// logPair writes the same records through slog's JSON handler and through
// logHandler (straight to a buffer, and through a lockedWriter) and
// reports the three outputs.
func logPair(t *testing.T, setup func(slog.Handler) slog.Handler, recs ...slog.Record) (want, direct, held string) {
	t.Helper()
	var a, b, c bytes.Buffer
	ha := setup(slog.NewJSONHandler(&a, &slog.HandlerOptions{Level: slog.LevelDebug}))
	hb := setup(newLogHandler(&b, slog.LevelDebug))
	lw := &lockedWriter{w: &c}
	hc := setup(newLogHandler(lw, slog.LevelDebug))
	for _, r := range recs {
		if err := ha.Handle(context.Background(), r.Clone()); err != nil {
			t.Fatal(err)
		}
		if err := hb.Handle(context.Background(), r.Clone()); err != nil {
			t.Fatal(err)
		}
		if err := hc.Handle(context.Background(), r.Clone()); err != nil {
			t.Fatal(err)
		}
	}
	lw.close()
	return a.String(), b.String(), c.String()
}

func record(t time.Time, lvl slog.Level, msg string, attrs ...slog.Attr) slog.Record {
	r := slog.NewRecord(t, lvl, msg, 0)
	r.AddAttrs(attrs...)
	return r
}

// TestLogHandlerWritesWhatSlogWrites: every kind of record sluice logs,
// and the ones it leaves to slog, come out byte for byte as slog's JSON
// handler writes them, with and without attributes and groups added by
// With, and none is lost or reordered on the way through a lockedWriter.
func TestLogHandlerWritesWhatSlogWrites(t *testing.T) {
	when := time.Date(2026, 12, 1, 20, 50, 1, 123456789, time.UTC)
	local := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", -(5*3600+30*60)))
	id := func(h slog.Handler) slog.Handler { return h }
	cases := []struct {
		name  string
		setup func(slog.Handler) slog.Handler
		recs  []slog.Record
	}{
		{"the per-call line", id, []slog.Record{record(when, slog.LevelInfo, "call finished",
			slog.String("request_id", "01J9ZK"), slog.String("tool", "fx__echo"), slog.String("capability", "fx__echo"),
			slog.String("outcome", "ok"), slog.Int64("duration_ms", 0))}},
		{"a failed call", id, []slog.Record{record(when, slog.LevelWarn, "call finished",
			slog.String("outcome", "error"), slog.Int64("duration_ms", 12), slog.Any("err", errors.New("fx: \"broken\"\n\tpipe")))}},
		{"every kind", id, []slog.Record{record(when, slog.LevelDebug, "kinds",
			slog.Int("i", -42), slog.Uint64("u", math.MaxUint64), slog.Bool("b", true), slog.Duration("d", 1500*time.Millisecond),
			slog.Time("t", local), slog.Time("zero", time.Time{}), slog.Any("v", valuer{}), slog.String("", "empty key"), slog.Attr{})}},
		{"levels", id, []slog.Record{record(when, slog.LevelError, "e"), record(when, slog.LevelInfo+2, "i2"), record(when, slog.LevelDebug-1, "d-1")}},
		{"no time", id, []slog.Record{record(time.Time{}, slog.LevelInfo, "timeless", slog.String("k", "v"))}},
		{"escapes", id, []slog.Record{record(when, slog.LevelInfo, "<html> & \"quotes\" \\ \u2028\u2029 \x00\x1f\x7f é \xff\xfe",
			slog.String("k\"ey\n", "\r\t\b\f"), slog.String("emoji", "🦀 \xed\xa0\x80"))}},
		{"left to slog", id, []slog.Record{record(when, slog.LevelInfo, "slow",
			slog.String("first", "x"), slog.Float64("f", 0.1), slog.Any("m", map[string]int{"a": 1}), slog.Any("je", jsonErr{}),
			slog.Group("g", slog.String("a", "b")), slog.Any("nil", nil), slog.Time("far", time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC)))}},
		{"year out of range", id, []slog.Record{record(time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), slog.LevelInfo, "ancient")}},
		{"with attrs", func(h slog.Handler) slog.Handler {
			return h.WithAttrs([]slog.Attr{slog.String("component", "mcp-http")}).WithAttrs([]slog.Attr{slog.Int("n", 3)})
		}, []slog.Record{record(when, slog.LevelWarn, "w", slog.String("k", "v")), record(when, slog.LevelInfo, "none")}},
		{"with a float attr", func(h slog.Handler) slog.Handler {
			return h.WithAttrs([]slog.Attr{slog.Float64("ratio", 1.5)})
		}, []slog.Record{record(when, slog.LevelInfo, "r", slog.String("k", "v"))}},
		{"with a group", func(h slog.Handler) slog.Handler {
			return h.WithAttrs([]slog.Attr{slog.String("a", "1")}).WithGroup("").WithGroup("call").WithAttrs([]slog.Attr{slog.String("b", "2")})
		}, []slog.Record{record(when, slog.LevelInfo, "grouped", slog.String("c", "3")), record(when, slog.LevelInfo, "empty group")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, direct, held := logPair(t, c.setup, c.recs...)
			if direct != want {
				t.Errorf("logHandler wrote\n%s\nslog's JSON handler\n%s", direct, want)
			}
			if held != want {
				t.Errorf("through a lockedWriter logHandler wrote\n%s\nslog's JSON handler\n%s", held, want)
			}
		})
	}
}

// TestLogHandlerThroughLogger: lines logged through a slog.Logger (the
// way sluice logs) are slog's lines; only the time, which the two loggers
// take themselves, is set aside.
func TestLogHandlerThroughLogger(t *testing.T) {
	var a, b bytes.Buffer
	noTime := func(groups []string, at slog.Attr) slog.Attr {
		if len(groups) == 0 && at.Key == slog.TimeKey {
			return slog.String(slog.TimeKey, "T")
		}
		return at
	}
	la := slog.New(slog.NewJSONHandler(&a, &slog.HandlerOptions{ReplaceAttr: noTime}))
	lb := slog.New(newLogHandler(&b, slog.LevelInfo))
	for _, l := range []*slog.Logger{la, lb} {
		l.Debug("hidden")
		l.Info("shown", "n", 1, "err", errors.New("e"), "d", time.Second)
		l.With("request_id", "r1").Warn("w", "tool", "t")
	}
	got := regexpTime.ReplaceAllString(b.String(), `"time":"T"`)
	if got != a.String() {
		t.Errorf("got\n%s\nwant\n%s", got, a.String())
	}
}

// TestLockedWriterKeepsOrderAndLosesNothing: routine lines are held back,
// but every other write (a warning, a plain write, the end of the
// command) writes them first, in order; after close nothing is held back;
// and a routine line left alone is written by itself.
func TestLockedWriterKeepsOrderAndLosesNothing(t *testing.T) {
	var out syncBuffer
	lw := &lockedWriter{w: &out}
	lw.logLine([]byte("1 info\n"), false)
	lw.logLine([]byte("2 info\n"), false)
	lw.logLine([]byte("3 warn\n"), true)
	if got := out.String(); got != "1 info\n2 info\n3 warn\n" {
		t.Fatalf("after a warning: %q", got)
	}
	lw.logLine([]byte("4 info\n"), false)
	fmt.Fprint(lw, "5 plain\n")
	if got := out.String(); !strings.HasSuffix(got, "4 info\n5 plain\n") {
		t.Fatalf("after a plain write: %q", got)
	}
	lw.logLine([]byte("6 info\n"), false)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.HasSuffix(out.String(), "6 info\n") {
		if time.Now().After(deadline) {
			t.Fatalf("a held line was never written: %q", out.String())
		}
		time.Sleep(time.Millisecond)
	}
	lw.logLine([]byte("7 info\n"), false)
	lw.close()
	if got := out.String(); !strings.HasSuffix(got, "6 info\n7 info\n") {
		t.Fatalf("after close: %q", got)
	}
	lw.logLine([]byte("8 info\n"), false)
	if got := out.String(); !strings.HasSuffix(got, "7 info\n8 info\n") {
		t.Fatalf("after close a line is written at once: %q", got)
	}

	// Many writers: every line arrives whole, once.
	var out2 syncBuffer
	lw2 := &lockedWriter{w: &out2}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				lw2.logLine(fmt.Appendf(nil, "g%d-%d\n", g, i), i%50 == 0)
			}
		}()
	}
	wg.Wait()
	lw2.close()
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(out2.String(), "\n"), "\n") {
		if seen[l] {
			t.Fatalf("line %q written twice", l)
		}
		seen[l] = true
	}
	if len(seen) != 8*200 {
		t.Fatalf("%d lines written, want %d", len(seen), 8*200)
	}
}

// FuzzLogLine: for any message, key and values, logHandler writes what
// slog's JSON handler writes.
func FuzzLogLine(f *testing.F) {
	f.Add("call finished", "request_id", "01J9ZK", int64(3), int64(1733086201123456789), "err text")
	f.Add("<&>\u2028", "k\x00", "\xff\"\\\n", int64(-1), int64(0), "")
	f.Fuzz(func(t *testing.T, msg, key, val string, n, nanos int64, errText string) {
		when := time.Unix(0, nanos).UTC()
		r := record(when, slog.LevelInfo, msg, slog.String(key, val), slog.Int64("n", n), slog.Any("err", errors.New(errText)), slog.Duration(val, time.Duration(n)))
		want, direct, held := logPair(t, func(h slog.Handler) slog.Handler {
			return h.WithAttrs([]slog.Attr{slog.String(val, key)})
		}, r)
		if direct != want || held != want {
			t.Fatalf("logHandler wrote\n%q\n%q\nslog's JSON handler\n%q", direct, held, want)
		}
	})
}

// BenchmarkLogLine: the per-call line of sluice serve through slog's JSON
// handler and through logHandler (held back in a lockedWriter, as serve
// writes it), both into io.Discard; the ratio is the claim.
func BenchmarkLogLine(b *testing.B) {
	attrs := []slog.Attr{slog.String("request_id", "5f0c2a9e1b7d4c3a8e6f0b12"), slog.String("tool", "fx__echo"), slog.String("capability", "fx__echo"),
		slog.String("outcome", "ok"), slog.Int64("duration_ms", 0)}
	for _, c := range []struct {
		name string
		h    slog.Handler
	}{
		{"slog", slog.NewJSONHandler(io.Discard, nil)},
		{"sluice", newLogHandler(&lockedWriter{w: io.Discard}, slog.LevelInfo)},
		// As serve runs it: a redactor set (the per-call line's attributes
		// are all sluice's own, so it is never run).
		{"sluice-redacting", func() slog.Handler {
			h := newLogHandler(&lockedWriter{w: io.Discard}, slog.LevelInfo)
			h.redactWith(func(_ context.Context, obj []byte) ([]byte, error) { return obj, nil })
			return h
		}()},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := slog.NewRecord(time.Now(), slog.LevelInfo, "call finished", 0)
				r.AddAttrs(attrs...)
				_ = c.h.Handle(context.Background(), r)
			}
		})
	}
}
