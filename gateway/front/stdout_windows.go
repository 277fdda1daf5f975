package front

import (
	"errors"
	"os"
	"syscall"
)

// reserveStdout keeps the process's real standard output for the
// protocol alone, as on Unix (stdout_unix.go), with Windows' means: a
// process has no descriptor 1 to re-point, but two things name its
// standard output — the os.Stdout variable, which every fmt.Print and
// library debug print in this process writes to, and the process's
// STD_OUTPUT_HANDLE, which code outside Go's os package asks for. Both are
// pointed at standard error; frames go to the original file. Go writes
// bytes to a pipe exactly as given (no text-mode CRLF translation), so a
// frame's "\n" is the only line ending on the wire. restore undoes it.
func reserveStdout() (proto *os.File, restore func(), err error) {
	if os.Stdout == nil || os.Stderr == nil {
		return nil, nil, errors.New("front: no standard output or error to reserve")
	}
	proto = os.Stdout
	if err := setStdHandle(syscall.STD_OUTPUT_HANDLE, syscall.Handle(os.Stderr.Fd())); err != nil {
		return nil, nil, err
	}
	os.Stdout = os.Stderr
	return proto, func() {
		_ = setStdHandle(syscall.STD_OUTPUT_HANDLE, syscall.Handle(proto.Fd()))
		os.Stdout = proto
	}, nil
}

var procSetStdHandle = syscall.NewLazyDLL("kernel32.dll").NewProc("SetStdHandle")

func setStdHandle(which int, h syscall.Handle) error {
	if r, _, err := procSetStdHandle.Call(uintptr(which), uintptr(h)); r == 0 {
		return errors.New("front: SetStdHandle: " + err.Error())
	}
	return nil
}
