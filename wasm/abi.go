package wasm

import (
	"bytes"
	"context"
	"log/slog"
	"math/rand"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Return codes of host imports (see ABI.md).
const (
	rcUnavailable = -1 // offload_put: no store; input_read: offset out of range
	rcRefused     = -2 // output over cap, offload refused (quota, size, store error)
	rcBadArgs     = -3 // offload_put: ref_limit below 256
)

type signature struct{ params, results []api.ValueType }

func (s signature) String() string {
	t := func(v []api.ValueType) string {
		n := make([]string, len(v))
		for i, x := range v {
			n[i] = api.ValueTypeName(x)
		}
		return "(" + strings.Join(n, ", ") + ")"
	}
	return t(s.params) + " -> " + t(s.results)
}

var (
	i32 = api.ValueTypeI32
	// mcpfSignatures is the import surface of ABI mcpf v1.
	mcpfSignatures = map[string]signature{
		"input_len":       {nil, []api.ValueType{i32}},
		"input_read":      {[]api.ValueType{i32, i32, i32}, []api.ValueType{i32}},
		"input_json_skip": {[]api.ValueType{i32}, []api.ValueType{i32}},
		"input_find":      {[]api.ValueType{i32, i32, i32, i32, i32, i32}, []api.ValueType{i32}},
		"meta_read":       {[]api.ValueType{i32, i32}, []api.ValueType{i32}},
		"config_read":     {[]api.ValueType{i32, i32}, []api.ValueType{i32}},
		"output_write":    {[]api.ValueType{i32, i32}, []api.ValueType{i32}},
		"output_input":    {[]api.ValueType{i32, i32}, []api.ValueType{i32}},
		"error_set":       {[]api.ValueType{i32, i32}, nil},
		"log":             {[]api.ValueType{i32, i32, i32}, nil},
		"log_enabled":     {[]api.ValueType{i32}, []api.ValueType{i32}},
		"offload_put":     {[]api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}},
	}
)

// callState is the per-instance I/O state the host functions see during one
// call (carried in the call's context).
type callState struct {
	filter     string
	server     string          // Meta.Server of the call
	validInput bool            // Meta.ValidInput of the call
	ctx        context.Context // the caller's, for logs
	input      []byte
	meta       []byte // the encoded meta document once metaReady (the buffer is the instance's, reused)
	metaReady  bool
	metaOf     Meta // what meta encodes, with mode
	mode       Mode
	config     []byte
	out        []byte // the bytes written with output_write (all of the output while segs is empty); the instance's, reused
	outOver    bool
	outLen     int       // bytes of output so far (written and copied from the input)
	segs       []segment // with output_input: the output, in order
	maxOut     int
	strs       []inString // strings input_json_skip walked over (see trustedSpans)
	errMsg     []byte
	logs       int
	offloaded  int
	maxOffload int
	finder     *keyFinder // input_find's last keyword list, kept across calls
	random     *rand.Rand // random_get's source, kept across calls
	found      []byte     // input_find's record buffer
	// gate is held by every mcpf host function while it runs; abandoned
	// (set under it when a call that cannot be stopped overruns its
	// deadline) makes the next one trap, so the guest never again reads
	// the caller's input or meta, nor offloads, after its caller moved on.
	gate      sync.Mutex
	abandoned bool
}

// segment is a piece of the output: bytes out[off:off+n] written by the
// guest, or, with fromInput, input[off:off+n] copied by output_input.
type segment struct {
	fromInput bool
	off, n    int
}

// inString is a string of the input that input_json_skip walked over:
// its opening quote at start, end just past its closing quote; clean: no
// byte between them is a control byte (see trustedSpans).
type inString struct {
	start, end int
	clean      bool
}

