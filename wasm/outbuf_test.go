package wasm

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
)

// echoIn is an input for the echo test guest: status 0 (replace) and body
// as the output.
func echoIn(body string) []byte { return append([]byte{0}, body...) }

// TestOutputRelease: a released output's buffer goes to the next call's
// output once, whatever copies of the Output are released again, and the
// bytes a stale slice still sees are never the released output's: in
// -race builds they are overwritten with 0xFF at once, otherwise they are
// the next call's output.
func TestOutputRelease(t *testing.T) {
	h := newTestHost(t, &Options{PoolSize: 1})
	f := mustLoad(t, h, Spec{Name: "echo", Module: testGuest(t, "echo")})
	ctx := context.Background()
	first := bytes.Repeat([]byte("first output "), 100)
	o, err := f.Run(ctx, echoIn(string(first)), Meta{})
	if err != nil || o.Status != StatusReplaced || !bytes.Equal(o.Data, first) {
		t.Fatalf("Run = %v, %q, %v", o.Status, o.Data, err)
	}
	stale := o.Data
	copied := o
	o.Release()
	if o.Data != nil {
		t.Fatal("Release left Data set")
	}
	if poisonReleased && !bytes.Equal(stale, bytes.Repeat([]byte{0xFF}, len(stale))) {
		t.Fatalf("-race build: released bytes not overwritten: %q", stale[:32])
	}
	o.Release()      // again: nothing
	copied.Release() // a copy made before: nothing
	if n := len(h.freeOut); n != 1 {
		t.Fatalf("free list holds %d buffers after one output was released (by three calls), want 1", n)
	}

	second := bytes.Repeat([]byte("second output "), 50) // shorter: fits the released buffer
	o2, err := f.Run(ctx, echoIn(string(second)), Meta{})
	if err != nil || !bytes.Equal(o2.Data, second) {
		t.Fatalf("second Run = %q, %v", o2.Data, err)
	}
	o3, err := f.Run(ctx, echoIn("third"), Meta{})
	if err != nil || string(o3.Data) != "third" {
		t.Fatalf("third Run = %q, %v", o3.Data, err)
	}
	if &o2.Data[0] == &o3.Data[0] {
		t.Fatal("two outputs held at once share a buffer")
	}
	copied.Release() // the buffer is lent to o2 or o3 now: still nothing
	if !bytes.Equal(o2.Data, second) || string(o3.Data) != "third" {
		t.Fatalf("releasing a stale copy changed outputs still held: %q, %q", o2.Data, o3.Data)
	}
	if len(h.freeOut) != 0 {
		t.Fatal("releasing a stale copy returned a lent buffer to the free list")
	}
	if !poisonReleased && !bytes.Equal(stale[:len(second)], second) {
		t.Fatalf("the released buffer was not reused for a later output: %q", stale[:32])
	}
	o2.Release()
	o3.Release()
	if len(h.freeOut) != 2 {
		t.Fatalf("free list holds %d buffers, want 2", len(h.freeOut))
	}
}

// TestEmptyOutput: a filter that replaces its input with nothing returns
// empty Data, not nil (nil would read as no output), whether or not its
// buffer comes from the free list.
func TestEmptyOutput(t *testing.T) {
	h := newTestHost(t, nil)
	f := mustLoad(t, h, Spec{Name: "echo", Module: testGuest(t, "echo")})
	for i := 0; i < 2; i++ {
		o, err := f.Run(context.Background(), echoIn(""), Meta{})
		if err != nil || o.Status != StatusReplaced || o.Data == nil || len(o.Data) != 0 {
			t.Fatalf("call %d: Run = %v, %q (nil %v), %v", i, o.Status, o.Data, o.Data == nil, err)
		}
		o.Release()
	}
}

