package front

import (
	"syscall"
	"testing"
)

// TestPollableStdinLeavesFlagsAsFound: a blocking pipe on stdin is read
// through the poller and handed back blocking; a pipe already
// non-blocking (the flag is shared with whoever handed it over) is left
// alone, and stays non-blocking.
func TestPollableStdinLeavesFlagsAsFound(t *testing.T) {
	saved, err := syscall.Dup(0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = syscall.Dup3(saved, 0, 0)
		syscall.Close(saved)
	}()
	nonblocking := func() bool {
		fl, _, e := syscall.Syscall(syscall.SYS_FCNTL, 0, syscall.F_GETFL, 0)
		if e != 0 {
			t.Fatal(e)
		}
		return fl&syscall.O_NONBLOCK != 0
	}
	for _, already := range []bool{false, true} {
		var p [2]int
		if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Dup3(p[0], 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := syscall.SetNonblock(0, already); err != nil {
			t.Fatal(err)
		}
		in, restore, ok, err := pollableStdin()
		if err != nil {
			t.Fatal(err)
		}
		if ok == already {
			t.Errorf("non-blocking %v: taken for the poller %v", already, ok)
		}
		if ok {
			syscall.Write(p[1], []byte("x\n"))
			buf := make([]byte, 2)
			if n, err := in.Read(buf); n != 2 || err != nil {
				t.Errorf("reading through the poller: %d, %v", n, err)
			}
			restore()
		}
		if got := nonblocking(); got != already {
			t.Errorf("stdin found non-blocking %v, left non-blocking %v", already, got)
		}
		syscall.Close(p[0])
		syscall.Close(p[1])
	}
}
