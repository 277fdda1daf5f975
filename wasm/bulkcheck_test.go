package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestBulkStraightLineStopped: a guest of straight-line code (no loop, no
// call) of 500 memory.fill or memory.copy of all its 32 MiB, or table.fill
// of 2^20 elements (gigabytes of stores that pass no loop header), is
// stopped at its deadline, also on one thread: it never reaches the
// unreachable after them (a guest that did would fail with a trap).
func TestBulkStraightLineStopped(t *testing.T) {
	for _, c := range []struct {
		name   string
		tables []byte
		pages  uint32
		op     []byte
	}{
		{"memory.fill", nil, 512, []byte{opI32Const, 0, opI32Const, 0, opLocalGet, 0, 0xfc, 0x0b, 0}},    // (0, 0, size)
		{"memory.copy", nil, 512, []byte{opI32Const, 0, opI32Const, 0, opLocalGet, 0, 0xfc, 0x0a, 0, 0}}, // (0, 0, size)
		{"table.fill", appendU32([]byte{1, 0x70, 0}, maxTableElements), 1,
			cat(i32c(0), []byte{0xd0, 0x70}, i32c(maxTableElements), []byte{0xfc, 0x11, 0})}, // (0, null, all)
	} {
		// local0 = memory.size << 16
		code := cat([]byte{0x3f, 0}, i32c(16), []byte{0x74, opLocalSet, 0}, bytes.Repeat(c.op, 500), []byte{opUnreachable})
		mod := rawFilter(c.tables, c.pages, 1, code)
		for _, procs := range []int{2, 1} {
			t.Run(fmt.Sprintf("%s/procs=%d", c.name, procs), func(t *testing.T) {
				prev := runtime.GOMAXPROCS(procs)
				defer runtime.GOMAXPROCS(prev)
				h := newTestHost(t, &Options{Timeout: 50 * time.Millisecond, TimeoutPerMiB: -1, DisableAfter: -1})
				f := mustLoad(t, h, Spec{Name: c.name, Module: mod})
				_, err := runBounded(t, f, "in")
				var te *TimeoutError
				if !errors.As(err, &te) {
					t.Fatalf("%v; want a TimeoutError", err)
				}
			})
		}
	}
}

// TestHostCallChecks: an entryCheck follows each call of an imported
// function (the first indexes), none a call of a defined one.
func TestHostCallChecks(t *testing.T) {
	check := string(entryCheck)
	got, _, _, err := appendWithBulkChecks(nil, []byte("\x10\x00\x10\x81\x01\x10\x82\x01\x1a"), 130)
	if want := "\x10\x00" + check + "\x10\x81\x01" + check + "\x10\x82\x01\x1a"; err != nil || string(got) != want {
		t.Fatalf("%x (%v); want %x", got, err, want)
	}
}

// TestBulkChecks: an entryCheck follows each bulk memory and table
// instruction and nothing else; bytes that look like one inside another
// instruction's immediates are left alone.
func TestBulkChecks(t *testing.T) {
	check := string(entryCheck)
	v16 := strings.Repeat("\xfc\x0b\x00\x00", 4) // 16 bytes that look like memory.fill
	for _, c := range []struct{ name, code, want string }{
		{"memory.init", "\xfc\x08\x01\x00", "\xfc\x08\x01\x00" + check},
		{"memory.copy", "\xfc\x0a\x00\x00", "\xfc\x0a\x00\x00" + check},
		{"memory.fill", "\xfc\x0b\x00", "\xfc\x0b\x00" + check},
		{"table.init", "\xfc\x0c\x02\x00", "\xfc\x0c\x02\x00" + check},
		{"table.copy", "\xfc\x0e\x00\x00", "\xfc\x0e\x00\x00" + check},
		{"table.fill", "\xfc\x11\x00", "\xfc\x11\x00" + check},
		{"two-byte opcode", "\xfc\x8b\x00\x00\x0b", "\xfc\x8b\x00\x00" + check + "\x0b"},
		{"several", "\xfc\x0b\x00\xfc\x0b\x00\x1a", "\xfc\x0b\x00" + check + "\xfc\x0b\x00" + check + "\x1a"},
		{"no bulk", "\xfc\x09\x00\xfc\x0d\x00\xfc\x0f\x00\xfc\x10\x00\xfc\x00\xfc\x07", ""},
		{"i64.const", "\x42\xfc\x0b\x0b", ""},
		{"i32.const", "\x41\xfc\x8b\x80\x80\x00\x0b", ""},
		{"f32.const", "\x43\xfc\x0b\x00\x00\x0b", ""},
		{"f64.const", "\x44\xfc\x0b\x00\x00\xfc\x0b\x00\x00\x0b", ""},
		{"v128.const", "\xfd\x0c" + v16 + "\x0b", ""},
		{"i8x16.shuffle", "\xfd\x0d" + v16 + "\x0b", ""},
		{"memarg", "\x28\x02\xfc\x0b\xfd\x00\x04\xfc\x0b\x0b", ""},
		{"lane", "\xfd\x15\xfc\xfd\x22\xfc\x0b", ""},
		{"load lane", "\xfd\x54\x00\x00\xfc\xfd\x5b\x03\xfc\x0b\xfc\x0b", ""},
		{"simd one byte", "\xfd\x80\x01\xfd\xfc\xfc\x0b\x00", "\xfd\x80\x01\xfd\xfc\xfc\x0b\x00" + check},
		{"br_table", "\x0e\x02\xfc\x0b\x00\xfc\x0b\x0b", ""},
		{"call_indirect", "\x11\xfc\x0b\x00\x0b", "\x11\xfc\x0b\x00" + check + "\x0b"},
		{"select t", "\x1c\x01\x7f\x1c\x01\x63\x70\xfc\x0b\x00", "\x1c\x01\x7f\x1c\x01\x63\x70\xfc\x0b\x00" + check},
		{"block types", "\x02\x40\x03\x7f\x04\x63\x70\x02\xe3\x7f\xfc\x0b\x02\x80\x80\x80\x80\x80\xfc\x0b\x00", "\x02\x40\x03\x7f\x04\x63\x70\x02\xe3\x7f\xfc\x0b\x02\x80\x80\x80\x80\x80\xfc\x0b\x00" + check},
		{"indexes", "\x20\xfc\x0b\x23\xfc\x0b\x25\xfc\x0b\x10\xfc\x0b\xd2\xfc\x0b\x3f\x00\x40\x00\x0c\x00\x0d\x00", ""},
		{"ref.null", "\xd0\x70\xd0\x6f\xd1\x0b", ""},
	} {
		want := c.want
		if want == "" {
			want = c.code
		}
		got, at, _, err := appendWithBulkChecks(nil, []byte(c.code), 0)
		if err != nil || string(got) != want {
			t.Errorf("%s: %x (%v at %d); want %x", c.name, got, err, at, want)
		}
	}
}

// TestBulkChecksRefuse: code that does not decode is refused with where
// and why, at load too, naming the filter and the instruction's offset in
// the module.
func TestBulkChecksRefuse(t *testing.T) {
	for _, c := range []struct {
		name, code, want string
		at               int
	}{
		{"atomics", "\x01\xfe\x03\x00", "opcode 0xfe is not one", 1},
		{"return_call", "\x12\x00", "opcode 0x12 is not one", 0},
		{"throw", "\x01\x01\x08\x00", "opcode 0x08 is not one", 2},
		{"call_ref", "\x14\x00", "opcode 0x14 is not one", 0},
		{"misc", "\xfc\x12\x00", "opcode 0xfc 0x12 is not one", 0},
		{"misc over a byte", "\xfc\x80\x02", "opcode 0xfc 0x100 is not one", 0},
		{"simd", "\xfd\x9a", "opcode 0xfd 0x9a is not one", 0},
		{"cut const", "\x01\x41", "cut by the end", 1},
		{"cut v128", "\xfd\x0c\x00", "cut by the end", 0},
		{"cut memarg", "\x28\x02", "cut by the end", 0},
		{"long const", "\x41\x80\x80\x80\x80\x80\x00", "longer than 5 bytes", 0},
		{"select types", "\x1c\x02\x7f\x7f", "select with 2 types", 0},
		{"ref.null", "\xd0\x00", "ref.null of type 0x00", 0},
		{"br_table", "\x0e\xff\xff\xff\xff\x0f\x00", "br_table of 4294967295 labels", 0},
	} {
		_, at, _, err := appendWithBulkChecks(nil, []byte(c.code), 0)
		if !errors.Is(err, errBadCode) || !strings.Contains(err.Error(), c.want) || at != c.at {
			t.Errorf("%s: %v at %d; want %q at %d", c.name, err, at, c.want, c.at)
		}
	}
	h := newTestHost(t, nil)
	mod := rawFilter(nil, 1, 0, cat(i32c(1), []byte{0xfe, 0x03, 0x00}))
	at := bytes.LastIndex(mod, []byte{0xfe, 0x03, 0x00})
	_, err := h.Load(context.Background(), Spec{Name: "filters/atomic.wasm", Module: mod})
	var ce *CompileError
	want := fmt.Sprintf("instruction at byte %d: instruction does not decode: opcode 0xfe", at)
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `filter "filters/atomic.wasm"`) || !strings.Contains(err.Error(), want) {
		t.Fatalf("%v; want a CompileError naming filters/atomic.wasm, with %q", err, want)
	}
}

