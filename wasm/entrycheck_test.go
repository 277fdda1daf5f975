package wasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// runBounded runs f.Run on its own goroutine and waits at most a minute
// for it: a guest that cannot be stopped fails the test instead of hanging
// it (with more than one thread; on one, nothing else runs while it spins).
func runBounded(t *testing.T, f *Filter, in string) (Output, error) {
	t.Helper()
	type res struct {
		out Output
		err error
	}
	done := make(chan res, 1)
	go func() {
		out, err := f.Run(context.Background(), []byte(in), Meta{})
		done <- res{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(time.Minute):
		t.Fatalf("%s: the call was not stopped a minute after its deadline", f.name)
		return Output{}, nil
	}
}

// TestRecursionStopped: guests without a loop whose calls never end
// (2^60 calls: exponential, mutual, through a table) are stopped at the
// deadline, also when Go runs on one thread (where the guest's native
// code holds the only one), and the filter keeps working afterwards.
func TestRecursionStopped(t *testing.T) {
	for _, procs := range []int{runtime.GOMAXPROCS(0), 1} {
		for _, c := range []struct {
			name  string
			guest func(int32) []byte
		}{
			{"exponential", exponentialGuest},
			{"mutual", mutualGuest},
			{"indirect", indirectGuest},
		} {
			t.Run(c.name, func(t *testing.T) {
				prev := runtime.GOMAXPROCS(procs)
				defer runtime.GOMAXPROCS(prev)
				h := newTestHost(t, &Options{Timeout: 50 * time.Millisecond, TimeoutPerMiB: -1, DisableAfter: -1})
				small := mustLoad(t, h, Spec{Name: c.name + "-small", Module: c.guest(10)})
				if out, err := runBounded(t, small, "in"); err != nil || out.Status != StatusPass || string(out.Data) != "in" {
					t.Fatalf("2^10 calls: %+v %v; want the input passed on", out, err)
				}
				f := mustLoad(t, h, Spec{Name: c.name, Module: c.guest(60)})
				for i := 0; i < 2; i++ {
					_, err := runBounded(t, f, "in")
					var te *TimeoutError
					if !errors.As(err, &te) {
						t.Fatalf("GOMAXPROCS=%d, call %d: %v; want a TimeoutError", procs, i, err)
					}
				}
				if out, err := runBounded(t, small, "again"); err != nil || string(out.Data) != "again" {
					t.Fatalf("after the timeouts: %+v %v", out, err)
				}
			})
		}
	}
}

// TestDeepRecursionTraps: recursion too deep for the stack is a trap, a
// failure of the call, and the next call on the filter works.
func TestDeepRecursionTraps(t *testing.T) {
	h := newTestHost(t, &Options{Timeout: 10 * time.Second, DisableAfter: -1})
	f := mustLoad(t, h, Spec{Name: "deep", Module: deepGuest(1 << 30)})
	_, err := runBounded(t, f, "in")
	var te *TrapError
	if !errors.As(err, &te) || !strings.Contains(te.Message, "stack overflow") {
		t.Fatalf("deep recursion: %v; want a stack overflow TrapError", err)
	}
	ok := mustLoad(t, h, Spec{Name: "deep-ok", Module: deepGuest(1000)})
	if out, err := runBounded(t, ok, "in"); err != nil || string(out.Data) != "in" {
		t.Fatalf("1000 deep: %+v %v", out, err)
	}
}

// TestGrowForeverStopped: a guest asking for memory in a loop forever
// (refused at the cap) is stopped at the deadline, on one thread too.
func TestGrowForeverStopped(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	h := newTestHost(t, &Options{Timeout: 50 * time.Millisecond, TimeoutPerMiB: -1, MaxMemoryPages: 4})
	f := mustLoad(t, h, Spec{Name: "grow", Module: growGuest()})
	_, err := runBounded(t, f, "in")
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("%v; want a TimeoutError", err)
	}
}

