package wasm

// A small WebAssembly binary encoder for tests: guests whose shape matters
// (no loop at all, recursion through calls or tables) are built here, byte
// by byte, so they need no toolchain.

// Opcodes and types used by the test guests.
const (
	opUnreachable  = 0x00
	opLoop         = 0x03
	opIf           = 0x04
	opElse         = 0x05
	opEnd          = 0x0b
	opBr           = 0x0c
	opBrIf         = 0x0d
	opCall         = 0x10
	opCallIndirect = 0x11
	opDrop         = 0x1a
	opLocalGet     = 0x20
	opLocalSet     = 0x21
	opI32Const     = 0x41
	opI32Eqz       = 0x45
	opI32Add       = 0x6a
	opI32Sub       = 0x6b
	opMemoryGrow   = 0x40
	tI32           = 0x7f
	blockEmpty     = 0x40
)

// wasmFunc is one defined function: its type index, locals (each one i32)
// and code (without the final end, which the encoder adds).
type wasmFunc struct {
	typ    uint32
	locals uint32
	code   []byte
	export string
}

// wasmModule: function types (params, results: i32 only), defined
// functions, an exported memory of memPages, and optionally a funcref
// table whose elements are function indexes (placed at offset 0).
type wasmModule struct {
	types    [][2]int // (params, results) counts of i32
	funcs    []wasmFunc
	memPages uint32
	table    []uint32
}

func wasmSection(out []byte, id byte, body []byte) []byte {
	out = append(out, id)
	out = appendU32(out, uint32(len(body)))
	return append(out, body...)
}

func wasmName(b []byte, s string) []byte {
	b = appendU32(b, uint32(len(s)))
	return append(b, s...)
}

func (m wasmModule) bytes() []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	var types []byte
	types = appendU32(types, uint32(len(m.types)))
	for _, t := range m.types {
		types = append(types, 0x60)
		for _, n := range t {
			types = appendU32(types, uint32(n))
			for i := 0; i < n; i++ {
				types = append(types, tI32)
			}
		}
	}
	out = wasmSection(out, 1, types)
	var funcs []byte
	funcs = appendU32(funcs, uint32(len(m.funcs)))
	for _, f := range m.funcs {
		funcs = appendU32(funcs, f.typ)
	}
	out = wasmSection(out, 3, funcs)
	if m.table != nil {
		tab := []byte{1, 0x70, 0}
		tab = appendU32(tab, uint32(len(m.table)))
		out = wasmSection(out, 4, tab)
	}
	mem := []byte{1, 0}
	mem = appendU32(mem, m.memPages)
	out = wasmSection(out, 5, mem)
	var exports []byte
	n := 1
	for _, f := range m.funcs {
		if f.export != "" {
			n++
		}
	}
	exports = appendU32(exports, uint32(n))
	exports = append(wasmName(exports, "memory"), 2, 0)
	for i, f := range m.funcs {
		if f.export != "" {
			exports = append(wasmName(exports, f.export), 0)
			exports = appendU32(exports, uint32(i))
		}
	}
	out = wasmSection(out, 7, exports)
	if m.table != nil {
		el := []byte{1, 0, opI32Const, 0, opEnd}
		el = appendU32(el, uint32(len(m.table)))
		for _, f := range m.table {
			el = appendU32(el, f)
		}
		out = wasmSection(out, 9, el)
	}
	var code []byte
	code = appendU32(code, uint32(len(m.funcs)))
	for _, f := range m.funcs {
		var body []byte
		if f.locals > 0 {
			body = append(body, 1)
			body = appendU32(body, f.locals)
			body = append(body, tI32)
		} else {
			body = append(body, 0)
		}
		body = append(body, f.code...)
		body = append(body, opEnd)
		code = appendU32(code, uint32(len(body)))
		code = append(code, body...)
	}
	return wasmSection(out, 10, code)
}

// i32c encodes i32.const v (signed LEB128).
func i32c(v int32) []byte {
	out := []byte{opI32Const}
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(out, c)
		}
		out = append(out, c|0x80)
	}
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Types of the recursion guests: 0 = () -> (), 1 = () -> i32, 2 = (i32) -> i32.
var recursionTypes = [][2]int{{0, 0}, {0, 1}, {1, 1}}

// filterCalling is an mcpf filter (functions 0 and 1) whose mcpf_filter
// calls function 2 with n and passes its input on (status 1); extra are
// functions 2, 3, ...
func filterCalling(n int32, table []uint32, extra ...wasmFunc) []byte {
	m := wasmModule{types: recursionTypes, memPages: 1, table: table, funcs: []wasmFunc{
		{typ: 0, export: "mcpf_abi_v1"},
		{typ: 1, export: "mcpf_filter", code: cat(i32c(n), []byte{opCall, 2, opDrop}, i32c(1))},
	}}
	m.funcs = append(m.funcs, extra...)
	return m.bytes()
}

// twice is (i32 n) -> i32: n == 0 ? 0 : call(n-1) + call(n-1), where call
// is the given code (which finds n-1 on the stack).
func twice(call []byte) wasmFunc {
	arg := cat([]byte{opLocalGet, 0}, i32c(1), []byte{opI32Sub})
	return wasmFunc{typ: 2, code: cat(
		[]byte{opLocalGet, 0, opI32Eqz, opIf, tI32}, i32c(0),
		[]byte{opElse}, arg, call, arg, call, []byte{opI32Add},
		[]byte{opEnd})}
}

// Guests with no loop that run for 2^n calls: exponential recursion,
// mutual recursion, recursion through a table.
func exponentialGuest(n int32) []byte {
	return filterCalling(n, nil, twice([]byte{opCall, 2}))
}

func mutualGuest(n int32) []byte {
	return filterCalling(n, nil, twice([]byte{opCall, 3}), twice([]byte{opCall, 2}))
}

func indirectGuest(n int32) []byte {
	return filterCalling(n, []uint32{2}, twice(cat(i32c(0), []byte{opCallIndirect, 2, 0})))
}

// deepGuest recurses n deep, once per level: f(n) = n == 0 ? 0 : 1 + f(n-1).
func deepGuest(n int32) []byte {
	return filterCalling(n, nil, wasmFunc{typ: 2, code: cat(
		[]byte{opLocalGet, 0, opI32Eqz, opIf, tI32}, i32c(0),
		[]byte{opElse}, i32c(1), []byte{opLocalGet, 0}, i32c(1), []byte{opI32Sub, opCall, 2, opI32Add},
		[]byte{opEnd})})
}

// growGuest asks for one more page of memory forever, ignoring refusals.
func growGuest() []byte {
	return filterCalling(0, nil, wasmFunc{typ: 2, code: cat(
		[]byte{opLoop, blockEmpty}, i32c(1), []byte{opMemoryGrow, 0, opDrop, opBr, 0, opEnd},
		i32c(0))})
}
