package wasm

import (
	"cmp"
	"errors"
	"fmt"
)

// entryCheck is the code put at the start of every function body of a
// module from configuration: an empty loop (loop, block type empty, end).
// wazero's compiler puts its termination check at every loop header, so
// each function call passes one; the loop closes at once, so no label
// depth of the function's own code changes and nothing else runs.
var entryCheck = []byte{0x03, 0x40, 0x0b}

// noEntryChecks leaves modules as they are: only BenchmarkEntryChecks sets
// it, for its baseline.
var noEntryChecks bool

// withEntryChecks returns mod with entryCheck at the start of every
// function body (after its locals) and after every bulk memory or table
// instruction (appendWithBulkChecks), every other byte as it was: sections
// other than code are copied, and a code section is re-encoded only for
// its new sizes. It checks the framing it walks (header, section and body
// sizes, locals declarations, instruction lengths) and nothing more: what
// it copies is validated by the compiler. See "Why every function starts
// with a loop".
func withEntryChecks(mod []byte) ([]byte, error) {
	if len(mod) < 8 || string(mod[:4]) != "\x00asm" {
		return nil, errors.New("not a WebAssembly module (no \\0asm header)")
	}
	if string(mod[4:8]) != "\x01\x00\x00\x00" {
		return nil, fmt.Errorf("WebAssembly binary version %x, want 1", mod[4:8])
	}
	out := make([]byte, 0, len(mod)+64)
	out = append(out, mod[:8]...)
	imports := uint32(0) // imported functions: the first function indexes
	// A fault in the code section that is not a cap (an instruction that
	// does not decode) is reported after the later sections are checked:
	// a cap is refused whatever comes before it, so no module is ever
	// compiled with one (the compiler allocates by a count before it
	// validates the code).
	var codeErr error
	for p := 8; p < len(mod); {
		id := mod[p]
		size, n, err := readU32(mod[p+1:])
		if err != nil {
			return nil, fmt.Errorf("section at byte %d: size: %w: %v", p, errCount, err)
		}
		start := p + 1 + n
		if uint64(size) > uint64(len(mod)-start) {
			return nil, fmt.Errorf("section at byte %d: %w: size %d runs past the end of the module", p, errCount, size)
		}
		body := mod[start : start+int(size)]
		if id != 10 {
			if err := checkSection(id, body); err != nil {
				return nil, fmt.Errorf("section %d at byte %d: %w", id, p, err)
			}
			if id == 2 {
				imports = importedFunctions(body)
			}
			if id == 4 {
				tables, err := tablesCapped(body, start)
				if err != nil {
					return nil, err
				}
				out = append(out, id)
				out = appendU32(out, uint32(len(tables)))
				out = append(out, tables...)
			} else {
				out = append(out, mod[p:start+int(size)]...)
			}
		} else {
			code, err := codeWithEntryChecks(body, start, imports)
			if err != nil && isCapError(err) {
				return nil, err
			}
			if err != nil && codeErr == nil {
				codeErr = err
			}
			out = append(out, id)
			out = appendU32(out, uint32(len(code)))
			out = append(out, code...)
		}
		p = start + int(size)
	}
	if codeErr != nil {
		return nil, codeErr
	}
	return out, nil
}

// isCapError: err is one of the caps the walk enforces so that a module
// cannot make the compiler allocate by a huge count (errCount), take
// unbounded time (errTooManyLocals, ErrFunctionTooComplex) or grow a
// table past its cap (ErrTableTooLarge).
func isCapError(err error) bool {
	return errors.Is(err, errCount) || errors.Is(err, errTooManyLocals) || errors.Is(err, ErrFunctionTooComplex) || errors.Is(err, ErrTableTooLarge)
}