// TestWithEntryChecks: every body starts with an empty loop after its
// locals, sizes are re-encoded, other sections are untouched, and broken
// framing is refused with where it broke.
func TestWithEntryChecks(t *testing.T) {
	mod := wasmModule{types: recursionTypes, memPages: 1, funcs: []wasmFunc{
		{typ: 0, export: "mcpf_abi_v1"},
		{typ: 1, locals: 3, export: "mcpf_filter", code: i32c(1)},
	}}.bytes()
	got, err := withEntryChecks(mod)
	if err != nil {
		t.Fatal(err)
	}
	want := wasmModule{types: recursionTypes, memPages: 1, funcs: []wasmFunc{
		{typ: 0, export: "mcpf_abi_v1", code: entryCheck},
		{typ: 1, locals: 3, export: "mcpf_filter", code: cat(entryCheck, i32c(1))},
	}}.bytes()
	if !bytes.Equal(got, want) {
		t.Fatalf("rewrite:\n got %x\nwant %x", got, want)
	}
	// A custom section after the code is copied as it was.
	custom := wasmSection(nil, 0, wasmName(nil, "name-ish"))
	got, err = withEntryChecks(append(bytes.Clone(mod), custom...))
	if err != nil || !bytes.Equal(got, append(bytes.Clone(want), custom...)) {
		t.Fatalf("with a custom section: %x %v", got, err)
	}
	// A body size that crosses a LEB128 byte boundary (127 -> 130 bytes)
	// compiles and runs.
	long := wasmModule{types: recursionTypes, memPages: 1, funcs: []wasmFunc{
		{typ: 0, export: "mcpf_abi_v1"},
		{typ: 1, export: "mcpf_filter", code: cat(bytes.Repeat(cat(i32c(1), []byte{opDrop}), 41), i32c(1))},
	}}.bytes()
	if _, err := withEntryChecks(long); err != nil {
		t.Fatal(err)
	}
	f := mustLoad(t, newTestHost(t, nil), Spec{Name: "long", Module: long})
	if out, err := f.Run(context.Background(), []byte("x"), Meta{}); err != nil || out.Status != StatusPass {
		t.Fatalf("long body: %+v %v", out, err)
	}

	codeAt := bytes.LastIndexByte(mod, 10) // the code section is last
	for _, c := range []struct {
		name, mod, want string
	}{
		{"empty", "", "no \\0asm header"},
		{"text", "(module)", "no \\0asm header"},
		{"version", "\x00asm\x02\x00\x00\x00", "version 02000000, want 1"},
		{"section size", string(mod[:codeAt+1]) + "\xff\xff\xff\xff\xff", "section at byte"},
		{"section past end", string(mod[:len(mod)-1]), "runs past the end of the module"},
		{"count", string(mod[:8]) + "\x0a\x01\x05", "5 function bodies in 1 bytes"},
		{"body past section", string(mod[:8]) + "\x0a\x03\x01\x05\x00", "function body 0 at byte 11: truncated or oversized: size 5 runs past its section"},
		{"locals", string(mod[:8]) + "\x0a\x05\x01\x03\x01\x85\x00", "function body 0 at byte 11: locals: truncated or oversized: entry 0 has no value type"},
		{"locals count", string(mod[:8]) + "\x0a\x04\x01\x02\x09\x0b", "locals: truncated or oversized: 9 entries in a 2-byte body"},
		{"trailing", string(mod[:8]) + "\x0a\x05\x01\x02\x00\x0b\x00", "1 bytes after its last function body"},
	} {
		_, err := withEntryChecks([]byte(c.mod))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error with %q", c.name, err, c.want)
		}
	}
}

// TestMalformedModuleNamed: a module from configuration whose framing is
// broken, or that the compiler panics on, is refused at load with a
// CompileError naming the filter.
func TestMalformedModuleNamed(t *testing.T) {
	h := newTestHost(t, nil)
	for _, c := range []struct{ name, mod, want string }{
		{"framing", "\x00asm\x01\x00\x00\x00\x0a\x09\x01", "runs past the end"},
		// Function 0 calls function 1, whose type (5) does not exist.
		{"panic", "\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00\x03\x03\x02\x00\x05\x0a\x09\x02\x04\x00\x10\x01\x0b\x02\x00\x0b", "malformed module (the compiler failed on it: "},
	} {
		_, err := h.Load(context.Background(), Spec{Name: "filters/broken.wasm", Module: []byte(c.mod)})
		var ce *CompileError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), `filter "filters/broken.wasm": module does not compile`) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want a CompileError naming filters/broken.wasm, with %q", c.name, err, c.want)
		}
	}
}

