package proc

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Windows: every server runs in its own Job Object created with
// JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE. The leader is created suspended,
// assigned to the job and only then resumed, so every process it ever
// starts is born inside the job (nothing is allowed to break away). Only
// the gateway holds a handle to the job; when the gateway dies, however
// it dies, the kernel closes that handle and ends every process of the
// job. The polite stop is stdin EOF, then CTRL_BREAK to the leader's new
// console process group; the forced one is TerminateJobObject. There is
// no watchdog and no group id to pin: the job handle names the group and
// cannot be reused while it is open, and the open process handle keeps
// the leader's pid from being reused. See the package doc.

// killExitCode is the exit code TerminateJobObject gives every process
// of a job this package ends. A leader that ends with it after the
// forced stop is reported as killed by SIGKILL, as on Unix.
const killExitCode = 128 + 9

// statusControlCExit is the exit code of a console program ended by its
// default CTRL_BREAK (or CTRL_C) handler; it is reported as SIGINT.
const statusControlCExit = 0xC000013A

// winGroup is one server's Job Object and its leader.
type winGroup struct {
	server  string
	pid     int
	job     windows.Handle
	proc    windows.Handle
	console bool // the leader shares the gateway's console, so CTRL_BREAK can reach it

	mu       sync.Mutex
	killed   bool // TerminateJobObject was called
	released bool
}

// liveJobs maps a leader's pid to its group until release, for
// GroupAlive.
var liveJobs sync.Map

func spawn(spec *Spec, exe string, argv, env []string, dir string, stdio []*os.File) (group, int, error) {
	cmdLine, err := windowsCommandLine(argv)
	if err != nil {
		return nil, 0, err
	}
	block, err := windowsEnvBlock(env)
	if err != nil {
		return nil, 0, err
	}
	app, err := windows.UTF16PtrFromString(exe)
	if err != nil {
		return nil, 0, err
	}
	line, err := windows.UTF16FromString(cmdLine)
	if err != nil {
		return nil, 0, err
	}
	var dirp *uint16
	if dir != "" {
		if dirp, err = windows.UTF16PtrFromString(dir); err != nil {
			return nil, 0, err
		}
	}
	job, err := newJob()
	if err != nil {
		return nil, 0, err
	}
	console := hasConsole()
	flags := uint32(windows.CREATE_SUSPENDED | windows.CREATE_NEW_PROCESS_GROUP |
		windows.CREATE_UNICODE_ENVIRONMENT | windows.EXTENDED_STARTUPINFO_PRESENT)
	if !console {
		// A console program started by a gateway without a console would
		// open a window of its own.
		flags |= windows.CREATE_NO_WINDOW
	}
	pi, err := createProcess(app, &line[0], &block[0], dirp, flags, stdio)
	if err != nil {
		windows.CloseHandle(job)
		return nil, 0, err
	}
	if err := windows.AssignProcessToJobObject(job, pi.Process); err != nil {
		_ = windows.TerminateProcess(pi.Process, killExitCode)
		windows.CloseHandle(pi.Thread)
		windows.CloseHandle(pi.Process)
		windows.CloseHandle(job)
		return nil, 0, fmt.Errorf("assigning the server to its job object: %w", err)
	}
	if _, err := windows.ResumeThread(pi.Thread); err != nil {
		_ = windows.TerminateJobObject(job, killExitCode)
		windows.CloseHandle(pi.Thread)
		windows.CloseHandle(pi.Process)
		windows.CloseHandle(job)
		return nil, 0, fmt.Errorf("resuming the server: %w", err)
	}
	windows.CloseHandle(pi.Thread)
	g := &winGroup{server: spec.Server, pid: int(pi.ProcessId), job: job, proc: pi.Process, console: console}
	liveJobs.Store(g.pid, g)
	return g, g.pid, nil
}

// newJob creates an unnamed, non-inheritable job whose processes all die
// when its last handle closes, and which lets none break away.
func newJob() (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, fmt.Errorf("creating a job object: %w", err)
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE |
		windows.JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, fmt.Errorf("setting kill-on-close on the job object: %w", err)
	}
	return job, nil
}

