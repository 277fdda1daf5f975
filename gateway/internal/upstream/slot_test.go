package upstream

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"sluice/gateway/mcp"
	"sluice/gateway/mcp/mcptest"
	"sluice/gateway/proc"
)

// inProcess launches the fixture server in this process over pipes and
// returns a ready client and its listing.
func inProcess(t *testing.T) func(ctx context.Context) (*mcp.Client, *mcp.ToolList, error) {
	return func(ctx context.Context) (*mcp.Client, *mcp.ToolList, error) {
		sr, cw := io.Pipe()
		cr, sw := io.Pipe()
		sctx, cancel := context.WithCancel(context.Background())
		served := make(chan struct{})
		go func() {
			defer close(served)
			_ = mcptest.Serve(sctx, sr, sw, io.Discard, nil)
			sw.Close()
		}()
		c := mcp.NewClient(cr, cw, func() proc.Outcome {
			cancel()
			sr.Close()
			<-served
			return proc.Outcome{Complete: true, Stage: "exited"}
		}, &mcp.Options{Server: "fx"})
		if err := c.Handshake(ctx); err != nil {
			c.Close()
			return nil, nil, err
		}
		tl, err := c.ListTools(ctx)
		if err != nil {
			c.Close()
			return nil, nil, err
		}
		return c, tl, nil
	}
}

func bg(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestTimeoutRule(t *testing.T) {
	s := New(Config{Server: "fx", CallTimeout: time.Minute, ToolTimeout: func(tool string) (time.Duration, bool) {
		return 2 * time.Minute, tool == "long"
	}})
	l := &Lease{s: s}
	for _, c := range []struct {
		tool  string
		limit time.Duration
		want  time.Duration
	}{
		{"", 0, time.Minute},
		{"echo", 0, time.Minute},
		{"echo", 10 * time.Second, 10 * time.Second},
		{"echo", 5 * time.Minute, time.Minute},
		{"long", 0, 2 * time.Minute},
		{"long", 90 * time.Second, 90 * time.Second},
	} {
		if got := l.Timeout(c.tool, c.limit); got != c.want {
			t.Errorf("Timeout(%q, %v) = %v, want %v", c.tool, c.limit, got, c.want)
		}
	}
	if got := (&Lease{s: New(Config{})}).Timeout("", 3*time.Second); got != 3*time.Second {
		t.Errorf("no bound of its own: Timeout = %v, want the surface's", got)
	}
}

func TestCrashLoopStopsRelaunching(t *testing.T) {
	var launches atomic.Int32
	boom := errors.New("exec: no such file")
	s := New(Config{Server: "fx", CrashLoopLimit: 3, RestartBackoff: time.Millisecond, MaxRestartBackoff: time.Millisecond,
		Launch: func(context.Context) (*mcp.Client, *mcp.ToolList, error) { launches.Add(1); return nil, nil, boom }})
	for i := 0; i < 3; i++ {
		if _, err := s.Acquire(bg(t)); !errors.Is(err, boom) {
			t.Fatalf("launch %d: %v, want the launch error", i+1, err)
		}
	}
	_, err := s.Acquire(bg(t))
	var cl *CrashLoopError
	if !errors.As(err, &cl) || cl.Failures != 3 || !errors.Is(err, boom) {
		t.Fatalf("after 3 failures: %v, want a crash loop naming the last error", err)
	}
	if st, _ := s.State(); st != CrashLoop {
		t.Fatalf("state %s", st)
	}
	if n := launches.Load(); n != 3 {
		t.Fatalf("%d launches, want 3 (none once in a crash loop)", n)
	}
	s.ResetFailures()
	if _, err := s.Acquire(bg(t)); !errors.Is(err, boom) || launches.Load() != 4 {
		t.Fatalf("after a reset: %v, %d launches; want one more launch", err, launches.Load())
	}
}

func TestLeaseIdleAndShutdown(t *testing.T) {
	now := time.Unix(1000, 0)
	var clock atomic.Pointer[time.Time]
	clock.Store(&now)
	var outcomes atomic.Int32
	s := New(Config{Server: "fx", CrashLoopLimit: 3, Launch: inProcess(t),
		Now:     func() time.Time { return *clock.Load() },
		Outcome: func(proc.Outcome) { outcomes.Add(1) }})
	l, err := s.Acquire(bg(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Tool("echo"); !ok {
		t.Fatal("the lease does not see the listing")
	}
	later := now.Add(time.Hour)
	clock.Store(&later)
	if s.IdleFor(later) != 0 || s.CloseIfIdle(later, time.Minute) {
		t.Fatal("a leased client counts as idle")
	}
	if _, err := l.Client().CallTool(bg(t), "echo", []byte(`{"text":"x"}`), &mcp.CallOptions{Timeout: l.Timeout("echo", 0)}); err != nil {
		t.Fatal(err)
	}
	l.Release(true)
	l.Release(true) // only the first counts
	much := later.Add(time.Hour)
	if s.IdleFor(much) != time.Hour {
		t.Fatalf("idle for %v, want 1h", s.IdleFor(much))
	}
	if !s.CloseIfIdle(much, time.Minute) || outcomes.Load() != 1 {
		t.Fatalf("idle client not closed (outcomes %d)", outcomes.Load())
	}
	if s.Running() != nil {
		t.Fatal("Running leased a closed client")
	}
	l, err = s.Acquire(bg(t)) // relaunches
	if err != nil {
		t.Fatal(err)
	}
	l.Release(true)
	if outs := s.Shutdown(); len(outs) != 1 || !outs[0].Complete {
		t.Fatalf("shutdown outcomes %+v", outs)
	}
	if _, err := s.Acquire(bg(t)); !errors.Is(err, ErrClosed) {
		t.Fatalf("after shutdown: %v", err)
	}
}

func TestReleaseRetiresADeadClient(t *testing.T) {
	s := New(Config{Server: "fx", CrashLoopLimit: 3, RestartBackoff: time.Hour, MaxRestartBackoff: time.Hour, Launch: inProcess(t)})
	l, err := s.Acquire(bg(t))
	if err != nil {
		t.Fatal(err)
	}
	c := l.Client()
	c.Close() // the server "dies" while leased
	l.Release(true)
	st, last := s.State()
	if st != Backoff || last == nil {
		t.Fatalf("state %s (%v), want backoff after the client died", st, last)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	var we *WaitError
	if _, err := s.Acquire(ctx); !errors.As(err, &we) {
		t.Fatalf("acquire during backoff: %v, want a WaitError", err)
	}
}
