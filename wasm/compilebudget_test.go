package wasm

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

// flatBranches is a filter whose one function is n blocks in a row, each
// holding a br_if: 2n block and branch instructions in 7n bytes, code the
// compiler takes time for growing with the square of n.
func flatBranches(n int) []byte {
	return rawFilter(nil, 1, 1, cat(bytes.Repeat([]byte{0x02, 0x40, opLocalGet, 0, 0x0d, 0, opEnd}, n), i32c(0)))
}

// nestedBlocks is a filter whose one function nests n blocks.
func nestedBlocks(n int) []byte {
	return rawFilter(nil, 1, 0, cat(bytes.Repeat([]byte{0x02, 0x40}, n), bytes.Repeat([]byte{opEnd}, n), i32c(0)))
}

// loopsReadingLocals is a filter whose one function has 50,000 locals
// and n loops in a row, each copying one local to another: each read
// makes the compiler look back through the blocks before it.
func loopsReadingLocals(n int) []byte {
	var c []byte
	for i := 0; i < n; i++ {
		c = append(c, 0x03, 0x40, opLocalGet)
		c = appendU32(c, uint32(i%maxLocals))
		c = append(c, opLocalSet)
		c = appendU32(c, uint32((i*7)%maxLocals))
		c = append(c, opEnd)
	}
	return rawFilter(nil, 1, maxLocals, cat(c, i32c(0)))
}

// TestComplexFunctionRefused: a function over the block and branch caps
// is refused before it is compiled, with an error naming the filter, the
// function and the caps; one just under them compiles.
func TestComplexFunctionRefused(t *testing.T) {
	h := newTestHost(t, &Options{DisableAfter: -1})
	ctx := context.Background()
	for _, c := range []struct {
		name string
		mod  []byte
	}{
		{"flat", flatBranches(maxFunctionBlocks/2 + 1)},
		{"nested", nestedBlocks(maxFunctionBlocks + 1)},
		{"product", loopsReadingLocals(7500)}, // 7,500 blocks in 75 KB
	} {
		_, err := h.Load(ctx, Spec{Name: "filters/" + c.name + ".wasm", Module: c.mod})
		var ce *CompileError
		if !errors.As(err, &ce) || !errors.Is(err, ErrFunctionTooComplex) {
			t.Fatalf("%s: %v; want a CompileError wrapping ErrFunctionTooComplex", c.name, err)
		}
		var lim *LimitError
		if !errors.As(err, &lim) || lim.Function != 1 || lim.Offset <= 0 {
			t.Fatalf("%s: %#v; want a LimitError naming function 1 and its offset", c.name, lim)
		}
		for _, want := range []string{"filters/" + c.name + ".wasm", "module refused", "too many blocks and branches", "function 1, its body at byte", "split the function"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not say %q", c.name, err, want)
			}
		}
		if strings.Contains(err.Error(), "does not compile") {
			t.Errorf("%s: %q says the module does not compile; it is valid, refused by a cap", c.name, err)
		}
	}
	f := mustLoad(t, h, Spec{Name: "under", Module: flatBranches(maxFunctionBlocks / 4)})
	f.Close(ctx)
}

// TestCompileBudget: a module from configuration that does not compile
// within its budget is refused with ErrCompileBudget naming the filter
// and how to fix it, and the compile's goroutines end; a built-in is not
// bounded.
func TestCompileBudget(t *testing.T) {
	before := runtime.NumGoroutine()
	h := newTestHost(t, &Options{CompileTimeout: time.Nanosecond, CompileTimeoutPerMiB: -1, DisableAfter: -1})
	ctx := context.Background()
	_, err := h.Load(ctx, Spec{Name: "filters/slow.wasm", Module: flatBranches(1000)})
	var ce *CompileError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCompileBudget) {
		t.Fatalf("%v; want a CompileError wrapping ErrCompileBudget", err)
	}
	var lim *LimitError
	if !errors.As(err, &lim) {
		t.Fatalf("%v; want a LimitError", err)
	}
	// The fix named is one a declaration can apply: no setting of a
	// filter's declaration reaches the compile budget.
	for _, want := range []string{"filters/slow.wasm", "module refused", "too long to compile", "make the module smaller or split it"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "compile timeout") {
		t.Errorf("%q names a compile timeout no declaration can set", err)
	}
	f := mustLoad(t, h, Spec{Builtin: "shape"})
	f.Close(ctx)
	h.Close(ctx)
	// Close waited for the compile; what is left are goroutines the
	// runtime ends on its own (timers, finalizers).
	for i := 0; runtime.NumGoroutine() > before; i++ {
		if i == 500 {
			t.Fatalf("%d goroutines after Close, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