// FuzzWithEntryChecks: whatever the bytes, the rewrite is refused only
// where the compiler refuses the module too (or for a count over the bytes
// left, or too many locals: such modules are not compiled here), and
// otherwise compiles
// exactly when the module does, with the same imports and exports; a
// module without imports behaves the same (each exported function called
// with zero arguments: same results or the same trap, same memory after).
func FuzzWithEntryChecks(f *testing.F) {
	for _, s := range [][]byte{
		exponentialGuest(3), mutualGuest(3), indirectGuest(4), deepGuest(50), growGuest(),
		filterCalling(5, nil, wasmFunc{typ: 2, locals: 2, code: cat(
			[]byte{opLoop, blockEmpty, opLocalGet, 0, opI32Eqz, opIf, blockEmpty, opElse},
			[]byte{opLocalGet, 0}, i32c(1), []byte{opI32Sub, opLocalSet, 0, opBr, 1, opEnd, opEnd},
			[]byte{opLocalGet, 1})}),
		filterCalling(1, nil, wasmFunc{typ: 2, code: []byte{opUnreachable}}),
		// memory.fill(1, 7, 100), memory.copy(3, 0, 50), table.fill(0, null, 4), table.copy(1, 0, 2)
		rawFilter([]byte{1, 0x70, 0, 8}, 1, 0, cat(i32c(1), i32c(7), i32c(100), []byte{0xfc, 0x0b, 0},
			i32c(3), i32c(0), i32c(50), []byte{0xfc, 0x0a, 0, 0}, i32c(0), []byte{0xd0, 0x70}, i32c(4), []byte{0xfc, 0x11, 0},
			i32c(1), i32c(0), i32c(2), []byte{0xfc, 0x0e, 0, 0}, i32c(1))),
	} {
		f.Add(s)
	}
	for _, name := range []string{"upper", "loop", "echo", "trap", "grow"} {
		f.Add(testGuest(f, name))
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(true).WithMemoryLimitPages(16))
	defer rt.Close(ctx)
	f.Fuzz(func(t *testing.T, mod []byte) {
		rewritten, rerr := withEntryChecks(mod)
		if isCapError(rerr) {
			// Compiling it could take gigabytes (TestCountsBounded) or
			// minutes (TestComplexFunctionRefused);
			// TestCommittedModulesPass checks that real modules pass.
			return
		}
		orig, oerr := compileModule(ctx, rt, mod)
		if oerr == nil {
			defer orig.Close(ctx)
		}
		if rerr != nil {
			if oerr == nil {
				t.Fatalf("the rewrite refused a module that compiles: %v", rerr)
			}
			return
		}
		cm, err := compileModule(ctx, rt, rewritten)
		if (err == nil) != (oerr == nil) {
			t.Fatalf("the module compiles: %v; its rewrite: %v", oerr, err)
		}
		if err != nil {
			return
		}
		defer cm.Close(ctx)
		if a, b := fmt.Sprint(signatures(orig.ImportedFunctions())), fmt.Sprint(signatures(cm.ImportedFunctions())); a != b {
			t.Fatalf("imports %s became %s", a, b)
		}
		exports := signatures(slices.Collect(maps.Values(orig.ExportedFunctions())))
		if a, b := fmt.Sprint(exports), fmt.Sprint(signatures(slices.Collect(maps.Values(cm.ExportedFunctions())))); a != b {
			t.Fatalf("exports %s became %s", a, b)
		}
		if len(orig.ImportedFunctions()) > 0 || len(orig.ImportedMemories()) > 0 {
			return
		}
		// The rewrite runs first, under a deadline: if it does not end,
		// the module (which may recurse without a loop) is not run.
		got, ok := runAll(ctx, rt, cm, true)
		if !ok {
			return
		}
		if want, _ := runAll(ctx, rt, orig, false); got != want {
			t.Fatalf("the module did\n%s\nits rewrite did\n%s", want, got)
		}
	})
}

// signatures lists functions as sorted "module.name(params)results"
// strings (exports: their export name).
func signatures(fns []api.FunctionDefinition) []string {
	var out []string
	for _, d := range fns {
		m, n, _ := d.Import()
		names := d.ExportNames()
		out = append(out, fmt.Sprintf("%s.%s%v%v%v", m, n, names, d.ParamTypes(), d.ResultTypes()))
	}
	slices.Sort(out)
	return out
}

