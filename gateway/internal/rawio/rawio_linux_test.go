package rawio

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func pipe(t *testing.T) (r, w *File) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close(); pw.Close() })
	r, ok := New(pr)
	if !ok {
		t.Fatal("a pipe from os.Pipe (non-blocking, polled) was refused")
	}
	w, ok = New(pw)
	if !ok {
		t.Fatal("a pipe from os.Pipe (non-blocking, polled) was refused")
	}
	return r, w
}

// TestReadWriteWaitsOnThePoller: a reader with nothing to read waits (on
// the poller) until the writer writes, a write larger than the pipe
// holds waits until the reader has taken it, every byte arrives in
// order, and the end of the pipe reads as io.EOF.
func TestReadWriteWaitsOnThePoller(t *testing.T) {
	r, w := pipe(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB: many pipes full
	wrote := make(chan error, 1)
	go func() {
		n, err := w.Write(big)
		if err == nil && n != len(big) {
			err = io.ErrShortWrite
		}
		w.File().Close()
		wrote <- err
	}()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("reading: %v", err)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("writing: %v", err)
	}
	if !bytes.Equal(got, big) {
		t.Fatalf("read %d bytes, not the %d written in order", len(got), len(big))
	}
	if n, err := r.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("after the end: %d, %v; want 0, io.EOF", n, err)
	}
}

// TestTryWriteNeverWaits: on a full pipe TryWrite returns what it wrote
// (less than asked) and no error, at once.
func TestTryWriteNeverWaits(t *testing.T) {
	_, w := pipe(t)
	big := make([]byte, 4<<20) // more than any pipe buffer
	n, err := w.TryWrite(big)
	if err != nil || n == 0 || n >= len(big) {
		t.Fatalf("TryWrite on an empty pipe: %d, %v; want part of %d and no error", n, err, len(big))
	}
	if m, err := w.TryWrite(big); m != 0 || err != nil {
		t.Fatalf("TryWrite on a full pipe: %d, %v; want 0, nil", m, err)
	}
}

// TestCloseAndDeadlineEndAWait: a read waiting on the poller ends with
// os.ErrClosed when the file is closed, and with os.ErrDeadlineExceeded
// when its deadline passes, as os.File's own Read does; so does a write
// to a full pipe.
func TestCloseAndDeadlineEndAWait(t *testing.T) {
	r, w := pipe(t)
	if err := r.File().SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past its deadline: %v", err)
	}
	if _, err := w.TryWrite(make([]byte, 4<<20)); err != nil {
		t.Fatal(err)
	}
	if err := w.File().SetWriteDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write to a full pipe past its deadline: %v", err)
	}
	if err := r.File().SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	r2, _ := pipe(t)
	done := make(chan error, 1)
	go func() {
		_, err := r2.Read(make([]byte, 8))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the read wait (the test holds either way)
	r2.File().Close()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Fatalf("read of a file closed while it waited: %v", err)
		}
	case <-time.After(10 * time.Second): // hang guard
		t.Fatal("closing the file did not end the waiting read")
	}
	if _, err := r2.Read(make([]byte, 8)); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("read of a closed file: %v", err)
	}
}

// TestWriteToAClosedPipe: a write whose reader has gone fails with EPIPE
// (the process is not killed by SIGPIPE: the descriptor is not fd 1 or 2).
func TestWriteToAClosedPipe(t *testing.T) {
	r, w := pipe(t)
	r.File().Close()
	if _, err := w.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("write with no reader: %v", err)
	}
	if _, err := w.TryWrite([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("TryWrite with no reader: %v", err)
	}
}

// TestNewRefusesWhatThePollerCannotWaitOn: a blocking pipe and a regular
// file are used as they are.
func TestNewRefusesWhatThePollerCannotWaitOn(t *testing.T) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	blocking := os.NewFile(uintptr(p[0]), "blocking")
	defer blocking.Close()
	defer syscall.Close(p[1])
	if _, ok := New(blocking); ok {
		t.Error("a blocking pipe was taken for raw system calls")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := New(f); ok {
		t.Error("a regular file was taken for raw system calls")
	}
	if _, ok := New(nil); ok {
		t.Error("a nil file was taken")
	}
}

// TestReadWriteAllocateNothing: a Read, Write or TryWrite that the
// descriptor takes at once allocates nothing (they carry every stdio
// frame), and concurrent writers each get all of their bytes through.
func TestReadWriteAllocateNothing(t *testing.T) {
	r, w := pipe(t)
	msg := []byte("{\"jsonrpc\":\"2.0\",\"id\":1}\n")
	buf := make([]byte, 256)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := w.Write(msg); err != nil {
			t.Fatal(err)
		}
		if n, err := w.TryWrite(msg); err != nil || n != len(msg) {
			t.Fatalf("TryWrite: %d, %v", n, err)
		}
		got := 0
		for got < 2*len(msg) {
			n, err := r.Read(buf[got:])
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
		if !bytes.Equal(buf[:len(msg)], msg) || !bytes.Equal(buf[len(msg):got], msg) {
			t.Fatalf("read %q", buf[:got])
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per Write+TryWrite+Read; want 0", allocs)
	}

	const writers, each = 4, 500
	done := make(chan error, writers)
	for i := 0; i < writers; i++ {
		go func() {
			for j := 0; j < each; j++ {
				if _, err := w.Write(msg); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	total := 0
	want := writers * each * len(msg)
	var all []byte
	for total < want {
		n, err := r.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, buf[:n]...)
		total += n
	}
	for i := 0; i < writers; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(all, bytes.Repeat(msg, writers*each)) {
		t.Fatal("concurrent writes interleaved or lost bytes")
	}
}