// createProcess starts the leader suspended with stdio as its standard
// handles, inheriting those three handles and nothing else
// (PROC_THREAD_ATTRIBUTE_HANDLE_LIST).
func createProcess(app, line, env, dir *uint16, flags uint32, stdio []*os.File) (*windows.ProcessInformation, error) {
	cur := windows.CurrentProcess()
	// The inheritable copies exist only while ForkLock is held, the lock
	// every process creation in the standard library takes too.
	syscall.ForkLock.Lock()
	defer syscall.ForkLock.Unlock()
	var inh [3]windows.Handle
	defer func() {
		for _, h := range inh {
			if h != 0 {
				windows.CloseHandle(h)
			}
		}
	}()
	for i, f := range stdio {
		if err := windows.DuplicateHandle(cur, windows.Handle(f.Fd()), cur, &inh[i], 0, true, windows.DUPLICATE_SAME_ACCESS); err != nil {
			return nil, fmt.Errorf("duplicating a standard handle: %w", err)
		}
	}
	attrs, err := windows.NewProcThreadAttributeList(1)
	if err != nil {
		return nil, err
	}
	defer attrs.Delete()
	if err := attrs.Update(windows.PROC_THREAD_ATTRIBUTE_HANDLE_LIST, unsafe.Pointer(&inh[0]), uintptr(len(inh))*unsafe.Sizeof(inh[0])); err != nil {
		return nil, err
	}
	si := &windows.StartupInfoEx{}
	si.Cb = uint32(unsafe.Sizeof(*si))
	si.Flags = windows.STARTF_USESTDHANDLES
	si.StdInput, si.StdOutput, si.StdErr = inh[0], inh[1], inh[2]
	si.ProcThreadAttributeList = attrs.List()
	pi := &windows.ProcessInformation{}
	if err := windows.CreateProcess(app, line, nil, nil, true, flags, env, dir, &si.StartupInfo, pi); err != nil {
		return nil, err
	}
	return pi, nil
}

var procGetConsoleWindow = windows.NewLazySystemDLL("kernel32.dll").NewProc("GetConsoleWindow")

// hasConsole reports whether the gateway has a console, which its
// servers then share (and CTRL_BREAK can then reach them).
func hasConsole() bool {
	if procGetConsoleWindow.Find() != nil {
		return false
	}
	h, _, _ := procGetConsoleWindow.Call()
	return h != 0
}

// wait blocks (one OS thread per live server) until the leader exits.
func (g *winGroup) wait() error {
	if _, err := windows.WaitForSingleObject(g.proc, windows.INFINITE); err != nil {
		return &ExitError{Server: g.server, Code: -1}
	}
	var code uint32
	if err := windows.GetExitCodeProcess(g.proc, &code); err != nil {
		return &ExitError{Server: g.server, Code: -1}
	}
	g.mu.Lock()
	killed := g.killed
	g.mu.Unlock()
	return exitFromCode(g.server, code, killed)
}

// exitFromCode turns a Windows exit code into nil or an *ExitError; the
// code TerminateJobObject gave after the forced stop reads as SIGKILL.
func exitFromCode(server string, code uint32, killed bool) error {
	switch {
	case code == 0:
		return nil
	case killed && code == killExitCode:
		return &ExitError{Server: server, Code: -1, Signal: syscall.SIGKILL}
	case code == statusControlCExit:
		return &ExitError{Server: server, Code: -1, Signal: syscall.SIGINT}
	}
	return &ExitError{Server: server, Code: int(int32(code))}
}

func (g *winGroup) signal(sig syscall.Signal, leaderLive bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.released {
		return
	}
	if sig == syscall.SIGKILL {
		g.killed = true
		_ = windows.TerminateJobObject(g.job, killExitCode)
		return
	}
	// The leader was created with CREATE_NEW_PROCESS_GROUP, so its pid is
	// a console process group of its own, inherited by its children. (Never
	// 0: that would be every process on the console, the gateway included.)
	if g.console && g.pid > 0 {
		_ = windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, uint32(g.pid))
	}
}

// jobProcessIDList is the fixed part of JOBOBJECT_BASIC_PROCESS_ID_LIST;
// the pids (ULONG_PTR each) follow it.
type jobProcessIDList struct {
	Assigned, InList uint32
}