// runAll instantiates cm and calls each of its exported functions (in
// name order) with zero arguments, and describes what happened: results,
// traps (first line) and a digest of each memory. ok is false when
// bounded and a call or the start function ran past 200 ms.
func runAll(ctx context.Context, rt wazero.Runtime, cm wazero.CompiledModule, bounded bool) (string, bool) {
	run := func(fn func(ctx context.Context) error) (string, bool) {
		c := ctx
		if bounded {
			var cancel context.CancelFunc
			c, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
		}
		err := fn(c)
		if err == nil {
			return "ok", true
		}
		if bounded && c.Err() != nil {
			return "", false
		}
		line, _, _ := strings.Cut(err.Error(), "\n")
		return "error " + line, true
	}
	var b strings.Builder
	var mod api.Module
	s, ok := run(func(c context.Context) (err error) {
		mod, err = rt.InstantiateModule(c, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
		return err
	})
	if !ok {
		return "", false
	}
	b.WriteString("instantiate: " + s + "\n")
	if mod == nil {
		return b.String(), true
	}
	defer mod.Close(ctx)
	for _, name := range slices.Sorted(maps.Keys(cm.ExportedFunctions())) {
		fn := mod.ExportedFunction(name)
		var res []uint64
		s, ok := run(func(c context.Context) (err error) {
			res, err = fn.Call(c, make([]uint64, len(fn.Definition().ParamTypes()))...)
			return err
		})
		if !ok {
			return "", false
		}
		fmt.Fprintf(&b, "%s: %s %v\n", name, s, res)
		if strings.HasPrefix(s, "error") {
			// A module closed by its deadline cannot be called again;
			// nor, for simplicity, one that trapped.
			break
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cm.ExportedMemories())) {
		if m := mod.ExportedMemory(name); m != nil {
			data, _ := m.Read(0, m.Size())
			fmt.Fprintf(&b, "memory %s: %d bytes %x\n", name, m.Size(), sha256.Sum256(data))
		}
	}
	return b.String(), true
}

// TestCountsBounded: counts and lengths the compiler allocates by before
// reading what they count are checked against the bytes left, so a module
// of a few bytes is refused at once instead of making the process
// allocate gigabytes (wazero v1.12.0 sizes slices, maps and strings from
// them); a function may declare at most maxLocals locals.
func TestCountsBounded(t *testing.T) {
	const huge = "\xff\xff\xff\xff\x0f" // 2^32-1
	hdr := "\x00asm\x01\x00\x00\x00"
	sec := func(id byte, body string) string { return string(wasmSection(nil, id, []byte(body))) }
	for _, c := range []struct{ name, mod, want string }{
		{"type params", hdr + sec(1, "\x01\x60"+huge), "section 1 at byte 8: truncated or oversized: a count of 4294967295 at byte 2"},
		{"type results", hdr + sec(1, "\x01\x60\x00"+huge), "section 1 at byte 8: truncated or oversized: a count of 4294967295 at byte 3"},
		{"imports", hdr + sec(2, huge), "section 2 at byte 8: truncated or oversized: a count of 4294967295 at byte 0"},
		{"import name", hdr + sec(2, "\x01"+huge), "a count of 4294967295 at byte 1"},
		{"functions", hdr + sec(3, huge), "section 3"},
		{"exports", hdr + sec(7, huge), "section 7"},
		{"export name", hdr + sec(7, "\x01"+huge), "a count of 4294967295 at byte 1"},
		{"element items", hdr + sec(9, "\x01\x01\x00"+huge), "section 9"},
		{"element exprs", hdr + sec(9, "\x01\x04\x41\x00\x0b"+huge), "section 9"},
		{"data bytes", hdr + sec(11, "\x01\x01"+huge), "section 11"},
		{"data bytes, active", hdr + sec(11, "\x01\x00\x41\x00\x0b"+huge), "section 11"},
		{"custom name", hdr + sec(0, huge), "section 0"},
		{"function names", hdr + sec(0, "\x04name\x01\x05"+huge), "section 0"},
		{"local names", hdr + sec(0, "\x04name\x02\x07\x01\x00"+huge), "section 0"},
		{"locals", hdr + sec(1, "\x01\x60\x00\x00") + sec(3, "\x01\x00") + sec(10, "\x01\x08\x02\x80\x80\x04\x7f\x01\x7f\x0b"), "more locals than a filter may declare (50000)"},
	} {
		_, err := withEntryChecks([]byte(c.mod))
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, errCount) && !errors.Is(err, errTooManyLocals) {
			t.Errorf("%s: %v; want an error with %q", c.name, err, c.want)
		}
	}
	// Through Load, without allocating by the count: a 20-byte module
	// declaring a function type of 2^28 parameters.
	h := newTestHost(t, nil)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := h.Load(context.Background(), Spec{Name: "bomb.wasm", Module: []byte(hdr + sec(1, "\x01\x60\x80\x80\x80\x80\x01"))})
	runtime.ReadMemStats(&after)
	var ce *CompileError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `"bomb.wasm"`) {
		t.Fatalf("%v; want a CompileError", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
		t.Fatalf("refusing a 20-byte module allocated %d MiB", n>>20)
	}
	// Within the bounds: 50000 locals are fine.
	ok := wasmModule{types: recursionTypes, memPages: 1, funcs: []wasmFunc{
		{typ: 0, export: "mcpf_abi_v1"},
		{typ: 1, locals: maxLocals, export: "mcpf_filter", code: i32c(1)},
	}}.bytes()
	if _, err := withEntryChecks(ok); err != nil {
		t.Fatal(err)
	}
}

