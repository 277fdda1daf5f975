//go:build wasip1

package guest

import (
	"errors"
	"runtime"
	"unsafe"
)

//go:wasmimport mcpf input_len
func hostInputLen() int32

//go:wasmimport mcpf input_read
func hostInputRead(offset int32, buf unsafe.Pointer, limit int32) int32

//go:wasmimport mcpf input_json_skip
func hostInputJSONSkip(offset int32) int32

//go:wasmimport mcpf meta_read
func hostMetaRead(buf unsafe.Pointer, limit int32) int32

//go:wasmimport mcpf config_read
func hostConfigRead(buf unsafe.Pointer, limit int32) int32

//go:wasmimport mcpf output_write
func hostOutputWrite(ptr unsafe.Pointer, n int32) int32

//go:wasmimport mcpf output_input
func hostOutputInput(offset, n int32) int32

//go:wasmimport mcpf error_set
func hostErrorSet(ptr unsafe.Pointer, n int32)

//go:wasmimport mcpf log
func hostLog(level int32, ptr unsafe.Pointer, n int32)

//go:wasmimport mcpf log_enabled
func hostLogEnabled(level int32) int32

//go:wasmimport mcpf offload_put
func hostOffloadPut(ptr unsafe.Pointer, n int32, ref unsafe.Pointer, refLimit int32) int32

// mcpf_abi_v1 marks the module as speaking ABI mcpf v1. Never called.
//
//go:wasmexport mcpf_abi_v1
func mcpfABIv1() {}

// gcEvery forces a collection every that many calls, so a pooled
// instance's heap settles within the first thousand calls whatever the
// filter's allocation rate (the Go runtime would otherwise wait until 4 MiB
// of garbage). Amortised cost: well under a microsecond per call.
const gcEvery = 1000

// yieldEvery: mcpf_filter yields to the other goroutines (the GC's) every
// that many calls. A yield runs the scheduler, about a microsecond, most of
// a small call's time in the guest; a GC cycle started in a call still
// finishes within that many calls.
const yieldEvery = 16

var (
	calls   int
	inBuf   []byte
	metaBuf []byte
	refBuf  [handleMax]byte
)

const handleMax = 256

// readBlob reads a buf/limit-style host blob, growing *buf as needed.
func readBlob(buf *[]byte, read func(unsafe.Pointer, int32) int32) []byte {
	for {
		var p unsafe.Pointer
		if cap(*buf) > 0 {
			p = unsafe.Pointer(&(*buf)[:1][0])
		}
		n := read(p, int32(cap(*buf)))
		if n < 0 {
			return nil
		}
		if int(n) <= cap(*buf) {
			return (*buf)[:n]
		}
		*buf = make([]byte, 0, int(n))
	}
}

//go:wasmexport mcpf_init
func mcpfInit() (status int32) {
	defer runtime.Gosched()
	var cfg []byte
	cfg = readBlob(&cfg, func(p unsafe.Pointer, l int32) int32 { return hostConfigRead(p, l) })
	config = cfg
	if initFn == nil {
		return 0
	}
	defer func() {
		if r := recover(); r != nil {
			setError("panic in init: " + panicText(r))
			status = int32(StatusError)
		}
	}()
	if err := initFn(config); err != nil {
		setError(err.Error())
		return int32(StatusError)
	}
	return 0
}

