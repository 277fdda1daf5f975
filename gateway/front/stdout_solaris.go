package front

import "errors"

// Solaris and illumos: the syscall package has no dup2 (it is fcntl
// F_DUP2FD there, which it does not export), so stdout is not reserved;
// the stdio server logs that and writes frames to stdout as it is.
func dupTo(oldfd, newfd int) error {
	return errors.New("front: no dup2 in this platform's syscall package")
}
