package wasm

import (
	"context"
	"encoding/binary"
	"io"
	"testing"

	"github.com/tetratelabs/wazero"
)

// stdioModule imports poll_oneoff, fd_read, fd_write and fd_close and
// exports poll(n) (the subscriptions at 0, the events at 4096, the count
// at 8192), read(fd) and write(fd) (one buffer: the iovec at 12288, the
// count at 12300) and close(fd).
func stdioModule() []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	out = wasmSection(out, 1, []byte{2, 0x60, 4, tI32, tI32, tI32, tI32, 1, tI32, 0x60, 1, tI32, 1, tI32})
	var im []byte
	im = append(im, 4)
	for _, f := range []struct {
		name string
		typ  byte
	}{{"poll_oneoff", 0}, {"fd_read", 0}, {"fd_write", 0}, {"fd_close", 1}} {
		im = append(wasmName(wasmName(im, "wasi_snapshot_preview1"), f.name), 0, f.typ)
	}
	out = wasmSection(out, 2, im)
	out = wasmSection(out, 3, []byte{4, 1, 1, 1, 1})
	out = wasmSection(out, 5, []byte{1, 0, 1})
	var ex []byte
	ex = append(wasmName(append(ex, 5), "memory"), 2, 0)
	for i, name := range []string{"poll", "read", "write", "close"} {
		ex = append(wasmName(ex, name), 0, byte(4+i))
	}
	out = wasmSection(out, 7, ex)
	bodies := [][]byte{
		cat([]byte{0}, i32c(0), i32c(4096), []byte{opLocalGet, 0}, i32c(8192), []byte{opCall, 0, opEnd}),
		cat([]byte{0, opLocalGet, 0}, i32c(12288), i32c(1), i32c(12300), []byte{opCall, 1, opEnd}),
		cat([]byte{0, opLocalGet, 0}, i32c(12288), i32c(1), i32c(12300), []byte{opCall, 2, opEnd}),
		[]byte{0, opLocalGet, 0, opCall, 3, opEnd},
	}
	code := []byte{byte(len(bodies))}
	for _, b := range bodies {
		code = append(appendU32(code, uint32(len(b))), b...)
	}
	return wasmSection(out, 10, code)
}

// TestPollOneoffAgreesWithStdio: for stdin, stdout and stderr, open and
// then closed, poll_oneoff's answer to an fd_read or fd_write
// subscription is what that read or write then does: ready (errno 0)
// when it succeeds, without blocking (stdin is at its end: a read
// returns 0 bytes), and the read's or write's own errno when it fails.
// Before, a read of stdout or stderr was reported ready (the read fails,
// EBADF), a write to them not supported (it succeeds), and a file the
// guest had closed as still open.
func TestPollOneoffAgreesWithStdio(t *testing.T) {
	ctx := context.WithValue(context.Background(), stateKey{}, &callState{})
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	if err := (&Host{}).linkWASI(ctx, rt); err != nil {
		t.Fatal(err)
	}
	cm, err := rt.CompileModule(ctx, stdioModule())
	if err != nil {
		t.Fatal(err)
	}
	m, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("").WithStdout(io.Discard).WithStderr(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	mem := m.Memory()
	call := func(name string, arg uint64) uint64 {
		res, err := m.ExportedFunction(name).Call(ctx, arg)
		if err != nil {
			t.Fatalf("%s(%d): %v", name, arg, err)
		}
		return res[0]
	}
	poll := func(tag byte, fd int32) (errno uint64, events uint32, evErrno uint16) {
		sub := make([]byte, 48)
		binary.LittleEndian.PutUint64(sub, 7)
		sub[8] = tag
		binary.LittleEndian.PutUint32(sub[16:], uint32(fd))
		mem.Write(0, sub)
		errno = uint64(call("poll", 1))
		events, _ = mem.ReadUint32Le(8192)
		evErrno, _ = mem.ReadUint16Le(4096 + 8)
		return
	}
	do := func(op string, fd int32) (uint64, uint32) {
		mem.WriteUint32Le(12288, 16384) // buffer
		mem.WriteUint32Le(12292, 16)    // of 16 bytes
		mem.WriteUint32Le(12300, 99)
		errno := call(op, uint64(uint32(fd)))
		n, _ := mem.ReadUint32Le(12300)
		return errno, n
	}
	check := func(state string) {
		for fd := int32(0); fd <= 2; fd++ {
			for tag, op := range map[byte]string{1: "read", 2: "write"} {
				errno, events, evErrno := poll(tag, fd)
				if errno != 0 || events != 1 {
					t.Errorf("%s fd %d: poll for %s: errno %d, %d events; want one event", state, fd, op, errno, events)
					continue
				}
				opErrno, n := do(op, fd)
				t.Logf("%s fd %d: poll for %s: event errno %d; %s: errno %d, %d bytes", state, fd, op, evErrno, op, opErrno, n)
				if uint64(evErrno) != opErrno {
					t.Errorf("%s fd %d: poll says %s is errno %d, the %s gives errno %d", state, fd, op, evErrno, op, opErrno)
				}
				if op == "read" && opErrno == 0 && n != 0 {
					t.Errorf("%s fd %d: read %d bytes from stdin; want its end", state, fd, n)
				}
			}
		}
	}
	check("open")
	for fd := uint64(0); fd <= 2; fd++ {
		t.Logf("close(%d): errno %d", fd, call("close", fd))
	}
	check("closed")
}
