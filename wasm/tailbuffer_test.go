package wasm

import (
	"bytes"
	"strings"
	"testing"
)

// TestTailBufferKeepsOnlyTheTail: a guest's stderr keeps its last max
// bytes whatever it writes, and a huge write (a guest handing fd_write
// its whole memory) neither grows the buffer past 2×max nor loses the
// tail.
func TestTailBufferKeepsOnlyTheTail(t *testing.T) {
	tb := &tailBuffer{max: 16}
	var all []byte
	for _, w := range [][]byte{[]byte("hello "), []byte("world, "), []byte("again and again "), bytes.Repeat([]byte("x"), 1<<20), []byte("end")} {
		n, err := tb.Write(w)
		if n != len(w) || err != nil {
			t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(w))
		}
		all = append(all, w...)
		want := all[max(0, len(all)-16):]
		if !bytes.Equal(tb.b, want) {
			t.Fatalf("after %d bytes: kept %q, want %q", len(all), tb.b, want)
		}
		if cap(tb.b) > 2*16 {
			t.Fatalf("after a %d-byte write the buffer holds %d bytes of capacity", len(w), cap(tb.b))
		}
	}
}

// TestTailBufferBudget: one call's stderr writes stop at the budget (the
// guest's fd_write fails from then on, so a write naming millions of
// buffers ends at the first one past it), a write counting at least
// stderrWriteCost bytes, and Reset starts the next call with the whole
// budget.
func TestTailBufferBudget(t *testing.T) {
	tb := &tailBuffer{max: 8, budget: 3 * stderrWriteCost}
	if n, err := tb.Write([]byte("0123456789")); n != 10 || err != nil {
		t.Fatalf("first write: %d, %v", n, err)
	}
	long := []byte(strings.Repeat("abcdefghij", stderrWriteCost))
	if n, err := tb.Write(long); n != 2*stderrWriteCost || err != errStderrFull {
		t.Fatalf("write crossing the budget: %d, %v; want %d, errStderrFull", n, err, 2*stderrWriteCost)
	}
	if n, err := tb.Write([]byte("more")); n != 0 || err != errStderrFull {
		t.Fatalf("write past the budget: %d, %v; want 0, errStderrFull", n, err)
	}
	if got, want := string(tb.b), string(long[2*stderrWriteCost-8:2*stderrWriteCost]); got != want {
		t.Fatalf("kept %q, want %q", got, want)
	}
	tb.Reset()
	if n, err := tb.Write([]byte("after reset")); n != 11 || err != nil {
		t.Fatalf("after Reset: %d, %v", n, err)
	}
	// Empty writes count too: the budget lasts three of them in all.
	tb.Reset()
	for i := range 4 {
		_, err := tb.Write(nil)
		if (err != nil) != (i == 3) {
			t.Fatalf("empty write %d: %v", i, err)
		}
	}
	// stdout is counted against the same budget and kept nowhere.
	tb.Reset()
	out := stdoutSink{tb}
	for i := range 4 {
		_, err := out.Write([]byte("x"))
		if (err != nil) != (i == 3) {
			t.Fatalf("stdout write %d: %v", i, err)
		}
	}
	if len(tb.b) != 0 {
		t.Fatalf("stdout kept in the stderr tail: %q", tb.b)
	}
}