// TestCommittedModulesDecode: every function body of the built-ins and
// the test guests decodes to its last byte, the final end closing the
// function: a walk that misread an immediate would not end there.
func TestCommittedModulesDecode(t *testing.T) {
	ctx := context.Background()
	rt := newCheckedRuntime(ctx)
	defer rt.Close(ctx)
	for name, mod := range committedModules(t) {
		if !strings.HasPrefix(name, "builtin:") {
			if _, err := compileModule(ctx, rt, mod); err != nil {
				continue // a test guest that is meant not to compile
			}
		}
		bodies, err := codeBodies(mod)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		bulk := 0
		for i, code := range bodies {
			r := &codeReader{b: code}
			depth := 1
			for r.p < len(code) && depth > 0 && r.err == nil {
				switch op, sub := r.instr(); {
				case op >= 0x02 && op <= 0x04:
					depth++
				case op == 0x0b:
					depth--
				case op == 0xfc && isBulk(sub):
					bulk++
				}
			}
			if r.err != nil || depth != 0 || r.p != len(code) {
				t.Errorf("%s: body %d: decoded to byte %d of %d at depth %d: %v", name, i, r.p, len(code), depth, r.err)
			}
		}
		t.Logf("%s: %d bodies, %d bulk instructions", name, len(bodies), bulk)
	}
}

// codeBodies returns the code (after the locals) of each function body of
// mod.
func codeBodies(mod []byte) ([][]byte, error) {
	var out [][]byte
	for p := 8; p < len(mod); {
		size, n, err := readU32(mod[p+1:])
		if err != nil {
			return nil, err
		}
		sec := mod[p+1+n : p+1+n+int(size)]
		if mod[p] == 10 {
			count, q, err := readU32(sec)
			if err != nil {
				return nil, err
			}
			for i := uint32(0); i < count; i++ {
				size, n, err := readU32(sec[q:])
				if err != nil {
					return nil, err
				}
				body := sec[q+n : q+n+int(size)]
				q += n + int(size)
				locals, err := localsLen(body)
				if err != nil {
					return nil, err
				}
				out = append(out, body[locals:])
			}
		}
		p += 1 + n + int(size)
	}
	return out, nil
}