//go:wasmexport mcpf_filter
func mcpfFilter() (status int32) {
	calls++
	if calls%yieldEvery == 0 {
		// Yield last (defers run in reverse order): the GC goroutines get
		// to run before the export returns, after the output has been
		// copied out.
		defer runtime.Gosched()
	}
	if calls%gcEvery == 0 {
		defer runtime.GC()
	}
	defer func() {
		if r := recover(); r != nil {
			setError("panic: " + panicText(r))
			status = int32(StatusError)
		}
	}()
	if registered == nil {
		setError("no filter registered: call guest.Register in an init function")
		return int32(StatusError)
	}
	n := int(hostInputLen())
	if cap(inBuf) < n {
		inBuf = make([]byte, n)
	}
	in := inBuf[:n]
	if n > 0 {
		hostInputRead(0, unsafe.Pointer(&in[0]), int32(n))
	}
	out := registered(Input{Data: in, Config: config, meta: readMeta})
	switch out.Status {
	case StatusReplace:
		if out.Parts != nil {
			if err := writeParts(out.Data, out.Parts); err != "" {
				setError(err)
				return int32(StatusError)
			}
			break
		}
		var p unsafe.Pointer
		if len(out.Data) > 0 {
			p = unsafe.Pointer(&out.Data[0])
		}
		if hostOutputWrite(p, int32(len(out.Data))) < 0 {
			setError("output over the host's cap")
			return int32(StatusError)
		}
	case StatusBlock, StatusError:
		setError(out.Message)
	}
	return int32(out.Status)
}

// writeParts writes an output made of parts: output_write for ranges of
// data, output_input for ranges of the input.
func writeParts(data []byte, parts []Part) string {
	for _, p := range parts {
		if p.N == 0 {
			continue
		}
		var rc int32
		if p.Input {
			rc = hostOutputInput(int32(p.Off), int32(p.N))
		} else {
			rc = hostOutputWrite(unsafe.Pointer(&data[p.Off]), int32(p.N))
		}
		switch {
		case rc == -2:
			return "output over the host's cap"
		case rc < 0:
			return "output part out of range of the input"
		}
	}
	return ""
}

func readMeta() []byte {
	return readBlob(&metaBuf, func(p unsafe.Pointer, l int32) int32 { return hostMetaRead(p, l) })
}

func setError(msg string) {
	if msg == "" {
		return
	}
	b := []byte(msg)
	hostErrorSet(unsafe.Pointer(&b[0]), int32(len(b)))
}

func panicText(r any) string {
	switch v := r.(type) {
	case error:
		return v.Error()
	case string:
		return v
	}
	return "non-error panic value"
}

// Errors returned by Offload.
var (
	ErrOffloadUnavailable = errors.New("offload: the host offers no offload store")
	ErrOffloadFailed      = errors.New("offload: the host could not store the data (quota or storage error)")
)

// Offload hands data to the host's result store and returns its handle.
func Offload(data []byte) (string, error) {
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(&data[0])
	}
	n := hostOffloadPut(p, int32(len(data)), unsafe.Pointer(&refBuf[0]), handleMax)
	switch {
	case n == -1:
		return "", ErrOffloadUnavailable
	case n < 0 || int(n) > handleMax:
		return "", ErrOffloadFailed
	}
	return string(refBuf[:n]), nil
}

// InputSkip returns the offset just past the JSON value that starts at
// offset i of this call's input, found by the host natively (see
// input_json_skip in ABI.md). Guest-side scanning of long strings is slow
// under the host's termination checks; this is the fast path.
func InputSkip(i int) (int, error) {
	n := hostInputJSONSkip(int32(i))
	if n < 0 {
		return 0, ErrSyntax
	}
	return int(n), nil
}

// Log sends a message to the host's log at level (LevelDebug..LevelError).
func Log(level int32, msg string) {
	if msg == "" || hostLogEnabled(level) == 0 {
		return
	}
	b := []byte(msg)
	hostLog(level, unsafe.Pointer(&b[0]), int32(len(b)))
}

//go:wasmimport mcpf input_find
func hostInputFind(offset, from int32, keys unsafe.Pointer, keysLen int32, buf unsafe.Pointer, limit int32) int32

// InputFind is FindFunc done by the host natively over this call's input
// (input_find in ABI.md; the input argument is ignored).
func InputFind(_ []byte, offset, from int, keys []byte, buf []FindRecord) (int, error) {
	if len(keys) == 0 || len(buf) == 0 {
		return 0, ErrFindKeys
	}
	n := hostInputFind(int32(offset), int32(from), unsafe.Pointer(&keys[0]), int32(len(keys)), unsafe.Pointer(&buf[0]), int32(len(buf)*16))
	switch {
	case n == -1:
		return 0, ErrFindKeys
	case n < 0:
		return 0, ErrSyntax
	}
	return int(n), nil
}