// TestOutputReleaseOthers: outputs that hold no lent buffer (pass, block,
// the zero Output) are released without touching their data.
func TestOutputReleaseOthers(t *testing.T) {
	h := newTestHost(t, nil)
	f := mustLoad(t, h, Spec{Name: "echo", Module: testGuest(t, "echo")})
	ctx := context.Background()
	in := []byte{1, 'p', 'a', 's', 's'}
	o, err := f.Run(ctx, in, Meta{})
	if err != nil || o.Status != StatusPass {
		t.Fatalf("Run = %v, %v", o.Status, err)
	}
	o.Release()
	if !bytes.Equal(in, []byte{1, 'p', 'a', 's', 's'}) {
		t.Fatalf("releasing a pass touched the caller's input: %q", in)
	}
	b, err := f.Run(ctx, append([]byte{2}, "no"...), Meta{})
	if err != nil || b.Status != StatusBlocked {
		t.Fatalf("Run = %v, %v", b.Status, err)
	}
	b.Release()
	var zero Output
	zero.Release()
	if len(h.freeOut) != 0 {
		t.Fatalf("free list holds %d buffers; none was lent", len(h.freeOut))
	}
}

// TestOutputReleaseConcurrent: calls on several instances, each checking
// its output and releasing it, while the buffers go round the free list
// (run under -race: a buffer lent twice at once, or written while its
// previous holder still reads it, is a reported race or a wrong output).
func TestOutputReleaseConcurrent(t *testing.T) {
	h := newTestHost(t, &Options{PoolSize: 3})
	f := mustLoad(t, h, Spec{Name: "echo", Module: testGuest(t, "echo")})
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				want := fmt.Sprintf("goroutine %d call %d %s", g, i, bytes.Repeat([]byte{'a' + byte(g)}, i*7))
				o, err := f.Run(ctx, echoIn(want), Meta{})
				if err != nil {
					errs <- err
					return
				}
				if string(o.Data) != want {
					errs <- fmt.Errorf("goroutine %d call %d: output %.40q, want %.40q", g, i, o.Data, want)
					return
				}
				o.Release()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := len(h.freeOut); n < 1 || n > maxFreeOutBufs {
		t.Fatalf("free list holds %d buffers after the calls, want 1..%d", n, maxFreeOutBufs)
	}
}

// TestOutputReleaseFailedCall: the buffer of a call whose output is refused
// (invalid JSON in mode result-json) goes back to the free list, and the
// next call's output is not disturbed by it.
func TestOutputReleaseFailedCall(t *testing.T) {
	h := newTestHost(t, &Options{DisableAfter: -1})
	f := mustLoad(t, h, Spec{Name: "echo", Module: testGuest(t, "echo"), Mode: ModeResultJSON})
	ctx := context.Background()
	if _, err := f.Run(ctx, echoIn(`{"content":[`), Meta{}); err == nil {
		t.Fatal("invalid output accepted")
	}
	if len(h.freeOut) != 1 {
		t.Fatalf("free list holds %d buffers after a refused output, want 1", len(h.freeOut))
	}
	want := `{"content":[{"type":"text","text":"ok"}]}`
	o, err := f.Run(ctx, echoIn(want), Meta{})
	if err != nil || string(o.Data) != want {
		t.Fatalf("Run = %q, %v", o.Data, err)
	}
}

// TestScratchBounded: an instance keeps its output_write buffer for the
// next call, but not one grown by a rare big output; nor does the free
// list keep buffers above maxPooledOutBytes.
func TestScratchBounded(t *testing.T) {
	h := newTestHost(t, &Options{PoolSize: 1})
	f := mustLoad(t, h, Spec{Name: "echo", Module: testGuest(t, "echo")})
	ctx := context.Background()
	scratch := func() int {
		in := <-f.pool.idle
		defer func() { f.pool.idle <- in }()
		return cap(in.state.out)
	}
	o, err := f.Run(ctx, echoIn("small"), Meta{})
	if err != nil {
		t.Fatal(err)
	}
	o.Release()
	if n := scratch(); n == 0 || n > maxScratchBytes {
		t.Fatalf("after a small output the instance keeps a %d-byte buffer, want it kept", n)
	}
	big := string(bytes.Repeat([]byte("b"), maxScratchBytes+1))
	o, err = f.Run(ctx, echoIn(big), Meta{})
	if err != nil || len(o.Data) != len(big) {
		t.Fatalf("big Run: %d bytes, %v", len(o.Data), err)
	}
	if n := scratch(); n != 0 {
		t.Fatalf("after a %d-byte output the idle instance keeps a %d-byte buffer", len(big), n)
	}
	free := len(h.freeOut)
	o.Release()
	if len(h.freeOut) != free {
		t.Fatal("a buffer above maxPooledOutBytes went to the free list")
	}
}
