// Package proc spawns local server processes, each as the leader of its own
// process group, and tears the whole group down without leaving a process
// behind. It owns: command resolution (absolute path or bare name on PATH,
// never a shell) and the operator's command allow-list; working-directory
// containment; the child's environment (safe-list, opt-in pass-through,
// deny-list); the group's life cycle (unspawned → live → cleaning →
// released) and its teardown; a bounded, valid-UTF-8 tail of stderr.
//
// It also owns one process-wide memory call, ReleaseStartupPages
// (pages_linux.go): a long-running gateway lets go of the executable's
// pages that only its start-up touched.
//
// It is the only package that imports golang.org/x/sys, and it must never
// import another package of sluice. It runs on Linux, macOS and Windows.
// The life cycle, the teardown sequence and the Outcome are written once
// (proc.go) against one interface, group (group.go); each platform
// implements it: proc_unix.go for what Linux and macOS share (a process
// group whose id is the unreaped leader's pid, kill(-pgid), the watchdog),
// proc_linux.go and proc_darwin.go for where they differ, proc_windows.go
// for Job Objects. Pure string work for Windows (PATHEXT resolution,
// command-line quoting, the environment block) is in winpath.go, so its
// tests run everywhere.
//
// # What each platform guarantees, and how it was verified
//
//   - Linux: as described below; every test here runs in CI, with -race.
//   - macOS: the same process-group design without pidfd, waitid(WNOWAIT),
//     Pdeathsig or procfs (see "Why macOS watches with kqueue"). The same
//     stdin EOF → SIGTERM → SIGKILL sequence and outcomes; zero orphans
//     when the gateway is killed comes from the watchdog alone. The code
//     is compiled and vetted for darwin/amd64 and darwin/arm64 in CI; its
//     tests have not been run on a Mac by this project's CI (none is
//     available); the kernel-independent parts (member filtering, status
//     decoding) are shared code tested on Linux.
//   - Windows: each server in its own Job Object with kill-on-close, so
//     the kernel ends the whole tree when the gateway dies, however it
//     dies; graceful stop by stdin EOF, then CTRL_BREAK (when the gateway
//     has a console to share), then TerminateJobObject. The tests of this
//     package, TestGatewayKilledWindows included, run in CI under Wine
//     (scripts/wine-test.sh), which implements Job Objects, kill-on-close
//     and TerminateJobObject; CTRL_BREAK is not exercised there (Wine's
//     tests run without a console), so the polite stage is verified only
//     as far as stdin EOF.
//
// Teardown, whether Close asks for it or the leader leaves on its own:
// close stdin, wait StdinGrace, SIGTERM to the group, wait KillGrace,
// SIGKILL to the group, wait KillBound, release. A group that outlives
// SIGKILL is reported in the Outcome (Complete false, Reason
// "group-survived-sigkill"), not returned as an error, and its pipes are
// destroyed.
//
// # Why other platforms build but launch nothing
//
// Process groups that are torn down whole, the watchdog and directory
// pinning exist for Linux, macOS and Windows (SupportedPlatforms). On
// any other platform the package still builds (proc_unsupported.go), so
// the CLI, trust, catalogs and remote servers work there, and every
// launch of a local server fails with one *UnsupportedError that names
// the supported platforms. A port that launched without the group
// guarantees would leave processes behind; make check builds and vets
// FreeBSD, Solaris, illumos and AIX so the build itself does not regress
// (this package's launching tests are built only where launching works).
//
// # Why the leader stays a zombie until the group is gone
//
// The group id is the leader's pid. Signalling -pgid is only safe while
// that number cannot belong to anyone else, and the kernel guarantees that
// exactly as long as something still references it: a live or unreaped
// leader, or any live member of the group. A supervisor goroutine waits for
// the leader with waitid(WEXITED|WNOWAIT) — it sees the exit without
// reaping — and at that moment starts cleaning the rest of the group, while
// the zombie leader still pins the id. Only when no live member remains (or
// the bounds ran out) does it mark the group released and reap the leader.
// After that nothing is ever signalled again: a Close called an hour later
// just returns the recorded Outcome. Cleanup therefore does not depend on
// anyone calling Close in time. The leader itself is signalled through a
// pidfd (pidfd_open right after spawn, race-free because only we can reap
// it), in case it moved to another group.
//
// Membership is read from /proc (process group field), skipping the zombie
// leader and the watchdog. Zombies are not counted: a killed orphan is
// reaped by init on init's schedule (seconds, in some containers), runs
// nothing, and only keeps the id pinned — which is harmless. GroupAlive
// (kill(-pgid, 0)) does count them, so tests give it a bounded moment.
//
// # Why every fork happens on one locked OS thread
//
// Pdeathsig (here SIGKILL) is delivered when the thread that forked the
// child exits, not when the process does. Go threads do exit: a goroutine
// that ends while locked to its thread takes the thread with it. Forking
// from whatever thread the caller happens to run on would let an unrelated
// goroutine's exit kill a healthy server. All spawns go through one
// goroutine that locks its thread forever; TestSpawnThreadExitDoesNotKillServer
// fails without it.
//
// # Why a watchdog process: what survives a SIGKILLed gateway
//
// Measured by TestGatewaySIGKILL (re-executed test binary as the gateway,
// server leader ignoring SIGTERM and stdin EOF, grandchild ignoring
// SIGTERM, gateway SIGKILLed): the leader dies at once through Pdeathsig,
// and the grandchild survives — reparented to init, still in the old
// group, still running seconds later. Pdeathsig is not inherited across
// fork, and stdin EOF only helps children that read it. So, unless
// Spec.NoWatchdog is set, Start also starts a watchdog: a second copy of
// the running executable (/proc/self/exe; this package's init function
// recognises the role before main runs) that joins the server's group,
// ignores SIGTERM, SIGHUP and SIGINT, and blocks reading a pipe whose only
// write end is held by the gateway. Start returns only after the watchdog
// has reported, over a second pipe, that it ignores SIGTERM: before that a
// teardown begun right away would have killed it with the group (a flaky
// test found this window). The gateway stands it down (one byte,
// then close) after its own teardown. If instead the pipe reports EOF, the
// gateway died: the watchdog sends SIGTERM to the group, waits half a
// second for members other than itself, then SIGKILLs the group, itself
// included. As a member it pins the group id, so the id it signals cannot
// have been reused. The role is selected by the variable
// SLUICE_PROC_WATCHDOG, which the deny-list keeps out of every server's
// environment; a program linking this package must not set it itself. With the watchdog, the same test finds leader and
// grandchild gone and the group empty.
//
// What remains: a process that leaves the group (setsid, setpgid) is out
// of reach of both the group teardown and the watchdog; a gateway killed
// in the instant between spawning the leader and starting its watchdog
// relies on Pdeathsig alone; a watchdog that is itself SIGKILLed (by the
// server, or an OOM kill) stops guarding; each server costs one extra
// small process. Stronger guarantees need a cgroup or a PID namespace per
// server, which need privileges or user namespaces this package does not
// assume.
//
// # Why macOS watches with kqueue, and why the group id cannot be reused
//
// macOS has no pidfd, golang.org/x/sys offers no waitid there, and wait4
// reaps. Right after spawn, while the leader is our unreaped child,
// proc_darwin.go registers a kqueue EVFILT_PROC filter for NOTE_EXIT with
// NOTE_EXITSTATUS on its pid: the kernel reports the exit and its wait
// status without reaping, and the runtime's poller waits on the kqueue
// descriptor, so a live server holds no thread. The zombie leader then
// pins the group id exactly as on Linux: a pid is not handed out again
// while its process (even a zombie) exists, nor while it names a process
// group that still has members (POSIX: a process group's id is not reused
// while the group exists). Every kill(-pgid) happens before the leader is
// reaped, so it can only reach this server's group. If the leader exits
// before the filter is registered (the kernel refuses it with ESRCH), its
// status is learnt when it is reaped; if no kqueue can be created at all,
// the supervisor polls sysctl kern.proc.pid for the zombie state — still
// without reaping. Members are counted with sysctl kern.proc.pgrp, skipping
// zombies, the leader and the watchdog. There is no Pdeathsig, so the
// watchdog is the only guard against the gateway's death; it watches two
// things: EOF on its control pipe (as on Linux) and a kqueue NOTE_EXIT on
// the gateway's pid, which does not depend on who else might hold a copy
// of the pipe. The child changes to the checked directory by path (no
// descriptor-relative chdir without procfs), which leaves a window between
// the check at spawn and the child's chdir in which a swapped-in symlink
// could redirect it.
//
// # Why Windows uses a Job Object per server, created suspended
//
// Windows has no process groups that can be signalled as a whole and no
// orphan reparenting to rely on; the unit the kernel can end as a whole
// is a Job Object. Each server gets one, with
// JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE (and die-on-unhandled-exception, so
// a crash dialog cannot hold a process): when the last handle closes —
// the gateway's, which is never inherited — the kernel ends every process
// in the job. The leader is created suspended, assigned to the job, then
// resumed, so nothing it starts can be born outside; breakaway is not
// allowed. No watchdog is needed, and nothing can be reused under us: the
// job handle names the group, and the open process handle keeps the
// leader's pid from being reused. The leader gets a new console process
// group (CREATE_NEW_PROCESS_GROUP), so CTRL_BREAK reaches it and its
// children and never the gateway; that needs a console the gateway
// shares with it, and a gateway without one starts servers with a hidden
// console of their own (CREATE_NO_WINDOW, so no window opens), where the
// polite stage is stdin EOF alone. The console host Windows starts for
// that hidden console joins the job; it is not counted as a member (it
// leaves with its last client) and closing the job ends it. The child
// inherits exactly its three standard handles
// (PROC_THREAD_ATTRIBUTE_HANDLE_LIST). Commands resolve with PATHEXT, but
// only .exe and .com files are run: a .bat or .cmd file (npx.cmd, for
// one) would be run by cmd.exe with cmd's own parsing of every argument,
// and cmd, PowerShell and the script hosts are refused by name. What
// remains: a server that asks another process to start something (a
// service, a scheduled task, WMI) gets a process outside the job; each
// live server holds one OS thread waiting on its process handle.
//
// # Why not PR_SET_CHILD_SUBREAPER
//
// Making the gateway a subreaper would reparent orphaned grandchildren to
// it while it lives — but not after it dies, which is the case that
// matters, and every orphan would become a zombie of the gateway that only
// a wait on any child could collect. Such a wait would steal exit statuses
// from every other package that runs commands. The watchdog covers the
// gateway's death without touching process-wide state.
//
// # Why the child changes directory through /proc/self/fd
//
// The cwd is checked lexically and after resolving every symbolic link,
// once when the declaration is loaded (Contain) and again at spawn. At
// spawn the checked directory is also opened, the kernel's name for the
// open descriptor is checked against the resolved root, and the child
// changes directory to /proc/self/fd/N (the child holds every descriptor
// until exec). A symlink swapped in after the check cannot redirect it.
//
// # Why the deny-list is case-insensitive and beats every declaration
//
// Loader variables (LD_*, DYLD_*), interpreter and package-manager
// injection (NODE_OPTIONS, PYTHONPATH, npm_config_*, UV_*, ...) and shell
// startup hooks (BASH_ENV, ENV, BASH_FUNC_*) turn a declared server into
// arbitrary code. Some tools read lower-case spellings (npm), so the
// comparison ignores case for all of them; a false refusal is loud and
// fixable, a missed one is silent. Every refusal is an *EnvError with a
// reason code and never contains a value.
//
// # Why the allow-list applies to bare names only
//
// SLUICE_ALLOW_COMMANDS limits which program a bare name such as "npx" may
// resolve to, by basename. An absolute path is already an exact choice by
// whoever wrote the declaration, and the gateway decides separately
// whether that declaration is trusted. Wildcards and paths in the list are
// refused with a warning rather than widening it.
package proc
