//go:build linux || darwin

package proc

import (
	"errors"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// unixGroup is a process group on Linux and macOS. The group id is the
// leader's pid, and the leader stays unreaped until the group is released,
// which is what makes every kill(-pgid) safe (see the package doc). What
// differs between the two systems — how the exit is noticed without
// reaping, how the leader is signalled, how members are counted — is in
// leaderWatch and the functions of proc_linux.go and proc_darwin.go.
type unixGroup struct {
	server string
	pid    int
	osProc *os.Process
	wd     *watchdog
	lw     *leaderWatch // platform part: a pidfd (Linux) or a kqueue (macOS)
}

func spawn(spec *Spec, exe string, argv, env []string, dir string, stdio []*os.File) (group, int, error) {
	attr := &os.ProcAttr{Dir: dir, Env: env, Files: stdio, Sys: sysProcAttr()}
	osProc, err := startProcess(exe, argv, attr)
	if err != nil {
		return nil, 0, err
	}
	g := &unixGroup{server: spec.Server, pid: osProc.Pid, osProc: osProc}
	// The leader cannot be reaped before release reaps it, so its pid is
	// ours and watching it now is race-free.
	g.lw = watchLeader(g.pid)
	if !spec.NoWatchdog {
		wd, err := startWatchdog(g.pid)
		if err != nil {
			// Unreaped leader: its pid and group id are still ours.
			_ = unix.Kill(-g.pid, unix.SIGKILL)
			_, _ = osProc.Wait()
			g.lw.close()
			return nil, 0, errors.Join(errNoWatchdog, err)
		}
		g.wd = wd
	}
	return g, g.pid, nil
}

func (g *unixGroup) wait() error { return g.lw.wait(g.server, g.pid) }

func (g *unixGroup) signal(sig syscall.Signal, leaderLive bool) {
	if leaderLive {
		g.lw.signal(g.pid, sig)
	}
	_ = unix.Kill(-g.pid, sig)
}

func (g *unixGroup) members() bool { return liveMembers(g.pid, g.pid, g.wd.pid()) }

func (g *unixGroup) release(bound time.Duration) error {
	g.wd.release(bound)
	g.lw.close()
	st, err := g.osProc.Wait() // reap; from here on the id is never signalled
	if err != nil || st == nil {
		return &ExitError{Server: g.server, Code: -1}
	}
	ws, _ := st.Sys().(syscall.WaitStatus)
	return exitFromWaitStatus(g.server, ws)
}

// GroupAlive reports whether any process (zombies included) has process
// group id pgid, by kill(-pgid, 0). Only meaningful for a group this
// process knows is still its own. A group whose last members were just
// killed can stay "alive" as zombies until their parent (init, for
// orphans) reaps them.
func GroupAlive(pgid int) bool {
	if pgid <= 1 {
		return false
	}
	err := unix.Kill(-pgid, 0)
	return err == nil || err == unix.EPERM
}

// exitFromWaitStatus turns a wait status into nil for a clean exit or an
// *ExitError.
func exitFromWaitStatus(server string, ws syscall.WaitStatus) error {
	switch {
	case ws.Exited() && ws.ExitStatus() == 0:
		return nil
	case ws.Exited():
		return &ExitError{Server: server, Code: ws.ExitStatus()}
	case ws.Signaled():
		return &ExitError{Server: server, Code: -1, Signal: ws.Signal()}
	}
	return &ExitError{Server: server, Code: -1}
}
