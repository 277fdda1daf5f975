package wasm

import (
	"context"
	"encoding/binary"
	"io"
	"math/rand"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// Bounds of the WASI functions sluice implements itself (see "Why some
// WASI functions are sluice's own").
const (
	// randomChunk is how many bytes random_get fills between two checks
	// of the call's deadline.
	randomChunk = 64 << 10
	// maxPollSubscriptions caps poll_oneoff's subscriptions per call
	// (EINVAL above): a runtime asks for one per waiting file and one
	// for its timer, and a filter has three files.
	maxPollSubscriptions = 1024
	// stderrWriteCost is the least a write to stdout or stderr counts
	// against a call's budget (maxStderrWriteBytes), so one fd_write
	// naming millions of empty buffers ends after a few thousand.
	stderrWriteCost = 256
	// randomSeed seeds each instance's random source, as wazero's
	// default does: filters get no entropy (see wasiAllowed).
	randomSeed = 42
)

// WASI errno values (wasi_snapshot_preview1).
const (
	errnoBadf   = 8
	errnoFault  = 21
	errnoInval  = 28
	errnoNotsup = 58
)

// linkWASI instantiates wazero's WASI preview-1 module with random_get and
// poll_oneoff replaced by sluice's own, whose work is bounded by the
// call's deadline or by a cap.
func (h *Host) linkWASI(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	i32s := func(n int) []api.ValueType {
		t := make([]api.ValueType, n)
		for i := range t {
			t[i] = api.ValueTypeI32
		}
		return t
	}
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(h.randomGet), i32s(2), i32s(1)).
		WithParameterNames("buf", "buf_len").Export("random_get")
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(pollOneoff), i32s(4), i32s(1)).
		WithParameterNames("in", "out", "nsubscriptions", "result.nevents").Export("poll_oneoff")
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(fdClose), i32s(1), i32s(1)).
		WithParameterNames("fd").Export("fd_close")
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(fdRenumber), i32s(2), i32s(1)).
		WithParameterNames("fd", "to").Export("fd_renumber")
	_, err := b.Instantiate(ctx)
	return err
}

// stopAtDeadline ends the guest's call (as its deadline would at the next
// check) once ctx's deadline has passed or ctx ended. It reads the clock
// as well as ctx: on one thread the deadline's timer may not have run.
func stopAtDeadline(ctx context.Context) {
	if ctx.Err() != nil {
		if ctx.Err() == context.DeadlineExceeded {
			panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
		}
		panic(sys.NewExitError(sys.ExitCodeContextCanceled))
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
	}
}

// randomSource is an instance's deterministic random source, created at
// its first random_get.
func (s *callState) randomSource() io.Reader {
	if s.random == nil {
		s.random = rand.New(rand.NewSource(randomSeed))
	}
	return s.random
}

// randomGet is WASI random_get(buf, buf_len) -> errno: it fills the
// buffer randomChunk bytes at a time, checking the call's deadline before
// each, so a guest asking for all of its memory at once is stopped at the
// deadline rather than after it.
func (h *Host) randomGet(ctx context.Context, m api.Module, st []uint64) {
	buf, n := api.DecodeU32(st[0]), api.DecodeU32(st[1])
	b, ok := m.Memory().Read(buf, n)
	if !ok {
		st[0] = errnoFault
		return
	}
	s := stateOf(ctx)
	src := s.randomSource()
	for len(b) > 0 {
		stopAtDeadline(ctx)
		k := min(len(b), randomChunk)
		io.ReadFull(src, b[:k]) // a math/rand source never fails
		h.randomBytes.Add(int64(k))
		b = b[k:]
	}
	st[0] = 0
}

