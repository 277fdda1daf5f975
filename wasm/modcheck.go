package wasm

import (
	"errors"
	"fmt"
)

// maxLocals caps the locals one function may declare (the limit browsers
// apply): the compiler allocates them before it checks anything else.
const maxLocals = 50000

// checkSection walks a section other than code (id, contents) far enough
// to check every count and length the compiler allocates by before it
// reads what they count: none may exceed the bytes left (each counted item
// takes at least one), so a small module cannot make the compiler allocate
// gigabytes. wazero v1.12.0 sizes its slices, maps and strings from these
// numbers as it meets them. Everything else is left to the compiler.
func checkSection(id byte, sec []byte) error {
	r := &modReader{b: sec}
	switch id {
	case 0: // custom: a name, then anything ("name" is decoded)
		if r.name() == "name" {
			checkNames(r)
		}
	case 1: // type
		for n := r.count(3); n > 0 && r.err == nil; n-- {
			if r.byte() != 0x60 {
				r.stop() // the compiler names it
			}
			for k := 0; k < 2; k++ { // params, results
				for m := r.count(1); m > 0 && r.err == nil; m-- {
					r.valType()
				}
			}
		}
	case 2: // import
		for n := r.count(4); n > 0 && r.err == nil; n-- {
			r.name()
			r.name()
			switch r.byte() {
			case 0: // function
				r.u32()
			case 4: // tag: attribute, type index
				r.byte()
				r.u32()
			case 1: // table
				r.valType()
				r.limits()
			case 2: // memory
				r.limits()
			case 3: // global
				r.valType()
				r.byte()
			default:
				r.stop() // the compiler names it
			}
		}
	case 3, 4, 5, 6, 12, 13: // function, table, memory, global, data count, tag: counts only
		if id != 12 {
			r.count(1)
		}
	case 7: // export
		for n := r.count(3); n > 0 && r.err == nil; n-- {
			r.name()
			r.byte()
			r.u32()
		}
	case 9: // element
		for n := r.count(1); n > 0 && r.err == nil; n-- {
			checkElement(r)
		}
	case 11: // data
		for n := r.count(1); n > 0 && r.err == nil; n-- {
			switch r.u32() {
			case 0:
				r.constExpr()
			case 1:
			case 2:
				r.u32()
				r.constExpr()
			default:
				r.stop()
			}
			r.skip(r.length())
		}
	}
	if r.err == errDone {
		return nil
	}
	return r.err
}

// importedFunctions counts the function imports of an import section
// that checkSection accepted (on a malformed one, those before the fault:
// the compiler refuses the module anyway).
func importedFunctions(sec []byte) uint32 {
	r := &modReader{b: sec}
	funcs := uint32(0)
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		r.name()
		r.name()
		switch r.byte() {
		case 0:
			r.u32()
			if r.err == nil {
				funcs++
			}
		case 4:
			r.byte()
			r.u32()
		case 1:
			r.valType()
			r.limits()
		case 2:
			r.limits()
		case 3:
			r.valType()
			r.byte()
		default:
			r.stop()
		}
	}
	return funcs
}

// checkElement walks one element segment (the eight forms of the
// reference-types proposal).
func checkElement(r *modReader) {
	flags := r.u32()
	if r.err != nil || flags > 7 {
		r.stop() // the compiler names it
		return
	}
	if flags&1 == 0 { // active
		if flags&2 != 0 {
			r.u32() // table index
		}
		r.constExpr()
	}
	if flags&3 != 0 { // element kind or reference type
		if flags&4 != 0 {
			r.valType()
		} else {
			r.byte()
		}
	}
	for m := r.count(1); m > 0 && r.err == nil; m-- {
		if flags&4 != 0 {
			r.constExpr()
		} else {
			r.u32()
		}
	}
}

