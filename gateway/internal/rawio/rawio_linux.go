package rawio

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// File is f read and written with raw system calls (see the package
// comment). Deadlines set on f and closing f apply as to f's own Read and
// Write.
type File struct {
	f  *os.File
	rc syscall.RawConn
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
	return &File{f: f, rc: rc}, true
}

// File is the file it reads and writes.
func (r *File) File() *os.File { return r.f }

// Read reads as f.Read does.
func (r *File) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			m, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			}
			n, errno = int(m), e
			return true
		}
	})
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
	n := 0
	for n < len(p) {
		var m int
		var errno syscall.Errno
		err := r.rc.Write(func(fd uintptr) bool {
			for {
				w, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[n])), uintptr(len(p)-n))
				switch e {
				case syscall.EINTR:
					continue
				case syscall.EAGAIN:
					return false
				}
				m, errno = int(w), e
				return true
			}
		})
		if err != nil {
			return n, r.pathErr("write", err)
		}
		if errno != 0 {
			return n, &os.PathError{Op: "write", Path: r.f.Name(), Err: errno}
		}
		n += m
	}
	return n, nil
}

// TryWrite writes as much of p as the descriptor takes now, without
// waiting: n < len(p) with a nil error means it is full.
func (r *File) TryWrite(p []byte) (n int, err error) {
	for n < len(p) {
		var m int
		var errno syscall.Errno
		if err := r.rc.Write(func(fd uintptr) bool {
			for {
				w, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[n])), uintptr(len(p)-n))
				if e == syscall.EINTR {
					continue
				}
				m, errno = int(w), e
				return true // never wait
			}
		}); err != nil {
			return n, r.pathErr("write", err)
		}
		switch errno {
		case 0:
			n += m
		case syscall.EAGAIN:
			return n, nil
		default:
			return n, &os.PathError{Op: "write", Path: r.f.Name(), Err: errno}
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
