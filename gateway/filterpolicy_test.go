package gateway

import (
	"strings"
	"testing"

	"sluice/wasm"
)

// TestFailureTextNamesTheCap: a module refused by a cap (valid
// WebAssembly, maybe) is not described as invalid: the text says what was
// refused, where and how to fix it; a load-time memory refusal is not
// described as running out of memory.
func TestFailureTextNamesTheCap(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want []string
	}{
		{"too complex", &wasm.CompileError{Filter: "f", Err: &wasm.LimitError{
			Limit: "a function with too many blocks and branches to compile in bounded time", Function: 7, Offset: 1234,
			Detail: "12000 block and branch instructions", Fix: "split the function into smaller ones", Err: wasm.ErrFunctionTooComplex}},
			[]string{"failed to load", "refused by a cap", "too many blocks and branches", "function 7", "byte 1234", "12000", "split the function"}},
		{"compile budget", &wasm.CompileError{Filter: "f", Err: &wasm.LimitError{
			Limit: "a module that takes too long to compile", Function: -1, Offset: -1,
			Detail: "not compiled within its budget of 15s", Fix: "make the module smaller or split it", Err: wasm.ErrCompileBudget}},
			[]string{"failed to load", "too long to compile", "15s", "make the module smaller"}},
		{"memory at load", &wasm.MemoryLimitError{Filter: "f", LimitPages: 512, Detail: "the module declares 600 initial pages"},
			[]string{"failed to load", "declares more memory than the cap of 512 pages", "declare less initial memory"}},
	} {
		got := failureText(c.err)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q does not say %q", c.name, got, w)
			}
		}
		for _, bad := range []string{"not valid WebAssembly", "ran out of memory"} {
			if strings.Contains(got, bad) {
				t.Errorf("%s: %q says %q", c.name, got, bad)
			}
		}
	}
	// A module that does not compile is still described as invalid.
	if got := failureText(&wasm.CompileError{Filter: "f", Err: errString("bad opcode")}); !strings.Contains(got, "not valid WebAssembly") {
		t.Errorf("invalid module: %q", got)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
