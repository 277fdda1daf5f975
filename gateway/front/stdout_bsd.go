//go:build unix && !linux && !solaris

package front

import "syscall"

func dupTo(oldfd, newfd int) error { return syscall.Dup2(oldfd, newfd) }
