package wasm

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

// filterLogHandler runs a filter over every log line, as the gateway's
// log handler runs its redaction filter over lines that carry what a
// server sent (a failing filter's last error among them).
type filterLogHandler struct{ f atomic.Pointer[Filter] }

func (h *filterLogHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *filterLogHandler) Handle(ctx context.Context, r slog.Record) error {
	if f := h.f.Load(); f != nil {
		_, _ = f.Run(ctx, []byte("\x00"+r.Message), Meta{})
	}
	return nil
}
func (h *filterLogHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *filterLogHandler) WithGroup(string) slog.Handler      { return h }

// TestFilterDisablingLogsOutsideItsLock: the line saying a filter was
// disabled is logged after the filter's lock is let go, so a log handler
// that runs that same filter over it (the gateway redacts its log with
// builtin:redact) neither deadlocks the failing call nor every later one.
func TestFilterDisablingLogsOutsideItsLock(t *testing.T) {
	var lh filterLogHandler
	// Closed only once the calls returned: Close waits for calls, and a
	// deadlocked one would hang the test's cleanup rather than fail it.
	h, err := NewHost(context.Background(), &Options{CacheDir: sharedCacheDir(t), Timeout: 30 * time.Second, DisableAfter: 2, Logger: slog.New(&lh)})
	if err != nil {
		t.Fatal(err)
	}
	f, err := h.Load(context.Background(), Spec{Name: "echo", Module: testGuest(t, "echo"), OnError: FailOpen})
	if err != nil {
		t.Fatal(err)
	}
	lh.f.Store(f)
	done := make(chan error, 1)
	go func() {
		var err error
		for _, in := range []string{"\x03a", "\x03b"} {
			_, err = f.Run(context.Background(), []byte(in), Meta{})
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Cleanup(func() { h.Close(context.Background()) })
		if err == nil {
			t.Fatal("the failing calls succeeded")
		}
	case <-time.After(2 * time.Minute): // hang guard
		t.Fatal("the call that disabled the filter never returned: its log line ran the filter under the filter's own lock")
	}
	if st := f.Status(); st.State != StateDisabled {
		t.Fatalf("status = %+v, want disabled", st)
	}
}

// TestFilterLogsNothingUnderItsLock: every line a filter logs about
// itself (re-enabled by command, re-enabled after the cool-down, an
// overrun starting and ending) is logged after the filter's lock is let
// go. The log handler here runs the same filter over each line, as the
// gateway's redacting handler does; under the lock each of these would
// deadlock.
func TestFilterLogsNothingUnderItsLock(t *testing.T) {
	var lh filterLogHandler
	h, err := NewHost(context.Background(), &Options{CacheDir: sharedCacheDir(t), Timeout: 30 * time.Second,
		DisableAfter: 1, DisableCoolDown: 50 * time.Millisecond, Logger: slog.New(&lh)})
	if err != nil {
		t.Fatal(err)
	}
	f, err := h.Load(context.Background(), Spec{Name: "echo", Module: testGuest(t, "echo"), OnError: FailOpen})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	disable := func() {
		if _, err := f.Run(ctx, []byte("\x03x"), Meta{Server: "bad"}); err == nil {
			t.Error("the failing call succeeded")
		}
	}
	steps := []struct {
		name string
		do   func()
	}{
		{"Enable after a disable", func() {
			disable()
			lh.f.Store(f)
			f.Enable()
			lh.f.Store(nil)
		}},
		{"Status after the cool-down", func() {
			disable()
			time.Sleep(100 * time.Millisecond) // past the cool-down
			lh.f.Store(f)
			if st := f.Status(); len(st.DisabledFor) != 0 {
				t.Errorf("status after the cool-down = %+v, want re-enabled", st)
			}
			lh.f.Store(nil)
		}},
		{"Run after the cool-down", func() {
			disable()
			time.Sleep(100 * time.Millisecond)
			lh.f.Store(f)
			if out, err := f.Run(ctx, []byte("\x00ok"), Meta{Server: "bad"}); err != nil || string(out.Data) != "ok" {
				t.Errorf("run after the cool-down: %q %v", out.Data, err)
			}
			lh.f.Store(nil)
		}},
		{"an overrun starting and ending", func() {
			lh.f.Store(f)
			f.overrunStarted("slow")
			f.overrunEnded("slow")
			lh.f.Store(nil)
		}},
	}
	for _, s := range steps {
		done := make(chan struct{})
		go func() { defer close(done); s.do() }()
		select {
		case <-done:
		case <-time.After(2 * time.Minute): // hang guard
			t.Fatalf("%s never returned: a line was logged under the filter's own lock", s.name)
		}
	}
	h.Close(ctx)
}
