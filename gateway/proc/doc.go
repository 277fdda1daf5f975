// Package proc spawns local server processes, each as the leader of its own
// process group, and tears the whole group down without leaving a process
// behind. It owns: command resolution (absolute path or bare name on PATH,
// never a shell) and the operator's command allow-list; working-directory
// containment; the child's environment (safe-list, opt-in pass-through,
// deny-list); the group's life cycle (unspawned → live → cleaning →
// released) and its teardown; a bounded, valid-UTF-8 tail of stderr.
//
// It is the only package that imports golang.org/x/sys, and it must never
// import another package of sluice. It is Linux-specific (pidfd, waitid
// with WNOWAIT, prctl death signals, procfs).
//
// Teardown, whether Close asks for it or the leader leaves on its own:
// close stdin, wait StdinGrace, SIGTERM to the group, wait KillGrace,
// SIGKILL to the group, wait KillBound, release. A group that outlives
// SIGKILL is reported in the Outcome (Complete false, Reason
// "group-survived-sigkill"), not returned as an error, and its pipes are
// destroyed.
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
