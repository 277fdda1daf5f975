package wasm

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// pollModule imports poll_oneoff and exports memory (1 page) and
// run(n) = poll_oneoff(in 0, out 4096, n, nevents at 8192).
func pollModule() []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	out = wasmSection(out, 1, []byte{2, 0x60, 4, tI32, tI32, tI32, tI32, 1, tI32, 0x60, 1, tI32, 1, tI32})
	out = wasmSection(out, 2, append(wasmName(wasmName([]byte{1}, "wasi_snapshot_preview1"), "poll_oneoff"), 0, 0))
	out = wasmSection(out, 3, []byte{1, 1})
	out = wasmSection(out, 5, []byte{1, 0, 1})
	var ex []byte
	ex = append(wasmName(append(ex, 2), "memory"), 2, 0)
	ex = append(wasmName(ex, "run"), 0, 1)
	out = wasmSection(out, 7, ex)
	body := cat([]byte{0}, i32c(0), i32c(4096), []byte{opLocalGet, 0}, i32c(8192), []byte{opCall, 0, opEnd})
	return wasmSection(out, 10, append(appendU32([]byte{1}, uint32(len(body))), body...))
}

// TestPollOneoffAsWazero: sluice's poll_oneoff answers every kind of
// subscription a filter can make (clocks relative, absolute, with bad
// flags; fd_read and fd_write on stdin, stdout, stderr, a file not open,
// a negative fd; an unknown tag; mixtures) with the same errno, events
// and event count as wazero's own, but for the fd answers sluice gives
// on purpose (TestPollOneoffAgreesWithStdio).
func TestPollOneoffAsWazero(t *testing.T) {
	ctx := context.Background()
	sub := func(userdata uint64, tag byte, arg uint32, flags uint16) []byte {
		b := make([]byte, 48)
		binary.LittleEndian.PutUint64(b, userdata)
		b[8] = tag
		binary.LittleEndian.PutUint32(b[16:], arg)   // clock id, or fd
		binary.LittleEndian.PutUint64(b[24:], 1000)  // clock timeout
		binary.LittleEndian.PutUint16(b[40:], flags) // clock flags
		return b
	}
	clock := func(u uint64, flags uint16) []byte { return sub(u, 0, 1, flags) }
	read := func(u uint64, fd int32) []byte { return sub(u, 1, uint32(fd), 0) }
	write := func(u uint64, fd int32) []byte { return sub(u, 2, uint32(fd), 0) }
	cases := [][][]byte{
		{clock(1, 0)}, {clock(1, 1)}, {clock(1, 2)},
		{read(1, 0)}, {read(1, 1)}, {read(1, 2)}, {read(1, 5)}, {read(1, -1)},
		{write(1, 0)}, {write(1, 1)}, {write(1, 2)}, {write(1, 5)}, {write(1, -1)},
		{sub(1, 3, 0, 0)},
		{read(1, 0), clock(2, 0), write(3, 1), read(4, 7), read(5, 2), write(6, 9)},
		{clock(1, 0), read(2, 0), clock(3, 1)},
		{write(1, 2), read(2, -4), clock(3, 0)},
		{read(1, 2), write(2, 0), read(3, 0), read(4, 1), clock(5, 0), write(6, 1)},
	}
	run := func(rt wazero.Runtime, subs [][]byte, patch bool) string {
		mod, err := rt.Instantiate(ctx, pollModule())
		if err != nil {
			t.Fatal(err)
		}
		defer mod.Close(ctx)
		mem := mod.Memory()
		for i, s := range subs {
			mem.Write(uint32(i*48), s)
		}
		res, err := mod.ExportedFunction("run").Call(ctx, uint64(len(subs)))
		if err != nil {
			t.Fatal(err)
		}
		events, _ := mem.Read(4096, uint32(len(subs)*32))
		n, _ := mem.ReadUint32Le(8192)
		if patch {
			// Where sluice answers otherwise, on purpose (see pollOneoff):
			// reading stdout or stderr, writing stdin is EBADF; writing
			// stdout or stderr is ready.
			events = append([]byte(nil), events...)
			for i := uint32(0); i < n; i++ {
				e := events[i*32:]
				for _, s := range subs {
					if !bytes.Equal(s[:8], e[:8]) || s[8] != 1 && s[8] != 2 {
						continue
					}
					switch fd := int32(binary.LittleEndian.Uint32(s[16:])); {
					case s[8] == 1 && (fd == 1 || fd == 2), s[8] == 2 && fd == 0:
						binary.LittleEndian.PutUint16(e[8:], errnoBadf)
					case s[8] == 2 && (fd == 1 || fd == 2):
						binary.LittleEndian.PutUint16(e[8:], 0)
					}
				}
			}
		}
		return fmt.Sprintf("errno %d, %d events %x", res[0], n, events)
	}
	stock := wazero.NewRuntime(ctx)
	defer stock.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, stock)
	own := wazero.NewRuntime(ctx)
	defer own.Close(ctx)
	if err := (&Host{}).linkWASI(ctx, own); err != nil {
		t.Fatal(err)
	}
	for i, subs := range cases {
		if got, want := run(own, subs, false), run(stock, subs, true); got != want {
			t.Errorf("case %d: sluice's poll_oneoff: %s\nwazero's: %s", i, got, want)
		}
	}
}

// TestRandomGetAsWazero: sluice's random_get, filling in chunks, gives an
// instance the same bytes as wazero's default source, call after call (so
// guests, the built-ins among them, see what they saw before).
func TestRandomGetAsWazero(t *testing.T) {
	ctx := context.WithValue(context.Background(), stateKey{}, &callState{})
	out := []byte("\x00asm\x01\x00\x00\x00")
	out = wasmSection(out, 1, []byte{2, 0x60, 2, tI32, tI32, 1, tI32, 0x60, 2, tI32, tI32, 1, tI32})
	out = wasmSection(out, 2, append(wasmName(wasmName([]byte{1}, "wasi_snapshot_preview1"), "random_get"), 0, 0))
	out = wasmSection(out, 3, []byte{1, 1})
	out = wasmSection(out, 5, []byte{1, 0, 8})
	var ex []byte
	ex = append(wasmName(append(ex, 2), "memory"), 2, 0)
	ex = append(wasmName(ex, "run"), 0, 1)
	out = wasmSection(out, 7, ex)
	body := []byte{0, opLocalGet, 0, opLocalGet, 1, opCall, 0, opEnd}
	mod := wasmSection(out, 10, append(appendU32([]byte{1}, uint32(len(body))), body...))
	run := func(rt wazero.Runtime) []byte {
		m, err := rt.Instantiate(ctx, mod)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close(ctx)
		var got []byte
		for _, c := range [][2]uint64{{0, 7}, {100, 70000}, {0, 200000}, {5, 1}} {
			if res, err := m.ExportedFunction("run").Call(ctx, c[0], c[1]); err != nil || res[0] != 0 {
				t.Fatalf("random_get(%d, %d): %v, %v", c[0], c[1], res, err)
			}
			b, _ := m.Memory().Read(uint32(c[0]), uint32(c[1]))
			got = append(got, b...)
		}
		return got
	}
	stock := wazero.NewRuntime(ctx)
	defer stock.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, stock)
	own := wazero.NewRuntime(ctx)
	defer own.Close(ctx)
	if err := (&Host{}).linkWASI(ctx, own); err != nil {
		t.Fatal(err)
	}
	if got, want := run(own), run(stock); string(got) != string(want) {
		t.Fatalf("random_get gave other bytes than wazero's (first %x, want %x)", got[:8], want[:8])
	}
}