// TestCommittedModulesPass: every module of this repository, the built-ins
// and the test guests, passes the checks, and its rewrite compiles.
func TestCommittedModulesPass(t *testing.T) {
	mods := committedModules(t)
	ctx := context.Background()
	rt := newCheckedRuntime(ctx)
	defer rt.Close(ctx)
	for name, mod := range mods {
		rewritten, err := withEntryChecks(mod)
		if strings.HasPrefix(name, "builtin:") { // compiled so by the CheckBuiltins tests
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if _, cerr := compileModule(ctx, rt, mod); cerr != nil {
			continue // a test guest that is meant not to compile
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if _, err := compileModule(ctx, rt, rewritten); err != nil {
			t.Errorf("%s: the rewrite does not compile: %v", name, err)
		}
	}
	if len(mods) < 10 {
		t.Fatalf("only %d modules found", len(mods))
	}
}

// committedModules: the built-ins (named builtin:NAME) and the test guests
// of testdata/filters (named by path).
func committedModules(t *testing.T) map[string][]byte {
	mods := map[string][]byte{}
	for _, name := range BuiltinNames() {
		mods["builtin:"+name], _ = Builtin(name)
	}
	paths, _ := filepath.Glob(filepath.Join("..", "testdata", "filters", "*.wasm"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		mods[p] = b
	}
	return mods
}

// newCheckedRuntime: a compiler runtime with termination checks, the
// features of the Host's.
func newCheckedRuntime(ctx context.Context) wazero.Runtime {
	return wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(true))
}

// TestCapsCheckedPastAFault: a count or complexity cap is refused even
// when a function body before it holds an instruction that does not
// decode, so no module with one is ever compiled (the fuzz harness
// compiles whatever the rewrite refuses for another reason, and the
// compiler allocates by a data or name count before it validates code).
func TestCapsCheckedPastAFault(t *testing.T) {
	hdr := "\x00asm\x01\x00\x00\x00"
	sec := func(id byte, body string) string { return string(wasmSection(nil, id, []byte(body))) }
	bad := "\x03\x00\xff\x0b" // a body: no locals, opcode 0xff, end
	for _, c := range []struct {
		name string
		mod  string
		want error
	}{
		{"data count", hdr + sec(1, "\x01\x60\x00\x00") + sec(3, "\x01\x00") + sec(10, "\x01"+bad) + sec(11, "\xff\xff\xff\xff\x0f"), errCount},
		{"locals", hdr + sec(1, "\x01\x60\x00\x00") + sec(3, "\x02\x00\x00") + sec(10, "\x02"+bad+"\x06\x01\xff\xff\x03\x7f\x0b"), errTooManyLocals},
	} {
		_, err := withEntryChecks([]byte(c.mod))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v; want %v", c.name, err, c.want)
		}
	}
	// A bad body before a function over the block caps.
	code := cat(bytes.Repeat([]byte{0x02, 0x40, opLocalGet, 0, 0x0d, 0, opEnd}, maxFunctionBlocks/2+1), []byte{opEnd})
	body := cat([]byte{1, 1, tI32}, code)
	csec := cat([]byte{2}, []byte(bad), appendU32(nil, uint32(len(body))), body)
	mod := cat([]byte(hdr+sec(1, "\x01\x60\x00\x00")+sec(3, "\x02\x00\x00")), wasmSection(nil, 10, csec))
	if _, err := withEntryChecks(mod); !errors.Is(err, ErrFunctionTooComplex) {
		t.Errorf("blocks: %v; want ErrFunctionTooComplex", err)
	}
}
