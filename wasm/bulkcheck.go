package wasm

import (
	"errors"
	"fmt"
)

// errBadCode: a function body whose instruction stream does not decode
// as the runtime's compiler reads it.
var errBadCode = errors.New("instruction does not decode")

// isBulk: the 0xfc instructions whose work is proportional to an operand
// (memory.init, memory.copy, memory.fill, table.init, table.copy,
// table.fill): after each, the rewrite puts an entryCheck.
func isBulk(misc uint32) bool {
	switch misc {
	case 0x08, 0x0a, 0x0b, 0x0c, 0x0e, 0x11:
		return true
	}
	return false
}

// appendWithBulkChecks appends code (a function body after its locals) to
// out with entryCheck after every bulk instruction (isBulk), after every
// call of one of the module's imports functions (the first indexes) and
// after every call_indirect (a table may hold an import), every other
// byte as it was, and counts code's block and branch instructions
// (isBlockOrBranch). It decodes every instruction (codeReader.instr); one
// that does not decode is refused (errBadCode) with its offset in code:
// the compiler refuses it too. A check after a bulk instruction changes no
// branch: the loop closes at once and takes and leaves no value.
func appendWithBulkChecks(out, code []byte, imports uint32) (_ []byte, bad, blocks int, err error) {
	r := &codeReader{b: code}
	copied := 0
	for r.p < len(code) {
		at := r.p
		op, misc := r.instr()
		if r.err != nil {
			return out, at, blocks, r.err
		}
		if isBlockOrBranch(op) {
			blocks++
		}
		if op == 0xfc && isBulk(misc) || op == 0x11 || op == 0x10 && callsImport(code[at+1:], imports) {
			out = append(out, code[copied:r.p]...)
			out = append(out, entryCheck...)
			copied = r.p
		}
	}
	return append(out, code[copied:]...), 0, blocks, nil
}

// callsImport: the index of a call (its immediate, imm) names one of the
// module's first imports functions: its imports.
func callsImport(imm []byte, imports uint32) bool {
	f, _, err := readU32(imm)
	return err == nil && f < imports
}

// isBlockOrBranch: block, loop, if, else, br, br_if and br_table, the
// instructions that start basic blocks of the compiler's graph.
func isBlockOrBranch(op byte) bool {
	return op >= 0x02 && op <= 0x05 || op >= 0x0c && op <= 0x0e
}

// instr decodes the instruction at r.p and moves past it: its opcode and,
// for 0xfc and 0xfd, its second opcode. It decodes as wazero v1.12.0 does
// with the features sluice's runtimes have (api.CoreFeaturesV2: bulk
// memory, reference types, multi-value, non-trapping conversions, sign
// extension, SIMD); any other opcode (threads, tail calls, exceptions,
// typed function references, ...), or an immediate cut by the end of the
// body, is an error.
func (r *codeReader) instr() (op byte, sub uint32) {
	op = r.byte()
	if r.err != nil {
		return 0, 0
	}
	switch {
	case op <= 0x01, op == 0x05, op == 0x0b, op == 0x0f, op == 0x1a, op == 0x1b,
		op >= 0x45 && op <= 0xc4, op == 0xd1:
		// no immediate: unreachable, nop, else, end, return, drop,
		// select, numeric (sign extension included), ref.is_null
	case op >= 0x02 && op <= 0x04: // block, loop, if
		r.blockType()
	case op == 0x0c, op == 0x0d, op == 0x10, op >= 0x20 && op <= 0x26, op == 0x3f, op == 0x40, op == 0xd2:
		// br, br_if, call, local/global get/set/tee, table.get/set,
		// memory.size/grow, ref.func: one index
		r.leb(5)
	case op == 0x0e: // br_table: labels, default
		n := r.u32()
		if r.err == nil && uint64(n) > uint64(len(r.b)-r.p) {
			r.fail("br_table of %d labels in %d bytes", n, len(r.b)-r.p)
		}
		for i := uint32(0); i <= n && r.err == nil; i++ {
			r.leb(5)
		}
	case op == 0x11: // call_indirect: type, table
		r.leb(5)
		r.leb(5)
	case op == 0x1c: // select t*: exactly one value type
		if n := r.byte(); r.err == nil && n != 1 {
			r.fail("select with %d types", n)
		}
		if t := r.byte(); t == 0x63 || t == 0x64 {
			r.s33()
		}
	case op >= 0x28 && op <= 0x3e: // loads and stores
		r.memarg()
	case op == 0x41: // i32.const
		r.leb(5)
	case op == 0x42: // i64.const
		r.leb(10)
	case op == 0x43: // f32.const
		r.skip(4)
	case op == 0x44: // f64.const
		r.skip(8)
	case op == 0xd0: // ref.null: funcref, externref, exnref
		if t := r.byte(); r.err == nil && t != 0x70 && t != 0x6f && t != 0x69 {
			r.fail("ref.null of type 0x%02x", t)
		}
	case op == 0xfc: // the opcode is an unsigned LEB128
		sub = r.u32()
		switch {
		case r.err != nil:
		case sub <= 0x07: // saturating truncations
		case sub == 0x08, sub == 0x0a, sub == 0x0c, sub == 0x0e: // memory.init, memory.copy, table.init, table.copy
			r.leb(5)
			r.leb(5)
		case sub == 0x09, sub == 0x0b, sub == 0x0d, sub >= 0x0f && sub <= 0x11: // data.drop, memory.fill, elem.drop, table.grow/size/fill
			r.leb(5)
		default:
			r.fail("opcode 0xfc 0x%x is not one the runtime accepts", sub)
		}
	case op == 0xfd:
		sub = uint32(r.simd())
	default:
		r.fail("opcode 0x%02x is not one the runtime accepts", op)
	}
	return op, sub
}

