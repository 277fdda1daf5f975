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
