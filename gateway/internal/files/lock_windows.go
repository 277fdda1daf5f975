package files

import (
	"os"
	"syscall"
	"unsafe"
)

// Windows has no flock; LockFileEx on the first byte of the sidecar lock
// file gives the same exclusive, blocking, process-wide lock, released
// when the handle closes (also when the process dies).
var (
	kernel32         = syscall.NewLazyDLL("kernel32.dll")
	procLockFileEx   = kernel32.NewProc("LockFileEx")
	procUnlockFileEx = kernel32.NewProc("UnlockFileEx")
)

const lockfileExclusiveLock = 0x2

func lockFile(f *os.File) error {
	var ol syscall.Overlapped
	r, _, err := procLockFileEx.Call(f.Fd(), lockfileExclusiveLock, 0, 1, 0, uintptr(unsafe.Pointer(&ol)))
	if r == 0 {
		return err
	}
	return nil
}

// releaseFile drops the lock and closes f.
func releaseFile(f *os.File) {
	_ = unlockFile(f)
	f.Close()
}

// closeUnlocked closes f after lockFile failed.
func closeUnlocked(f *os.File) { f.Close() }

func unlockFile(f *os.File) error {
	var ol syscall.Overlapped
	r, _, err := procUnlockFileEx.Call(f.Fd(), 0, 1, 0, uintptr(unsafe.Pointer(&ol)))
	if r == 0 {
		return err
	}
	return nil
}