// write appends b to the output (output_write, and output_input's short
// copies).
func (s *callState) write(b []byte) {
	if len(b) == 0 {
		return
	}
	if len(s.segs) > 0 {
		if last := &s.segs[len(s.segs)-1]; !last.fromInput {
			last.n += len(b)
		} else {
			s.segs = append(s.segs, segment{off: len(s.out), n: len(b)})
		}
	}
	s.out = append(s.out, b...)
	s.outLen += len(b)
}

// maxStrings bounds the strings input_json_skip records for an input of n
// bytes: a guest that skips the same strings over and over must not grow
// the record (memory) without end. Distinct strings of at least
// minTrustedSpan bytes number at most n/minTrustedSpan; the rest is room
// for the strings a guest may walk from inside another (from an escaped
// quote). A string not recorded is only not trusted: its copies are
// validated as usual.
func maxStrings(n int) int { return 2*(n/minTrustedSpan) + 16 }

// reset prepares the state for a call on input; meta, when not nil, is
// encoded for the guest only if it reads it (meta_read).
func (s *callState) reset(input []byte, meta *Meta, mode Mode, maxOut int) {
	s.abandoned = false
	s.input = input
	s.meta, s.metaReady = s.meta[:0], meta == nil
	if meta != nil {
		s.metaOf, s.mode = *meta, mode
	}
	s.out = s.out[:0] // copied into the caller's buffer (see Filter.result); see pool.put
	s.outOver = false
	s.outLen = 0
	s.segs = s.segs[:0]
	s.strs = s.strs[:0]
	s.maxOut = maxOut
	s.errMsg = s.errMsg[:0]
	s.logs = 0
	s.offloaded = 0
}

// metaBytes returns the call's meta document, encoding it on first use:
// most filters (the built-in shape among them) never read it.
func (s *callState) metaBytes() []byte {
	if !s.metaReady {
		s.meta = s.metaOf.appendEncoded(s.meta[:0], s.mode, len(s.input), s.maxOut)
		s.metaReady = true
	}
	return s.meta
}

// logCtx is the context for the guest's log lines: the caller's (which
// carries what the logger attaches, such as the request id).
func (s *callState) logCtx() context.Context {
	if s.ctx == nil {
		return context.Background()
	}
	return s.ctx
}

type stateKey struct{}

func stateOf(ctx context.Context) *callState {
	s, _ := ctx.Value(stateKey{}).(*callState)
	if s == nil {
		// Only reachable if a guest calls an import from _initialize.
		panic("mcpf host function called outside a filter call")
	}
	return s
}

// guestTrap is panicked by host functions on ABI misuse; wazero turns it
// into a trap of the calling guest.
type guestTrap string

func (g guestTrap) Error() string { return "mcpf: " + string(g) }

func readMem(m api.Module, ptr, n uint32, what string) []byte {
	b, ok := m.Memory().Read(ptr, n)
	if !ok {
		panic(guestTrap(what + ": buffer out of bounds of guest memory"))
	}
	return b
}

func writeMem(m api.Module, ptr uint32, b []byte, what string) {
	if !m.Memory().Write(ptr, b) {
		panic(guestTrap(what + ": buffer out of bounds of guest memory"))
	}
}

