package wasm

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

// rawFilter is an mcpf filter module (exports memory, mcpf_abi_v1 and
// mcpf_filter, function types ()->() and ()->i32) with the given table
// section contents (nil: none), memory of pages, and mcpf_filter's code
// (without its final end; it must leave the status on the stack) and
// locals (i32).
func rawFilter(tables []byte, pages uint32, locals uint32, code []byte) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	out = wasmSection(out, 1, []byte{2, 0x60, 0, 0, 0x60, 0, 1, tI32})
	out = wasmSection(out, 3, []byte{2, 0, 1})
	if tables != nil {
		out = wasmSection(out, 4, tables)
	}
	out = wasmSection(out, 5, appendU32([]byte{1, 0}, pages))
	var ex []byte
	ex = append(wasmName(append(ex, 3), "memory"), 2, 0)
	ex = append(wasmName(ex, "mcpf_abi_v1"), 0, 0)
	ex = append(wasmName(ex, "mcpf_filter"), 0, 1)
	out = wasmSection(out, 7, ex)
	body := []byte{0}
	if locals > 0 {
		body = appendU32([]byte{1}, locals)
		body = append(body, tI32)
	}
	body = append(append(body, code...), opEnd)
	var sec []byte
	sec = append(sec, 2, 2, 0, opEnd)
	sec = appendU32(sec, uint32(len(body)))
	sec = append(sec, body...)
	return wasmSection(out, 10, sec)
}

// TestTableGrowBounded: a guest growing its table by 2^26 elements (512
// MiB of host memory for one instruction; 0xfffffffe asks for 32 GiB)
// is refused the way memory.grow is refused over the memory cap.
func TestTableGrowBounded(t *testing.T) {
	h := newTestHost(t, &Options{DisableAfter: -1})
	// table.grow(ref.null func, 1<<26) == -1 ? pass : trap
	code := cat([]byte{0xd0, 0x70}, i32c(1<<26), []byte{0xfc, 0x0f, 0},
		i32c(-1), []byte{0x47, opIf, blockEmpty, opUnreachable, opEnd}, i32c(1))
	f := mustLoad(t, h, Spec{Name: "tablegrow", Module: rawFilter([]byte{1, 0x70, 0, 0}, 1, 0, code)})
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	out, err := runBounded(t, f, "in")
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if err != nil || out.Status != StatusPass {
		t.Fatalf("table.grow of 2^26 elements was granted (%v; host heap %d -> %d MiB); want it refused (-1)",
			err, before.HeapSys>>20, after.HeapSys>>20)
	}
}

// TestTableMinBounded: a module declaring a table of 2^26 elements (512
// MiB per instance, and per table: reference types allow many) is refused
// at load.
func TestTableMinBounded(t *testing.T) {
	h := newTestHost(t, &Options{DisableAfter: -1})
	tables := appendU32([]byte{1, 0x70, 0}, 1<<26)
	_, err := h.Load(context.Background(), Spec{Name: "bigtable", Module: rawFilter(tables, 1, 0, i32c(1))})
	if err == nil {
		t.Fatal("a table of 2^26 elements (512 MiB per instance) loaded; want it refused at load")
	}
}