// codeWithEntryChecks rewrites the contents of a code section that starts
// at byte base of the module (for errors).
func codeWithEntryChecks(sec []byte, base int, imports uint32) ([]byte, error) {
	count, n, err := readU32(sec)
	if err != nil {
		return nil, fmt.Errorf("code section at byte %d: function count: %w: %v", base, errCount, err)
	}
	// Each body is at least one byte: a count that cannot fit is refused
	// before it sizes anything.
	if uint64(count) > uint64(len(sec)-n) {
		return nil, fmt.Errorf("code section at byte %d: %w: %d function bodies in %d bytes", base, errCount, count, len(sec))
	}
	out := make([]byte, 0, len(sec)+int(count)*(len(entryCheck)+1))
	out = appendU32(out, count)
	var scratch []byte // a body's code with its checks
	var first error    // the first fault that is not a cap: the later bodies' caps are checked first
	p := n
	for i := uint32(0); i < count; i++ {
		at := base + p
		size, n, err := readU32(sec[p:])
		if err != nil {
			return nil, fmt.Errorf("function body %d at byte %d: size: %w: %v", i, at, errCount, err)
		}
		p += n
		if uint64(size) > uint64(len(sec)-p) {
			return nil, fmt.Errorf("function body %d at byte %d: %w: size %d runs past its section", i, at, errCount, size)
		}
		body := sec[p : p+int(size)]
		p += int(size)
		locals, err := localsLen(body)
		if err != nil {
			if errors.Is(err, errTooManyLocals) {
				return nil, &LimitError{Limit: "a function with too many locals", Function: int(imports + i), Offset: at,
					Detail: err.Error(), Fix: "split the function, or keep fewer values in locals at once", Err: err}
			}
			err = fmt.Errorf("function body %d at byte %d: locals: %w", i, at, err)
			if isCapError(err) {
				return nil, err
			}
			first = cmp.Or(first, err)
			continue
		}
		code := body[locals:]
		scratch = scratch[:0]
		if !entersLoop(code) {
			scratch = append(scratch, entryCheck...)
		}
		var bad, blocks int
		scratch, bad, blocks, err = appendWithBulkChecks(scratch, code, imports)
		if err != nil {
			first = cmp.Or(first, fmt.Errorf("function body %d at byte %d: instruction at byte %d: %w", i, at, base+p-len(code)+bad, err))
		}
		if blocks > maxFunctionBlocks || uint64(blocks)*uint64(len(code)) > maxFunctionBlockWork {
			return nil, &LimitError{Limit: "a function with too many blocks and branches to compile in bounded time", Function: int(imports + i), Offset: at,
				Detail: fmt.Sprintf("%d block and branch instructions in %d bytes of code, over the %d a function may have or over %d for their count times the code's bytes (the compiler's time grows with that product)",
					blocks, len(code), maxFunctionBlocks, uint64(maxFunctionBlockWork)),
				Fix: "split the function into smaller ones (most compilers do with less inlining or optimisation for size)", Err: ErrFunctionTooComplex}
		}
		if first != nil {
			continue
		}
		out = appendU32(out, uint32(locals+len(scratch)))
		out = append(out, body[:locals]...)
		out = append(out, scratch...)
	}
	if first != nil {
		return nil, first
	}
	if p != len(sec) {
		return nil, fmt.Errorf("code section at byte %d: %d bytes after its last function body", base, len(sec)-p)
	}
	return out, nil
}

// maxFunctionBlocks and maxFunctionBlockWork cap a function's block and
// branch instructions (isBlockOrBranch), and their count times its code's
// bytes: wazero v1.12.0's compiler takes time growing with the square of
// a function's basic blocks (dominator walks, the loop nesting forest, and
// a variable's lookup back through every block before it, once per read),
// and it cannot be interrupted inside a function. Measured on one core of
// a 2-core VM: 10,000 blocks in a row holding br_ifs (35 KB) 1.0 s, 10,000
// nested blocks 1.0 s, 5,000 loops each copying a local (48 KB, a product
// of 2.4e8) 2.7 s, 7,000 such loops 8.4 s; 32,000 branches in 112 KB more
// than 20 s. The caps bound one function to a few seconds; the largest
// function of the built-in Go guests has 1,639 and a product of 8.3e7,
// a third of the cap. The compile budget (Options.CompileTimeout) bounds
// the module as a whole.
const (
	maxFunctionBlocks    = 10000
	maxFunctionBlockWork = 2.5e8
)