// pids lists the processes the kernel counts in the job. Called with
// g.mu held, before release.
func (g *winGroup) pids() ([]int, error) {
	n := 16
	for {
		hdr := int(unsafe.Sizeof(jobProcessIDList{}))
		if hdr%int(unsafe.Sizeof(uintptr(0))) != 0 {
			hdr += int(unsafe.Sizeof(uintptr(0))) - hdr%int(unsafe.Sizeof(uintptr(0)))
		}
		buf := make([]uintptr, (hdr+n*int(unsafe.Sizeof(uintptr(0))))/int(unsafe.Sizeof(uintptr(0))))
		err := windows.QueryInformationJobObject(g.job, windows.JobObjectBasicProcessIdList,
			uintptr(unsafe.Pointer(&buf[0])), uint32(len(buf)*int(unsafe.Sizeof(uintptr(0)))), nil)
		l := (*jobProcessIDList)(unsafe.Pointer(&buf[0]))
		if err == windows.ERROR_MORE_DATA || err == nil && l.InList < l.Assigned {
			n = int(l.Assigned) + 16
			continue
		}
		if err != nil {
			return nil, err
		}
		ids := buf[hdr/int(unsafe.Sizeof(uintptr(0))):]
		out := make([]int, 0, l.InList)
		for _, id := range ids[:l.InList] {
			out = append(out, int(id))
		}
		return out, nil
	}
}

// liveOthers counts the running processes of the job other than skip
// and the job's console host. A process that has just exited may still be
// listed for a moment, so each listed pid is checked; it cannot have been
// reused by a stranger while the job still lists it.
//
// The console host: a server started without the gateway's console
// (CREATE_NO_WINDOW) gets a hidden console of its own, which Windows
// serves with a conhost.exe that joins the job and leaves when the last
// process using the console does. Waiting for it would turn every clean
// exit into a SIGTERM stage; it is not counted, and closing the job at
// release ends it in any case. Only the system's own conhost.exe is left
// out (its full path), which no server can pose as.
func (g *winGroup) liveOthers(skip int) (int, error) {
	ids, err := g.pids()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		if id == skip {
			continue
		}
		running, image := pidState(id)
		if running && !strings.EqualFold(image, systemConhost()) {
			n++
		}
	}
	return n, nil
}

// pidState reports whether pid runs and the full path of its image.
func pidState(pid int) (bool, string) {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return errors.Is(err, windows.ERROR_ACCESS_DENIED), ""
	}
	defer windows.CloseHandle(h)
	if ev, err := windows.WaitForSingleObject(h, 0); err != nil || ev != uint32(windows.WAIT_TIMEOUT) {
		return false, ""
	}
	var buf [windows.MAX_LONG_PATH]uint16
	n := uint32(len(buf))
	if windows.QueryFullProcessImageName(h, 0, &buf[0], &n) != nil {
		return true, ""
	}
	return true, windows.UTF16ToString(buf[:n])
}

// systemConhost is the full path of the system's console host.
var systemConhost = sync.OnceValue(func() string {
	dir, err := windows.GetSystemDirectory()
	if err != nil {
		return ""
	}
	return dir + `\conhost.exe`
})

func (g *winGroup) members() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.released {
		return false
	}
	n, err := g.liveOthers(g.pid)
	return err != nil || n > 0 // unknown: let the bounds decide
}

// release closes the job, which ends whatever the bounds left alive in it
// (kill-on-close), and the leader's handle.
func (g *winGroup) release(time.Duration) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.released {
		g.released = true
		liveJobs.Delete(g.pid)
		windows.CloseHandle(g.job)
		windows.CloseHandle(g.proc)
	}
	return nil
}

// GroupAlive reports whether the server whose leader had pid pgid still
// has a live process: while this package holds its job, whether the job
// has one; afterwards, whether a process with that pid runs (which, once
// the job is closed, can only be an unrelated one that reused the pid).
func GroupAlive(pgid int) bool {
	if pgid <= 0 {
		return false
	}
	if v, ok := liveJobs.Load(pgid); ok {
		g := v.(*winGroup)
		g.mu.Lock()
		defer g.mu.Unlock()
		if !g.released {
			n, err := g.liveOthers(0)
			return err != nil || n > 0
		}
	}
	return pidRunning(pgid)
}

// pidRunning reports whether a process with pid exists and has not exited.
func pidRunning(pid int) bool {
	running, _ := pidState(pid)
	return running
}

// pinDir: the child changes to the checked path. The directory is not
// held open across the spawn; the window between the check and the
// child's start is the residual race named in the package doc.
func pinDir(spec Spec, dir, realRoot string) (*os.File, string, error) { return nil, dir, nil }
