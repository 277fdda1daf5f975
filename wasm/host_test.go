package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTextModeWAT(t *testing.T) {
	h := newTestHost(t, nil)
	f := mustLoad(t, h, Spec{Name: "upper", Module: testGuest(t, "upper")})
	ctx := context.Background()
	tests := []struct{ in, want string }{
		{"", ""},
		{"abc", "ABC"},
		{"mixed Case 123 — ünïcode", "MIXED CASE 123 — üNïCODE"},
		{strings.Repeat("x", 200000), strings.Repeat("X", 200000)},
	}
	for _, tc := range tests {
		out, err := f.Run(ctx, []byte(tc.in), Meta{})
		if err != nil {
			t.Fatalf("Run(%.20q): %v", tc.in, err)
		}
		if string(out.Data) != tc.want {
			t.Fatalf("Run(%.20q) = %.20q, want %.20q", tc.in, out.Data, tc.want)
		}
	}
	// Apply walks the text items of a whole result and keeps the rest.
	res := `{"content":[{"type":"text","text":"hi there"},{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"text","text":"x","annotations":{"priority":0.50}}],"isError":false}`
	out, err := f.Apply(ctx, []byte(res), Meta{Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Content []map[string]json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(out.Data, &got); err != nil {
		t.Fatal(err)
	}
	if string(got.Content[0]["text"]) != `"HI THERE"` || string(got.Content[2]["text"]) != `"X"` || string(got.Content[1]["data"]) != `"aGk="` {
		t.Fatalf("Apply = %s", out.Data)
	}
	if !bytes.Contains(out.Data, []byte(`"priority":0.50`)) {
		t.Fatalf("Apply lost a number's source text: %s", out.Data)
	}
}

func TestStatuses(t *testing.T) {
	h := newTestHost(t, &Options{DisableAfter: -1})
	f := mustLoad(t, h, Spec{Name: "echo", Module: testGuest(t, "echo")})
	ctx := context.Background()
	tests := []struct {
		name   string
		in     string
		status Status
		data   string
		reason string
		err    any
	}{
		{"replace", "\x00new", StatusReplaced, "new", "", nil},
		{"replace empty", "\x00", StatusReplaced, "", "", nil},
		{"pass", "\x01ignored", StatusPass, "\x01ignored", "", nil},
		{"empty pass", "", StatusPass, "", "", nil},
		{"block", "\x02contains a secret", StatusBlocked, "", "contains a secret", nil},
		{"block control chars cleaned", "\x02a\nb", StatusBlocked, "", "a b", nil},
		{"reported", "\x03boom", 0, "", "", new(*ReportedError)},
		{"bad status", "\x07x", 0, "", "", new(*StatusError)},
		{"invalid utf8", "\x00\xff\xfe", 0, "", "", new(*InvalidOutputError)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := f.Run(ctx, []byte(tc.in), Meta{})
			if tc.err != nil {
				if !errors.As(err, tc.err) || !IsFilterFailure(err) {
					t.Fatalf("err = %v, want %T", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != tc.status || string(out.Data) != tc.data || out.Reason != tc.reason {
				t.Fatalf("got %v %q %q", out.Status, out.Data, out.Reason)
			}
		})
	}
}

// TestMisbehavingGuests: each failure is typed, the instance is discarded,
// the host keeps serving other filters and fail-closed withholds the result.
func TestMisbehavingGuests(t *testing.T) {
	h := newTestHost(t, &Options{DisableAfter: -1, MaxOutputBytes: 100000, Timeout: 10 * time.Second})
	good := mustLoad(t, h, Spec{Name: "upper", Module: testGuest(t, "upper")})
	ctx := context.Background()
	tests := []struct {
		guest string
		mode  Mode
		want  any
	}{
		{"loop", ModeText, new(*TimeoutError)},
		{"grow", ModeText, new(*MemoryLimitError)},
		{"trap", ModeText, new(*TrapError)},
		{"badptr", ModeText, new(*TrapError)},
		{"invalid", ModeResultJSON, new(*InvalidOutputError)},
		{"bigout", ModeText, new(*OutputTooLargeError)},
	}
	for _, tc := range tests {
		t.Run(tc.guest, func(t *testing.T) {
			spec := Spec{Name: tc.guest, Module: testGuest(t, tc.guest), Mode: tc.mode}
			if tc.guest == "loop" {
				spec.Timeout = 50 * time.Millisecond
			}
			f := mustLoad(t, h, spec)
			for i := 0; i < 3; i++ { // repeatedly
				input := []byte(`{"content":[]}`)
				start := time.Now()
				out, err := f.Run(ctx, input, Meta{})
				elapsed := time.Since(start)
				if !errors.As(err, tc.want) || !IsFilterFailure(err) {
					t.Fatalf("call %d: err = %v, want %T", i, err, tc.want)
				}
				if tc.guest == "loop" {
					t.Logf("infinite loop stopped %v after a 50ms deadline (overshoot %v)", elapsed, elapsed-50*time.Millisecond)
					if elapsed > 5*time.Second {
						t.Fatalf("loop not stopped: %v", elapsed)
					}
				}
				d := f.Decide(input, out, err)
				if !d.Blocked || d.Data != nil || d.Err == nil {
					t.Fatalf("fail-closed decision = %+v", d)
				}
				if strings.Contains(d.Reason, "0x") || strings.Contains(d.Reason, "wasm stack") {
					t.Fatalf("model-facing reason leaks internals: %q", d.Reason)
				}
				open := DecideWith(tc.guest, FailOpen, input, out, err)
				if open.Blocked || !open.FailedOpen || !bytes.Equal(open.Data, input) {
					t.Fatalf("fail-open decision = %+v", open)
				}
				// The host keeps serving.
				if out, err := good.Run(ctx, []byte("ok"), Meta{}); err != nil || string(out.Data) != "OK" {
					t.Fatalf("healthy filter after %s: %q %v", tc.guest, out.Data, err)
				}
			}
			// A guest that returned normally with output the host
			// refuses keeps its instance (TestRefusedOutputKeepsTheInstance);
			// every other failure closed its own.
			want := 0
			if tc.guest == "invalid" {
				want = 1
			}
			if n := len(f.pool.live); n != want {
				t.Fatalf("%d failed instances still live, want %d", n, want)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	h := newTestHost(t, nil)
	ctx := context.Background()
	upper := testGuest(t, "upper")
	tests := []struct {
		name  string
		spec  Spec
		check func(error) bool
	}{
		{"wrong abi", Spec{Module: testGuest(t, "abiv2")}, func(err error) bool {
			var e *ABIVersionError
			return errors.As(err, &e) && e.Found == "mcpf_abi_v2"
		}},
		{"forbidden import", Spec{Module: testGuest(t, "forbidden")}, func(err error) bool {
			var e *ForbiddenImportError
			return errors.As(err, &e) && e.Module == "wasi_snapshot_preview1" && e.Name == "path_open" && strings.Contains(err.Error(), "path_open")
		}},
		{"declared memory over cap", Spec{Module: testGuest(t, "bigmem")}, func(err error) bool {
			var e *MemoryLimitError
			return errors.As(err, &e)
		}},
		{"config rejected", Spec{Module: testGuest(t, "initreject"), Config: json.RawMessage(`{}`)}, func(err error) bool {
			var e *ConfigError
			return errors.As(err, &e) && errors.Is(err, ErrConfigRejected) && e.Message == "budget too small"
		}},
		{"sha256 mismatch", Spec{Module: upper, SHA256: strings.Repeat("ab", 32)}, func(err error) bool { return errors.Is(err, ErrSHA256Mismatch) }},
		{"sha256 malformed", Spec{Module: upper, SHA256: "xyz"}, func(err error) bool { return errors.Is(err, ErrInvalidSpec) }},
		{"unknown builtin", Spec{Builtin: "nope"}, func(err error) bool { return errors.Is(err, ErrUnknownBuiltin) }},
		{"not wasm", Spec{Module: []byte("\x00asm garbage")}, func(err error) bool {
			var e *CompileError
			return errors.As(err, &e)
		}},
		{"bad config json", Spec{Module: upper, Config: json.RawMessage(`{`)}, func(err error) bool { return errors.Is(err, ErrInvalidSpec) }},
		{"bad mode", Spec{Module: upper, Mode: "xml"}, func(err error) bool { return errors.Is(err, ErrInvalidSpec) }},
		{"bad onError", Spec{Module: upper, OnError: "maybe"}, func(err error) bool { return errors.Is(err, ErrInvalidSpec) }},
		{"empty", Spec{}, func(err error) bool { return errors.Is(err, ErrInvalidSpec) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Name = tc.name
			f, err := h.Load(ctx, tc.spec)
			if err == nil {
				f.Close(ctx)
				t.Fatal("Load succeeded")
			}
			if !tc.check(err) {
				t.Fatalf("unexpected error %T: %v", err, err)
			}
		})
	}
	// A correct pin loads.
	sum := sha256hex(upper)
	f := mustLoad(t, h, Spec{Name: "pinned", Module: upper, SHA256: sum})
	if _, err := f.Run(ctx, []byte("a"), Meta{}); err != nil {
		t.Fatal(err)
	}
}

func TestDisableAfterConsecutiveFailures(t *testing.T) {
	h := newTestHost(t, &Options{DisableAfter: 3})
	f := mustLoad(t, h, Spec{Name: "echo", Module: testGuest(t, "echo"), OnError: FailOpen})
	ctx := context.Background()
	// Two failures, a success (resets the streak), then three failures.
	for i, in := range []string{"\x03a", "\x03b", "\x00ok", "\x03c", "\x03d"} {
		if _, err := f.Run(ctx, []byte(in), Meta{}); (err != nil) != (in[0] == 3) {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if st := f.Status(); st.State != StateActive || st.ConsecutiveFailures != 2 {
		t.Fatalf("status = %+v", st)
	}
	if _, err := f.Run(ctx, []byte("\x03e"), Meta{}); err == nil {
		t.Fatal("want failure")
	}
	st := f.Status()
	if st.State != StateDisabled || st.Failures != 5 || st.Calls != 6 || !strings.Contains(st.LastError, "e") || st.DisabledAt.IsZero() {
		t.Fatalf("status = %+v", st)
	}
	_, err := f.Run(ctx, []byte("\x00fine"), Meta{})
	if !errors.Is(err, ErrDisabled) || !IsFilterFailure(err) {
		t.Fatalf("disabled filter: %v", err)
	}
	if d := f.Decide([]byte("in"), Output{}, err); !d.FailedOpen || string(d.Data) != "in" {
		t.Fatalf("fail-open on disabled: %+v", d)
	}
}

func TestRecycle(t *testing.T) {
	h := newTestHost(t, &Options{MaxCallsPerInstance: 3, PoolSize: 1})
	f := mustLoad(t, h, Spec{Name: "upper", Module: testGuest(t, "upper")})
	ctx := context.Background()
	seen := map[*instance]int{}
	// An instance serves on past the limit while its replacement is made
	// in the background, but never to twice the limit: 18 calls meet at
	// least three instances.
	for i := 0; i < 18; i++ {
		if _, err := f.Run(ctx, []byte("a"), Meta{}); err != nil {
			t.Fatal(err)
		}
		f.pool.mu.Lock()
		for in := range f.pool.live {
			seen[in]++
		}
		f.pool.mu.Unlock()
	}
	if len(seen) < 3 {
		t.Fatalf("instances used: %d, want recycling every 3 calls", len(seen))
	}
	// Memory high-water mark: an instance grown above RecycleAbovePages is
	// not reused.
	h2 := newTestHost(t, &Options{RecycleAbovePages: 2, PoolSize: 1, Timeout: 10 * time.Second})
	g := mustLoad(t, h2, Spec{Name: "upper", Module: testGuest(t, "upper")})
	if _, err := g.Run(ctx, bytes.Repeat([]byte("a"), 3*65536), Meta{}); err != nil {
		t.Fatal(err)
	}
	if n := len(g.pool.idle); n != 0 {
		t.Fatalf("grown instance returned to the pool (%d idle)", n)
	}
}

func TestPoolSharingAndClose(t *testing.T) {
	h := newTestHost(t, nil)
	ctx := context.Background()
	m := testGuest(t, "upper")
	a := mustLoad(t, h, Spec{Name: "a", Module: m, Config: json.RawMessage(`{"x": 1}`)})
	b := mustLoad(t, h, Spec{Name: "b", Module: m, Config: json.RawMessage(`{"x":1}`)})
	c := mustLoad(t, h, Spec{Name: "c", Module: m, Config: json.RawMessage(`{"x":2}`)})
	if a.pool != b.pool || a.pool == c.pool {
		t.Fatal("pools must be keyed by module hash + config digest")
	}
	a.Close(ctx)
	if _, err := b.Run(ctx, []byte("x"), Meta{}); err != nil {
		t.Fatalf("b after a.Close: %v", err)
	}
	if _, err := a.Run(ctx, []byte("x"), Meta{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed filter: %v", err)
	}
	if a.Status().State != StateClosed {
		t.Fatal("closed state")
	}
	h.Close(ctx)
	if _, err := h.Load(ctx, Spec{Module: m}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Load after Close: %v", err)
	}
	if _, err := b.Run(ctx, []byte("x"), Meta{}); err == nil {
		t.Fatal("Run after host Close succeeded")
	}
}

func TestInputTooLarge(t *testing.T) {
	h := newTestHost(t, &Options{MaxInputBytes: 10})
	f := mustLoad(t, h, Spec{Name: "upper", Module: testGuest(t, "upper")})
	if _, err := f.Run(context.Background(), make([]byte, 11), Meta{}); !errors.Is(err, ErrInputTooLarge) {
		t.Fatalf("err = %v", err)
	}
}

func TestCallerCancel(t *testing.T) {
	h := newTestHost(t, &Options{Timeout: 10 * time.Second})
	f := mustLoad(t, h, Spec{Name: "loop", Module: testGuest(t, "loop")})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := f.Run(ctx, nil, Meta{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if f.Status().Failures != 0 {
		t.Fatal("a caller's cancellation must not count against the filter")
	}
}

func TestConcurrentRuns(t *testing.T) {
	h := newTestHost(t, &Options{PoolSize: 2})
	f := mustLoad(t, h, Spec{Name: "upper", Module: testGuest(t, "upper")})
	ctx := context.Background()
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func(g int) {
			for i := 0; i < 50; i++ {
				in := strings.Repeat(string(rune('a'+g)), i+1)
				out, err := f.Run(ctx, []byte(in), Meta{})
				if err != nil || string(out.Data) != strings.ToUpper(in) {
					errs <- errors.New("mismatch or error")
					return
				}
			}
			errs <- nil
		}(g)
	}
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := len(f.pool.live); n > 2 {
		t.Fatalf("pool grew to %d instances, cap 2", n)
	}
}

// TestFakeClocks: a guest sees the sandbox's fake clocks, not the host's.
func TestFakeClocks(t *testing.T) {
	h := newTestHost(t, nil)
	f := mustLoad(t, h, Spec{Name: "clock", Module: testGuest(t, "clock")})
	for i := 0; i < 3; i++ {
		out, err := f.Run(context.Background(), []byte("x"), Meta{})
		if err != nil || out.Status != StatusPass {
			t.Fatalf("guest saw a real clock: %v %v", out.Status, err)
		}
	}
}

// TestDeadlineScalesWithInput: a call's deadline is the fixed part plus
// TimeoutPerMiB for each MiB of input, and a timeout reports the deadline
// the call actually had.
func TestDeadlineScalesWithInput(t *testing.T) {
	h := newTestHost(t, &Options{DisableAfter: -1, Timeout: 20 * time.Millisecond, TimeoutPerMiB: 80 * time.Millisecond})
	f := mustLoad(t, h, Spec{Name: "loop", Module: testGuest(t, "loop")})
	fixed := mustLoad(t, h, Spec{Name: "loop-fixed", Module: testGuest(t, "loop"), TimeoutPerMiB: -1})
	for _, tc := range []struct {
		f    *Filter
		n    int
		want time.Duration
	}{
		{f, 0, 20 * time.Millisecond},
		{f, 1 << 20, 100 * time.Millisecond},
		{f, 512 << 10, 60 * time.Millisecond},
		{fixed, 1 << 20, 20 * time.Millisecond},
	} {
		if got := tc.f.Deadline(tc.n); got != tc.want {
			t.Errorf("%s: Deadline(%d) = %v, want %v", tc.f.Name(), tc.n, got, tc.want)
		}
	}
	in := bytes.Repeat([]byte("a"), 1<<20)
	_, err := f.Run(context.Background(), in, Meta{})
	var te *TimeoutError
	if !errors.As(err, &te) || te.Timeout != 100*time.Millisecond || te.InputBytes != len(in) {
		t.Fatalf("err = %v, want a TimeoutError with the 100ms deadline of a 1 MiB input", err)
	}
}

// TestDisableIsPerServerAndCoolsDown: one server's failures disable the
// filter for that server only; it comes back after the cool-down, and
// Status says so.
func TestDisableIsPerServerAndCoolsDown(t *testing.T) {
	h := newTestHost(t, &Options{DisableAfter: 2, DisableCoolDown: 300 * time.Millisecond})
	f := mustLoad(t, h, Spec{Name: "echo", Module: testGuest(t, "echo")})
	ctx := context.Background()
	bad, good := Meta{Server: "bad"}, Meta{Server: "good"}
	for i := 0; i < 2; i++ {
		if _, err := f.Run(ctx, []byte("\x03x"), bad); err == nil {
			t.Fatal("want a failure")
		}
	}
	if _, err := f.Run(ctx, []byte("\x00ok"), bad); !errors.Is(err, ErrDisabled) {
		t.Fatalf("bad server after 2 failures: %v, want disabled", err)
	}
	if out, err := f.Run(ctx, []byte("\x00ok"), good); err != nil || string(out.Data) != "ok" {
		t.Fatalf("another server's results must still be filtered: %q %v", out.Data, err)
	}
	st := f.Status()
	if st.State != StateDisabled || len(st.DisabledFor) != 1 || st.DisabledFor[0] != "bad" || st.CoolDown != 300*time.Millisecond {
		t.Fatalf("status = %+v", st)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := f.Run(ctx, []byte("\x00ok"), bad)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrDisabled) || time.Now().After(deadline) {
			t.Fatalf("after the cool-down: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st := f.Status(); st.State != StateActive || st.ReenabledAt.IsZero() {
		t.Fatalf("status after the cool-down = %+v", st)
	}
}