// checkNames walks the name section's subsections: module name, function
// names (index, name), local names (index, (index, name)...).
func checkNames(r *modReader) {
	for r.err == nil && r.p < len(r.b) {
		id := r.byte()
		sub := &modReader{b: r.sub(r.length())}
		switch id {
		case 1:
			for n := sub.count(2); n > 0 && sub.err == nil; n-- {
				sub.u32()
				sub.name()
			}
		case 2:
			for n := sub.count(2); n > 0 && sub.err == nil; n-- {
				sub.u32()
				for m := sub.count(2); m > 0 && sub.err == nil; m-- {
					sub.u32()
					sub.name()
				}
			}
		}
		if sub.err != nil && r.err == nil {
			r.err = sub.err
		}
	}
}

// modReader reads a section; the first error sticks and makes every later
// read return zero. done (errDone) ends a walk without an error where the
// compiler will report the problem better.
type modReader struct {
	b   []byte
	p   int
	err error
}

var errDone = errors.New("done")

// errCount: a count or length larger than the bytes left, or an item cut
// by the section's end (the compiler reads on into the next section).
var errCount = errors.New("truncated or oversized")

func (r *modReader) truncated() {
	r.fail("%w: an item cut at byte %d by the end of the section", errCount, r.p)
}

func (r *modReader) fail(format string, a ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, a...)
	}
}

func (r *modReader) stop() {
	if r.err == nil {
		r.err = errDone
	}
}

func (r *modReader) byte() byte {
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

func (r *modReader) u32() uint32 {
	if r.err != nil {
		return 0
	}
	v, n, err := readU32(r.b[r.p:])
	if err != nil {
		if len(r.b)-r.p < 5 {
			r.truncated() // perhaps
		} else {
			r.stop()
		}
		return 0
	}
	r.p += n
	return v
}

// count reads a vector's length and checks that that many items of at
// least min bytes each fit in what is left.
func (r *modReader) count(min int) uint32 {
	at := r.p
	n := r.u32()
	if r.err == nil && uint64(n)*uint64(min) > uint64(len(r.b)-r.p) {
		r.fail("%w: a count of %d at byte %d of a section with %d bytes left", errCount, n, at, len(r.b)-r.p)
	}
	return n
}

// length reads a byte length and checks that it fits.
func (r *modReader) length() int {
	return int(r.count(1))
}

func (r *modReader) skip(n int) {
	if r.err == nil && n > len(r.b)-r.p {
		r.truncated()
	}
	if r.err == nil {
		r.p += n
	}
}

func (r *modReader) sub(n int) []byte {
	if r.err != nil {
		return nil
	}
	r.p += n
	return r.b[r.p-n : r.p]
}

func (r *modReader) name() string {
	return string(r.sub(r.length()))
}

// valType: one byte, or a typed reference (0x63/0x64 and a heap type).
func (r *modReader) valType() {
	if b := r.byte(); b == 0x63 || b == 0x64 {
		r.sleb()
	}
}

// sleb skips a signed LEB128 of up to 10 bytes.
func (r *modReader) sleb() {
	for i := 0; i < 10 && r.err == nil; i++ {
		if r.byte()&0x80 == 0 {
			return
		}
	}
	r.stop()
}

func (r *modReader) limits() {
	flags := r.byte()
	r.u32()
	if flags&1 != 0 {
		r.u32()
	}
}

// constExpr skips a constant expression up to its end.
func (r *modReader) constExpr() {
	for r.err == nil {
		switch op := r.byte(); op {
		case 0x0b: // end
			return
		case 0x41, 0x42, 0x23, 0xd2: // i32/i64.const, global.get, ref.func
			r.sleb()
		case 0x43:
			r.skip(4)
		case 0x44:
			r.skip(8)
		case 0xd0: // ref.null heap type
			r.sleb()
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended constant arithmetic
		case 0xfd: // v128.const
			if r.u32() != 12 {
				r.stop()
			}
			r.skip(16)
		default:
			r.stop()
		}
	}
}
