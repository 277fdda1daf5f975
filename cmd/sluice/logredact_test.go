package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeRedactor masks SECRET in what it is given, counting its runs; with
// fail set it fails instead.
type fakeRedactor struct {
	runs atomic.Int64
	fail bool
	// during, when set, runs inside each redaction (a filter that logs).
	during func()
}

func (f *fakeRedactor) redact(_ context.Context, obj []byte) ([]byte, error) {
	f.runs.Add(1)
	if !json.Valid(obj) {
		return nil, errors.New("not JSON")
	}
	if f.during != nil {
		f.during()
	}
	if f.fail {
		return nil, errors.New("filter failed")
	}
	return bytes.ReplaceAll(obj, []byte("SECRET"), []byte("[R]")), nil
}

func redactedLines(buf *bytes.Buffer) []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			return append(out, map[string]any{"not-json": l})
		}
		out = append(out, m)
	}
	return out
}

// TestLogRedaction: once a redactor is set, a line with an attribute
// that may carry a server's text (an error, a string under a key sluice
// does not fill, one given to With, a line slog's own handler encodes, a
// relayed stderr line) is written as the redactor returns it; a line of
// sluice's own values only (the per-call line) is not run through it; a
// line the redactor fails on, or one logged from within a redaction, is
// written without those attributes, saying so.
func TestLogRedaction(t *testing.T) {
	var buf bytes.Buffer
	h := newLogHandler(&buf, slog.LevelDebug)
	log := slog.New(h)
	f := &fakeRedactor{}

	log.Debug("before", "error", "SECRET early")
	if !strings.Contains(buf.String(), "SECRET early") {
		t.Fatalf("without a redactor a line is written as it is: %s", buf.String())
	}
	buf.Reset()
	h.redactWith(f.redact)

	log.Info("call finished", "request_id", "r1", "tool", "t", "capability", "s__t", "outcome", "ok", "duration_ms", 3)
	if f.runs.Load() != 0 {
		t.Errorf("the per-call line went through the redactor")
	}
	log.Debug("upstream call", "server", "fx", "error", errors.New("failure near SECRET"), "duration_ms", 1)
	log.With("stderr", "tail SECRET").Warn("server failed", "server", "fx")
	log.Info("float", "ratio", 1.5, "token", "SECRET")          // slog's handler encodes this one
	log.WithGroup("g").Info("grouped", "id", "SECRET in group") // and this one
	if _, err := h.serverStderr().Write([]byte("[fx] printed SECRET\n")); err != nil {
		t.Fatal(err)
	}
	if n := f.runs.Load(); n != 5 {
		t.Errorf("%d lines went through the redactor, want 5", n)
	}
	out := buf.String()
	if strings.Contains(out, "SECRET") {
		t.Errorf("a secret was written:\n%s", out)
	}
	for _, want := range []string{`"error":"failure near [R]"`, `"stderr":"tail [R]"`, `"token":"[R]"`, `"id":"[R] in group"`, "[fx] printed [R]\n", `"request_id":"r1"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %s:\n%s", want, out)
		}
	}

	// The redactor fails: the line keeps sluice's own attributes only.
	buf.Reset()
	f.fail = true
	log.With("request_id", "r2").Warn("upstream call", "server", "fx", "outcome", "error", "error", errors.New("near SECRET"))
	_, _ = h.serverStderr().Write([]byte("[fx] SECRET\n"))
	out = buf.String()
	lines := redactedLines(&buf)
	if strings.Contains(out, "SECRET") || len(lines) != 2 {
		t.Fatalf("a line the redactor failed on:\n%s", out)
	}
	if m := lines[0]; m["request_id"] != "r2" || m["server"] != "fx" || m["outcome"] != "error" || m["msg"] != "upstream call" || m["withheld"] == nil || m["error"] != nil {
		t.Errorf("the withheld line: %v", m)
	}
	if !strings.Contains(out, "(a server's stderr line was withheld") {
		t.Errorf("the withheld stderr line: %s", out)
	}

	// A line logged while its goroutine redacts another is withheld, not
	// redacted by a recursion.
	buf.Reset()
	f.fail = false
	f.during = func() {
		log.Error("filter failed to load", "filter", "builtin:redact", "error", errors.New("SECRET inside"))
	}
	log.Debug("upstream call", "error", errors.New("outer SECRET"))
	out = buf.String()
	lines = redactedLines(&buf)
	if strings.Contains(out, "SECRET") || len(lines) != 2 {
		t.Fatalf("a line logged during a redaction:\n%s", out)
	}
	if lines[0]["msg"] != "filter failed to load" || lines[0]["withheld"] == nil || lines[0]["filter"] != "builtin:redact" {
		t.Errorf("the nested line: %v", lines[0])
	}
	if lines[1]["error"] != "outer [R]" {
		t.Errorf("the outer line: %v", lines[1])
	}
}
