package proc

import (
	"errors"
	"syscall"
	"time"
)

// group is everything the rest of this package knows about a platform's
// process group: a Unix process group on Linux and macOS (proc_unix.go,
// with proc_linux.go and proc_darwin.go for where they differ), a Job
// Object on Windows (proc_windows.go). Start, teardown, escalate,
// supervise and cleanGroup (proc.go) are written against it alone, so the
// life cycle and its outcomes are the same everywhere.
//
// It is created by spawn, which each platform file defines:
//
//	func spawn(spec *Spec, exe string, argv, env []string, dir string, stdio []*os.File) (group, int, error)
//
// spawn starts exe with argv (argv[0] is the declared command), env and
// working directory dir ("" = the gateway's), stdio as its standard
// input, output and error, as the leader of a new group (and, unless
// spec.NoWatchdog, with whatever guards the group against the gateway's
// death). It returns the group and the leader's pid.
type group interface {
	// wait blocks until the leader exits and returns its status: nil for
	// a clean exit, else an *ExitError — or errStatusAtRelease when the
	// platform learns the status only by reaping. The leader's id stays
	// pinned: wait never reaps.
	wait() error
	// signal sends syscall.SIGTERM (the polite request) or
	// syscall.SIGKILL (the forced end) to the whole group, and to the
	// leader directly while leaderLive. Only called before release.
	signal(sig syscall.Signal, leaderLive bool)
	// members reports whether a live process other than the leader (and
	// the group's own watchdog) remains. Called after the leader exited.
	members() bool
	// release stands the watchdog down (within bound), reaps the leader
	// and frees every kernel handle. Nothing is signalled afterwards. It
	// returns the leader's status when wait returned errStatusAtRelease.
	release(bound time.Duration) error
}

// errStatusAtRelease is returned by group.wait when the exit status is
// known only once the leader is reaped (see proc_darwin.go).
var errStatusAtRelease = errors.New("exit status known at release")