// errTooManyLocals: a function declares more than maxLocals locals.
var errTooManyLocals = errors.New("more locals than a filter may declare")

// localsLen is the length of a function body's locals declaration: a
// count of (number, value type) entries, at most maxLocals locals in all.
// Value types are one byte, or a typed reference (0x63/0x64 and a heap
// type).
func localsLen(body []byte) (int, error) {
	groups, p, err := readU32(body)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", errCount, err)
	}
	if uint64(groups) > uint64(len(body)-p)/2 {
		return 0, fmt.Errorf("%w: %d entries in a %d-byte body", errCount, groups, len(body))
	}
	total := uint64(0)
	for i := uint32(0); i < groups; i++ {
		count, n, err := readU32(body[p:])
		if err != nil {
			return 0, fmt.Errorf("%w: entry %d: %v", errCount, i, err)
		}
		if total += uint64(count); total > maxLocals {
			return 0, fmt.Errorf("%w (%d)", errTooManyLocals, maxLocals)
		}
		p += n
		if p >= len(body) {
			return 0, fmt.Errorf("%w: entry %d has no value type", errCount, i)
		}
		p++
		if t := body[p-1]; t == 0x63 || t == 0x64 {
			r := &modReader{b: body, p: p}
			r.sleb()
			if r.err != nil {
				return 0, fmt.Errorf("entry %d: truncated heap type", i)
			}
			p = r.p
		}
	}
	return p, nil
}

// readU32 decodes an unsigned LEB128 of at most 5 bytes whose value fits
// in 32 bits, as the binary format requires.
func readU32(b []byte) (v uint32, n int, err error) {
	for shift := 0; shift < 35; shift += 7 {
		if n >= len(b) {
			return 0, 0, errors.New("truncated number")
		}
		c := b[n]
		n++
		if shift == 28 && c > 0x0f {
			return 0, 0, errors.New("number overflows 32 bits")
		}
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, n, nil
		}
	}
	return 0, 0, errors.New("number longer than 5 bytes")
}

func appendU32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// entersLoop reports whether code reaches a loop header before anything
// that could branch, call or return: only local and global reads and
// writes, constants and block openings come first. Then every call of the
// function already passes a termination check and needs no entryCheck
// (Go's functions start so: global.get, local.set, block, loop).
// Anything it does not know ends the scan with false.
func entersLoop(code []byte) bool {
	for p := 0; p < len(code); {
		op := code[p]
		p++
		switch op {
		case 0x03: // loop
			return true
		case 0x02: // block
			if p >= len(code) || !oneByteBlockType(code[p]) {
				return false
			}
			p++
		case 0x01: // nop
		case 0x1a: // drop
		case 0x20, 0x21, 0x22, 0x23, 0x24, 0x41: // local.get/set/tee, global.get/set, i32.const
			_, n, err := readU32(code[p:]) // i32.const's operand is signed; only its length matters
			if err != nil {
				return false
			}
			p += n
		default:
			return false
		}
	}
	return false
}

// oneByteBlockType: the empty block type or a value type.
func oneByteBlockType(b byte) bool {
	switch b {
	case 0x40, 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		return true
	}
	return false
}

// maxTableElements caps the tables a module defines, all of them
// together: wazero grows a table by any delta table.grow asks for (an
// element is 8 bytes of host memory, so one instruction could ask for 32
// GiB) and accepts a declared minimum of up to 2^27 elements per instance,
// and MaxMemoryPages covers linear memory only. 2^20 elements (8 MiB) is
// far more than a module's function count, which is what toolchains size
// their tables by. Reference types allow many tables, so the cap is on
// their sum: their declared minimums together at most maxTableElements,
// and each may grow to maxTableElements / their count (or stays at its
// minimum), so all of them hold at most twice maxTableElements.
const maxTableElements = 1 << 20