// simd decodes the immediates of a 0xfd instruction: wazero reads its
// opcode as one byte (0xfd 0x80 0x01, i16x8.abs in the standard
// encoding, is i16x8.abs then nop to it, and to this walk).
func (r *codeReader) simd() byte {
	op := r.byte()
	switch {
	case r.err != nil:
	case op <= 0x0b, op == 0x5c, op == 0x5d: // loads, store, load32/64_zero
		r.memarg()
	case op == 0x0c, op == 0x0d: // v128.const, i8x16.shuffle
		r.skip(16)
	case op >= 0x15 && op <= 0x22: // extract and replace lane
		r.skip(1)
	case op >= 0x54 && op <= 0x5b: // load and store lane
		r.memarg()
		r.skip(1)
	case simdUndefined(op):
		r.fail("opcode 0xfd 0x%02x is not one the runtime accepts", op)
	}
	return op
}

// simdUndefined: the one-byte 0xfd opcodes wazero v1.12.0 does not
// define: it refuses them.
func simdUndefined(op byte) bool {
	switch op {
	case 0x9a, 0xa2, 0xa5, 0xa6, 0xaf, 0xb0, 0xb2, 0xb3, 0xb4, 0xbb, 0xc2, 0xc5, 0xc6, 0xcf, 0xd0, 0xd2, 0xd3, 0xd4, 0xe2, 0xee:
		return true
	}
	return false
}

// codeReader walks a function body's instructions; the first error
// sticks.
type codeReader struct {
	b   []byte
	p   int
	err error
}

func (r *codeReader) fail(format string, a ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{errBadCode}, a...)...)
	}
}

func (r *codeReader) truncated() {
	r.fail("cut by the end of the function body")
}

func (r *codeReader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.p >= len(r.b) {
		r.truncated()
		return 0
	}
	r.p++
	return r.b[r.p-1]
}

func (r *codeReader) skip(n int) {
	if r.err == nil && n > len(r.b)-r.p {
		r.truncated()
	}
	if r.err == nil {
		r.p += n
	}
}

// leb skips a LEB128 number of at most max bytes; only its length
// matters (the compiler checks its value).
func (r *codeReader) leb(max int) {
	for i := 0; i < max; i++ {
		if r.byte()&0x80 == 0 || r.err != nil {
			return
		}
	}
	r.fail("number longer than %d bytes", max)
}

// u32 reads an unsigned LEB128 of at most 5 bytes.
func (r *codeReader) u32() uint32 {
	if r.err != nil {
		return 0
	}
	v, n, err := readU32(r.b[r.p:])
	if err != nil {
		r.fail("%v", err)
		return 0
	}
	r.p += n
	return v
}

// s33 reads a signed 33-bit LEB128 as wazero v1.12.0 does
// (leb128.DecodeInt33AsInt64): at most 5 bytes are read, whether or not
// the fifth says more follow, so the length agrees with the compiler's.
func (r *codeReader) s33() int64 {
	var v, b int64
	shift := 0
	for shift < 35 {
		b = int64(r.byte())
		if r.err != nil {
			return 0
		}
		v |= (b &^ 0x80) << shift
		shift += 7
		if b&0x80 == 0 {
			break
		}
	}
	if shift < 33 && b&0x40 != 0 {
		v |= (1<<33 - 1) << shift
	}
	v &= 1<<33 - 1
	if v&(1<<32) != 0 {
		v -= 1 << 33
	}
	return v
}

// blockType: a signed 33-bit LEB128 (the empty type, a value type or a
// type index); a reference type (0x63/0x64, -29/-28) is followed by its
// heap type.
func (r *codeReader) blockType() {
	if t := r.s33(); t == -29 || t == -28 {
		r.s33()
	}
}

// memarg: alignment and offset, each an unsigned LEB128.
func (r *codeReader) memarg() {
	r.leb(5)
	r.leb(5)
}
