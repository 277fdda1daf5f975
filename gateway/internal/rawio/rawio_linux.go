package rawio

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// File is f read and written with raw system calls (see the package
// comment). Deadlines set on f and closing f apply as to f's own Read and
// Write.
//
// The functions handed to the poller are bound once, in New, to state
// kept in File: a closure per Read or Write would capture its results by
// reference and cost several heap allocations per call. rmu and wmu keep
// that state one caller's at a time; the poller's own descriptor locks
// already serialise readers and writers the same way, so they add no
// waiting of their own.
type File struct {
	f  *os.File
	rc syscall.RawConn

	rmu sync.Mutex
	rd  op // Read's
	wmu sync.Mutex
	wr  op // Write's and TryWrite's
}

// op is one raw read or write in progress: its buffer, and what the
// system call returned.
type op struct {
	p     []byte
	n     int
	errno syscall.Errno
	// read and write are the bound methods handed to the poller; nowait
	// is write that never waits (TryWrite).
	read, write, nowait func(fd uintptr) bool
}

func (o *op) doRead(fd uintptr) bool {
	for {
		m, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&o.p[0])), uintptr(len(o.p)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		o.n, o.errno = int(m), e
		return true
	}
}

func (o *op) doWrite(fd uintptr) bool {
	for {
		w, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&o.p[0])), uintptr(len(o.p)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		o.n, o.errno = int(w), e
		return true
	}
}

func (o *op) doWriteNow(fd uintptr) bool {
	for {
		w, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&o.p[0])), uintptr(len(o.p)))
		if e == syscall.EINTR {
			continue
		}
		o.n, o.errno = int(w), e
		return true // never wait
	}
}

// New returns f as a File when its descriptor is non-blocking and the
// runtime's poller waits on it (a deadline can be set); ok false means f
// must be used as it is: a raw system call on a blocking descriptor would
// hold its thread without the runtime knowing, and one the poller cannot
// wait on could not wait at all.
func New(f *os.File) (rf *File, ok bool) {
	if f == nil || f.SetDeadline(time.Time{}) != nil {
		return nil, false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, false
	}
	nonblock := false
	if err := rc.Control(func(fd uintptr) {
		fl, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		nonblock = e == 0 && fl&syscall.O_NONBLOCK != 0
	}); err != nil || !nonblock {
		return nil, false
	}
	r := &File{f: f, rc: rc}
	r.rd.read = r.rd.doRead
	r.wr.write, r.wr.nowait = r.wr.doWrite, r.wr.doWriteNow
	return r, true
}

// File is the file it reads and writes.
func (r *File) File() *os.File { return r.f }

// Read reads as f.Read does.
func (r *File) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.rmu.Lock()
	o := &r.rd
	o.p, o.n, o.errno = p, 0, 0
	err := r.rc.Read(o.read)
	n, errno := o.n, o.errno
	o.p = nil // the caller's buffer is not kept
	r.rmu.Unlock()
	switch {
	case err != nil:
		return 0, r.pathErr("read", err)
	case errno != 0:
		return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p as f.Write does.
func (r *File) Write(p []byte) (int, error) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	o := &r.wr
	defer func() { o.p = nil }()
	n := 0
	for n < len(p) {
		o.p, o.n, o.errno = p[n:], 0, 0
		err := r.rc.Write(o.write)
		if err != nil {
			return n, r.pathErr("write", err)
		}
		if o.errno != 0 {
			return n, &os.PathError{Op: "write", Path: r.f.Name(), Err: o.errno}
		}
		n += o.n
	}
	return n, nil
}

// TryWrite writes as much of p as the descriptor takes now, without
// waiting: n < len(p) with a nil error means it is full.
func (r *File) TryWrite(p []byte) (n int, err error) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	o := &r.wr
	defer func() { o.p = nil }()
	for n < len(p) {
		o.p, o.n, o.errno = p[n:], 0, 0
		if err := r.rc.Write(o.nowait); err != nil {
			return n, r.pathErr("write", err)
		}
		switch o.errno {
		case 0:
			n += o.n
		case syscall.EAGAIN:
			return n, nil
		default:
			return n, &os.PathError{Op: "write", Path: r.f.Name(), Err: o.errno}
		}
	}
	return n, nil
}

// pathErr is what f's own Read or Write returns for an error of the
// poller: a deadline that passed, or (the only other one a polled
// descriptor gets) f closed while it waited.
func (r *File) pathErr(op string, err error) error {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		err = os.ErrClosed
	}
	return &os.PathError{Op: op, Path: r.f.Name(), Err: err}
}