func (h *Host) linkMCPF(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder("mcpf")
	fn := func(name string, f api.GoModuleFunc) {
		sig := mcpfSignatures[name]
		gated := func(ctx context.Context, m api.Module, st []uint64) {
			s := stateOf(ctx)
			s.gate.Lock()
			defer s.gate.Unlock()
			if s.abandoned {
				panic(guestTrap(name + ": the call was abandoned after its deadline"))
			}
			f(ctx, m, st)
		}
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(gated), sig.params, sig.results).Export(name)
	}
	fn("input_len", func(ctx context.Context, m api.Module, st []uint64) {
		st[0] = api.EncodeI32(int32(len(stateOf(ctx).input)))
	})
	fn("input_read", func(ctx context.Context, m api.Module, st []uint64) {
		s := stateOf(ctx)
		off, buf, limit := api.DecodeI32(st[0]), api.DecodeU32(st[1]), api.DecodeI32(st[2])
		if off < 0 || int(off) > len(s.input) || limit < 0 {
			st[0] = api.EncodeI32(rcUnavailable)
			return
		}
		n := len(s.input) - int(off)
		if n > int(limit) {
			n = int(limit)
		}
		writeMem(m, buf, s.input[off:int(off)+n], "input_read")
		st[0] = api.EncodeI32(int32(n))
	})
	fn("input_json_skip", func(ctx context.Context, m api.Module, st []uint64) {
		s := stateOf(ctx)
		off := int(api.DecodeI32(st[0]))
		if off < 0 || off >= len(s.input) {
			st[0] = api.EncodeI32(rcUnavailable)
			return
		}
		in := s.input
		for off < len(in) && (in[off] == ' ' || in[off] == '\n' || in[off] == '\r' || in[off] == '\t') {
			off++
		}
		if off < len(in) && in[off] == '"' {
			e, clean := scanJSONString(in, off)
			if e-off >= minTrustedSpan && len(s.strs) < maxStrings(len(in)) {
				s.strs = append(s.strs, inString{off, e, clean})
			}
			st[0] = api.EncodeI32(int32(e))
			return
		}
		st[0] = api.EncodeI32(int32(skipJSON(in, off)))
	})
	fn("input_find", func(ctx context.Context, m api.Module, st []uint64) {
		s := stateOf(ctx)
		off, from := int(api.DecodeI32(st[0])), int(api.DecodeI32(st[1]))
		keys, keysLen := api.DecodeU32(st[2]), api.DecodeU32(st[3])
		buf, limit := api.DecodeU32(st[4]), api.DecodeI32(st[5])
		if off < 0 || off > len(s.input) || from < 0 || limit < findRecordBytes || keysLen > maxFindKeys*(maxFindKeyBytes+1) {
			st[0] = api.EncodeI32(rcUnavailable)
			return
		}
		list := readMem(m, keys, keysLen, "input_find")
		if s.finder == nil || !bytes.Equal(s.finder.src, list) {
			f, err := newKeyFinder(list)
			if err != nil {
				st[0] = api.EncodeI32(rcUnavailable)
				return
			}
			s.finder = f
		}
		var n int
		s.found, n = s.finder.findInStrings(s.input, off, from, int(limit)/findRecordBytes, s.found[:0])
		if n < 0 {
			st[0] = api.EncodeI32(rcRefused)
			return
		}
		if len(s.found) > 0 {
			writeMem(m, buf, s.found, "input_find")
		}
		st[0] = api.EncodeI32(int32(n))
	})
	blob := func(name string, get func(*callState) []byte) {
		fn(name, func(ctx context.Context, m api.Module, st []uint64) {
			s := stateOf(ctx)
			buf, limit := api.DecodeU32(st[0]), api.DecodeI32(st[1])
			v := get(s)
			if limit >= 0 && len(v) <= int(limit) && len(v) > 0 {
				writeMem(m, buf, v, name)
			}
			st[0] = api.EncodeI32(int32(len(v)))
		})
	}
	blob("meta_read", func(s *callState) []byte { return s.metaBytes() })
	blob("config_read", func(s *callState) []byte { return s.config })
	fn("output_write", func(ctx context.Context, m api.Module, st []uint64) {
		s := stateOf(ctx)
		ptr, n := api.DecodeU32(st[0]), api.DecodeU32(st[1])
		// The cap counts every byte of output, copied with output_input
		// as well as written.
		if s.outOver || uint64(s.outLen)+uint64(n) > uint64(s.maxOut) {
			s.outOver = true
			st[0] = api.EncodeI32(rcRefused)
			return
		}
		s.write(readMem(m, ptr, n, "output_write"))
		st[0] = 0
	})
	fn("output_input", func(ctx context.Context, m api.Module, st []uint64) {
		s := stateOf(ctx)
		off, n := api.DecodeI32(st[0]), api.DecodeI32(st[1])
		if off < 0 || n < 0 || int64(off)+int64(n) > int64(len(s.input)) {
			st[0] = api.EncodeI32(rcUnavailable)
			return
		}
		if s.outOver || uint64(s.outLen)+uint64(n) > uint64(s.maxOut) {
			s.outOver = true
			st[0] = api.EncodeI32(rcRefused)
			return
		}
		if n < minTrustedSpan {
			// Too short to be trusted: written like output_write's bytes,
			// so that a guest copying byte by byte makes no segment per
			// byte (the segments stay at most one per minTrustedSpan
			// bytes of output).
			s.write(s.input[off : off+n])
			st[0] = 0
			return
		}
		if len(s.segs) == 0 && len(s.out) > 0 {
			s.segs = append(s.segs, segment{n: len(s.out)}) // what output_write wrote so far
		}
		// (adjacent copies stay apart: each may lie inside a different string)
		s.segs = append(s.segs, segment{fromInput: true, off: int(off), n: int(n)})
		s.outLen += int(n)
		st[0] = 0
	})
	fn("error_set", func(ctx context.Context, m api.Module, st []uint64) {
		s := stateOf(ctx)
		ptr, n := api.DecodeU32(st[0]), api.DecodeU32(st[1])
		if n > maxErrorBytes {
			n = maxErrorBytes
		}
		s.errMsg = append(s.errMsg[:0], readMem(m, ptr, n, "error_set")...)
	})
	fn("log_enabled", func(ctx context.Context, m api.Module, st []uint64) {
		if h.logger.Enabled(stateOf(ctx).logCtx(), slog.Level(api.DecodeI32(st[0]))) {
			st[0] = 1
		} else {
			st[0] = 0
		}
	})
	fn("log", func(ctx context.Context, m api.Module, st []uint64) {
		s := stateOf(ctx)
		level, ptr, n := slog.Level(api.DecodeI32(st[0])), api.DecodeU32(st[1]), api.DecodeU32(st[2])
		if s.logs >= maxLogsPerCall || !h.logger.Enabled(s.logCtx(), level) {
			return
		}
		s.logs++
		if n > maxLogBytes {
			n = maxLogBytes
		}
		msg := cleanText(readMem(m, ptr, n, "log"))
		h.logger.Log(s.logCtx(), level, "filter log", "filter", s.filter, "msg", msg)
	})
	fn("offload_put", func(ctx context.Context, m api.Module, st []uint64) {
		s := stateOf(ctx)
		ptr, n, ref, refLimit := api.DecodeU32(st[0]), api.DecodeU32(st[1]), api.DecodeU32(st[2]), api.DecodeI32(st[3])
		if h.opts.Offload == nil {
			st[0] = api.EncodeI32(rcUnavailable)
			return
		}
		if refLimit < handleMax {
			st[0] = api.EncodeI32(rcBadArgs)
			return
		}
		if uint64(s.offloaded)+uint64(n) > uint64(s.maxOffload) {
			st[0] = api.EncodeI32(rcRefused)
			return
		}
		data := readMem(m, ptr, n, "offload_put") // a view: valid only during the callback
		stopAtDeadline(ctx)
		handle, err := h.opts.Offload(ctx, data)
		if err != nil || len(handle) == 0 || len(handle) > handleMax {
			if err != nil {
				stopAtDeadline(ctx) // a put cut short by the deadline ends the call as the deadline does
				h.logger.Warn("filter offload failed", "filter", s.filter, "err", err)
			}
			st[0] = api.EncodeI32(rcRefused)
			return
		}
		s.offloaded += int(n)
		writeMem(m, ref, []byte(handle), "offload_put")
		st[0] = api.EncodeI32(int32(len(handle)))
	})
	_, err := b.Instantiate(ctx)
	return err
}

// cleanText makes guest-provided text safe to show: valid UTF-8, no control
// characters except tab.
func cleanText(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
