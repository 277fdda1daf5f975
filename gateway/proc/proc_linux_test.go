package proc

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLiveServersHoldNoThreads: the leader's exit is awaited through the
// runtime poller, so live servers do not each pin an OS thread in waitid.
func TestLiveServersHoldNoThreads(t *testing.T) {
	threads := func() int {
		e, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Skip("no /proc/self/task")
		}
		return len(e)
	}
	mustStart(t, childSpec(t, "exit3")).Close() // warm up the spawn thread
	before := threads()
	const n = 24
	var ps []*Process
	for i := 0; i < n; i++ {
		ps = append(ps, mustStart(t, childSpec(t, "eof")))
	}
	during := threads()
	for _, p := range ps {
		if out := p.Close(); !out.Complete {
			t.Fatalf("outcome %+v", out)
		}
	}
	if during-before >= n {
		t.Fatalf("threads grew from %d to %d with %d live servers", before, during, n)
	}
}

// describeGroup lists the processes of a group with their states, for
// failure messages.
func describeGroup(pgid int) string {
	ents, _ := os.ReadDir("/proc")
	var b strings.Builder
	b.WriteString("members:")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := procStat(pid); ok && st.pgrp == pgid {
			fmt.Fprintf(&b, " %d(%c,ppid %d,threads %d)", pid, st.state, st.ppid, st.threads)
		}
	}
	return b.String()
}

func fdCount(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// TestSpawnThreadExitDoesNotKillServer: Pdeathsig follows the thread that
// forked. A goroutine that locks its thread, starts a server and ends
// without unlocking destroys that thread; the server must live on because
// every fork happens on the package's dedicated, never-exiting thread.
func TestSpawnThreadExitDoesNotKillServer(t *testing.T) {
	ch := make(chan *Process, 1)
	tid := make(chan int, 1)
	for {
		main := make(chan bool)
		go func() {
			runtime.LockOSThread()
			if unix.Gettid() == unix.Getpid() {
				// The main thread never exits; try again elsewhere.
				runtime.UnlockOSThread()
				main <- true
				return
			}
			main <- false
			// Never unlocked: this thread exits with the goroutine.
			tid <- unix.Gettid()
			p, err := Start(childSpec(t, "eof"))
			if err != nil {
				t.Error(err)
			}
			ch <- p
		}()
		if !<-main {
			break
		}
	}
	p := <-ch
	if p == nil {
		t.FailNow()
	}
	t.Cleanup(func() { killGroup(p.Pid()); p.Close() })
	// Wait until the locked thread is gone; a Pdeathsig tied to it has
	// then been sent.
	task := "/proc/self/task/" + strconv.Itoa(<-tid)
	if !settle(func() bool { _, err := os.Stat(task); return err != nil }) {
		t.Skip("the locked thread did not exit; nothing to check")
	}
	if _, err := p.Stdin().Write([]byte("still here\n")); err != nil {
		t.Fatal(err)
	}
	if got := readLine(t, p.Stdout()); got != "still here" {
		t.Fatalf("server answered %q", got)
	}
	if out := p.Close(); !out.Complete || out.Stage != StageExited || p.ExitError() != nil {
		t.Fatalf("outcome %+v, exit %v", out, p.ExitError())
	}
}

// inGroup reports whether pid is a member of p's process group.
func inGroup(p *Process, pid int) bool {
	pg, ok := procPgrp(pid)
	return ok && pg == p.Pid()
}

// leaderHandles names the kernel handles on the leader still open.
func leaderHandles(p *Process) string {
	if fd := p.g.(*unixGroup).lw.fd(); fd != -1 {
		return fmt.Sprintf("pidfd %d", fd)
	}
	return ""
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	st, ok := procStat(pid)
	return ok && !st.dead()
}

// describePid says what the kernel shows of pid, for logs.
func describePid(pid int) string {
	st, _ := procStat(pid)
	return fmt.Sprintf("state %c, pgrp %d, reparented to pid %d", st.state, st.pgrp, st.ppid)
}