// fdClose is WASI fd_close(fd) -> errno for a filter, whose only files
// are stdin, stdout and stderr (it is given no directories, so it can
// open nothing): they stay open (ENOTSUP), as wazero keeps a preopened
// directory, so what poll_oneoff says of them stays true for the
// instance's life; any other fd is not open (EBADF).
func fdClose(_ context.Context, _ api.Module, st []uint64) {
	if fd := int32(st[0]); fd >= 0 && fd <= 2 {
		st[0] = errnoNotsup
		return
	}
	st[0] = errnoBadf
}

// fdRenumber is WASI fd_renumber(fd, to) -> errno for a filter: moving a
// standard file (or over one) would close it (see fdClose), and no other
// file is open.
func fdRenumber(_ context.Context, _ api.Module, st []uint64) {
	from, to := int32(st[0]), int32(st[1])
	if from >= 0 && from <= 2 && to >= 0 {
		st[0] = errnoNotsup
		return
	}
	st[0] = errnoBadf
}

// pollOneoff is WASI poll_oneoff(in, out, nsubscriptions, nevents) ->
// errno for a filter's files and clocks that do not sleep (wazero's
// default: filters get no real time), with at most maxPollSubscriptions
// subscriptions, every one answered at once. An fd event says what the
// read or write then does (TestPollOneoffAgreesWithStdio): stdin is
// readable (at its end: a read returns 0 bytes at once, it never
// blocks), stdout and stderr writable; reading stdout or stderr, writing
// stdin and any fd past 2 (none is ever open, see fdClose) are EBADF.
// wazero v1.12.0's own reports stdout and stderr readable and fd_write
// not supported on any file, though the write succeeds and the read
// fails. Clock answers, errors and event order (fd_read ones after the
// others) are wazero's.
func pollOneoff(ctx context.Context, m api.Module, st []uint64) {
	in, out, n, nevents := api.DecodeU32(st[0]), api.DecodeU32(st[1]), api.DecodeU32(st[2]), api.DecodeU32(st[3])
	if n == 0 || n > maxPollSubscriptions {
		st[0] = errnoInval
		return
	}
	mem := m.Memory()
	subs, ok := mem.Read(in, n*48)
	if !ok {
		st[0] = errnoFault
		return
	}
	evs, ok := mem.Read(out, n*32)
	if !ok {
		st[0] = errnoFault
		return
	}
	// Subscriptions are read before events are written: the guest may
	// pass overlapping buffers.
	subs = append([]byte(nil), subs...)
	clear(evs)
	if !mem.WriteUint32Le(nevents, n) {
		st[0] = errnoFault
		return
	}
	le := binary.LittleEndian
	next := 0
	event := func(sub []byte, errno byte) {
		e := evs[next*32:]
		copy(e[:8], sub[:8])
		e[8], e[9] = errno, 0
		le.PutUint32(e[10:], uint32(sub[8]))
		next++
	}
	type read struct {
		sub   []byte
		errno byte
	}
	var reads []read // fd_read subscriptions on stdio, answered last
	for i := uint32(0); i < n; i++ {
		sub := subs[i*48 : i*48+48]
		arg := sub[16:]
		switch sub[8] {
		case 0: // clock: relative timeouts only
			switch le.Uint16(arg[24:]) {
			case 0:
			case 1:
				st[0] = errnoNotsup
				return
			default:
				st[0] = errnoInval
				return
			}
			event(sub, 0)
		case 1, 2: // fd_read, fd_write
			fd := int32(le.Uint32(arg))
			switch {
			case fd < 0:
				st[0] = errnoBadf
				return
			case fd > 2: // not open
				event(sub, errnoBadf)
			case sub[8] == 1 && fd == 0:
				reads = append(reads, read{sub, 0})
			case sub[8] == 1: // reading stdout or stderr
				reads = append(reads, read{sub, errnoBadf})
			case fd == 0: // writing stdin
				event(sub, errnoBadf)
			default:
				event(sub, 0)
			}
		default:
			st[0] = errnoInval
			return
		}
	}
	for _, r := range reads {
		event(r.sub, r.errno)
	}
	st[0] = 0
}