// maxTables caps the tables a module defines (toolchains define one).
const maxTables = 64

// tablesCapped returns the contents of a table section (at byte base of
// the module) with every table's maximum lowered to its share of
// maxTableElements (see there), so table.grow past it fails (-1) like
// memory.grow past the memory cap; more than maxTables tables, or
// declared minimums over maxTableElements in all, are refused, and so is a
// table in a form other than a one-byte reference type and limits
// 0x00/0x01 (the compiler takes some: an initializer, a typed reference).
// A section that does not parse is copied as it is, for the compiler to
// refuse.
func tablesCapped(sec []byte, base int) ([]byte, error) {
	count, p, err := readU32(sec)
	if err != nil || uint64(count) > uint64(len(sec)-p)/3 {
		return sec, nil // the compiler refuses it
	}
	if count > maxTables {
		return nil, &LimitError{Limit: "too many tables", Function: -1, Offset: base,
			Detail: fmt.Sprintf("the module defines %d tables, over the %d a filter may have", count, maxTables),
			Fix:    "define fewer tables (toolchains define one)", Err: ErrTableTooLarge}
	}
	type table struct {
		typ    byte
		lo, hi uint32
	}
	tables := make([]table, 0, count)
	total := uint64(0)
	for i := uint32(0); i < count; i++ {
		if p+2 > len(sec) {
			return sec, nil // the compiler refuses it
		}
		if (sec[p] != 0x70 && sec[p] != 0x6f) || sec[p+1] > 1 {
			// wazero v1.12.0 accepts a table with an initializer (0x40
			// 0x00 ...) and a typed reference table (0x63/0x64): neither
			// could be capped, so neither is taken.
			return nil, &LimitError{Limit: fmt.Sprintf("table %d in a form whose size a filter's cap cannot check", i), Function: -1, Offset: base,
				Detail: fmt.Sprintf("encoded as 0x%02x 0x%02x", sec[p], sec[p+1]),
				Fix:    "declare a funcref (0x70) or externref (0x6f) table with plain limits", Err: ErrTableTooLarge}
		}
		typ, flag := sec[p], sec[p+1]
		p += 2
		lo, n, err := readU32(sec[p:])
		if err != nil {
			return sec, nil
		}
		p += n
		hi := uint32(maxTableElements)
		if flag == 1 {
			m, n, err := readU32(sec[p:])
			if err != nil {
				return sec, nil
			}
			p += n
			hi = min(hi, m)
		}
		if lo > maxTableElements {
			return nil, &LimitError{Limit: fmt.Sprintf("table %d over a filter's table size", i), Function: -1, Offset: base,
				Detail: fmt.Sprintf("it declares at least %d elements, over the %d a filter's table may have", lo, maxTableElements),
				Fix:    "declare a smaller table (toolchains size it by the module's function count)", Err: ErrTableTooLarge}
		}
		if hi < lo {
			return sec, nil // invalid: the compiler says so
		}
		if total += uint64(lo); total > maxTableElements {
			return nil, &LimitError{Limit: "tables over a filter's table size in all", Function: -1, Offset: base,
				Detail: fmt.Sprintf("tables 0 to %d declare at least %d elements together, over the %d a filter's tables may have in all", i, total, maxTableElements),
				Fix:    "declare fewer or smaller tables", Err: ErrTableTooLarge}
		}
		tables = append(tables, table{typ, lo, hi})
	}
	if p != len(sec) {
		return sec, nil
	}
	share := uint32(maxTableElements)
	if count > 0 {
		share /= count
	}
	out := appendU32(make([]byte, 0, len(sec)+int(count)*5), count)
	for _, t := range tables {
		out = append(out, t.typ, 1)
		out = appendU32(out, t.lo)
		out = appendU32(out, max(t.lo, min(t.hi, share)))
	}
	return out, nil
}