// TestStartRecursionStopped: a start function recursing without a loop
// (2^60 calls) is stopped by the initialisation deadline at load.
func TestStartRecursionStopped(t *testing.T) {
	h := newTestHost(t, &Options{InitTimeout: 200 * time.Millisecond, DisableAfter: -1})
	m := filterCalling(1, nil, twice([]byte{opCall, 2}), wasmFunc{typ: 0, code: cat(i32c(60), []byte{opCall, 2, opDrop})})
	// Insert a start section (8) naming function 3 before the code section.
	i := len(m) - 1
	for p := 8; p < len(m); {
		size, n, _ := readU32(m[p+1:])
		if m[p] == 10 {
			i = p
			break
		}
		p += 1 + n + int(size)
	}
	mod := cat(m[:i], []byte{8, 1, 3}, m[i:])
	done := make(chan error, 1)
	go func() {
		_, err := h.Load(context.Background(), Spec{Name: "start", Module: mod})
		done <- err
	}()
	select {
	case err := <-done:
		var te *TimeoutError
		if !errors.As(err, &te) {
			t.Fatalf("%v; want a TimeoutError at load", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a start function recursing forever was not stopped a minute after the initialisation deadline")
	}
}

// TestTableFormsCapped: a table in a form the cap cannot rewrite (an
// initializer, a typed reference; wazero v1.12.0 compiles both) is
// refused rather than taken uncapped.
func TestTableFormsCapped(t *testing.T) {
	for name, tab := range map[string]string{
		"initializer":     "\x01\x40\x00\x70\x00\x01\xd0\x70\x0b",
		"typed reference": "\x01\x63\x70\x00\x01",
	} {
		_, err := withEntryChecks(rawFilter([]byte(tab), 1, 0, i32c(0)))
		if err == nil || !strings.Contains(err.Error(), "funcref (0x70) or externref (0x6f) table") {
			t.Errorf("%s: %v; want the table refused", name, err)
		}
	}
}

// TestTablesBoundedInAll: with reference types a module may define many
// tables, each under the per-table cap: their minimums are refused over
// maxTableElements in all, more than maxTables tables are refused, and
// each table grows only to its share (before: eight tables of 2^18
// elements each grew to 2^20 apiece, n × 8 MiB of host memory for n
// tables, and minimums took as much at instantiation). One table still
// grows to the whole cap.
func TestTablesBoundedInAll(t *testing.T) {
	h := newTestHost(t, &Options{DisableAfter: -1})
	tables := func(n int, lo uint32) []byte {
		b := appendU32(nil, uint32(n))
		for range n {
			b = appendU32(append(b, 0x70, 0), lo)
		}
		return b
	}
	// table.grow(ref.null func, by) on table i == want, else trap
	grow := func(i int, by, want int32) []byte {
		return cat([]byte{0xd0, 0x70}, i32c(by), []byte{0xfc, 0x0f, byte(i)},
			i32c(want), []byte{0x47, opIf, blockEmpty, opUnreachable, opEnd})
	}
	for _, c := range []struct {
		name    string
		n       int
		lo      uint32
		refused string
	}{
		{"minimums in all", 8, 1 << 18, "in all"},
		{"too many tables", maxTables + 1, 0, "too many tables"},
	} {
		_, err := h.Load(context.Background(), Spec{Name: c.name, Module: rawFilter(tables(c.n, c.lo), 1, 0, i32c(1))})
		var lim *LimitError
		if !errors.As(err, &lim) || !errors.Is(err, ErrTableTooLarge) || !strings.Contains(err.Error(), c.refused) {
			t.Errorf("%s: %v; want a LimitError saying %q", c.name, err, c.refused)
		}
	}
	var code []byte
	for i := range 8 {
		code = append(code, grow(i, 1<<18, -1)...)
	}
	f := mustLoad(t, h, Spec{Name: "eight tables", Module: rawFilter(tables(8, 0), 1, 0, cat(code, i32c(1)))})
	if out, err := runBounded(t, f, "in"); err != nil || out.Status != StatusPass {
		t.Errorf("eight tables each grown by 2^18: %v, %v; want every grow refused (-1)", out.Status, err)
	}
	f = mustLoad(t, h, Spec{Name: "one table", Module: rawFilter(tables(1, 0), 1, 0, cat(grow(0, 1<<20, 0), grow(0, 1, -1), i32c(1)))})
	if out, err := runBounded(t, f, "in"); err != nil || out.Status != StatusPass {
		t.Errorf("one table grown to the cap: %v, %v; want 2^20 granted, one more refused", out.Status, err)
	}
}
