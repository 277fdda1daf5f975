//go:build linux || darwin || windows

package proc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// childModeEnv selects what a re-executed test binary does. It is passed
// through Spec.Env, which is how real declarations reach servers.
const childModeEnv = "SLUICE_TESTCHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childModeEnv); mode != "" {
		// Exit without the race runtime's exit-time pause.
		exitNow(runChild(mode))
	}
	os.Exit(m.Run())
}

// runChild is the body of every real child process the tests start.
func runChild(mode string) int {
	switch mode {
	case "eof": // echo stdin lines to stdout, exit on EOF
		fmt.Fprintln(os.Stderr, "child eof ready")
		echoUntilEOF()
		return 0
	case "exit3":
		fmt.Fprintln(os.Stderr, "failing on purpose")
		return 3
	case "ignore-term": // ignore SIGTERM and stdin EOF
		ignoreTerm()
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		blockForever()
	case "grandchild", "grandchild-stubborn":
		// Start a grandchild in our group that ignores SIGTERM, report its
		// pid, then exit on stdin EOF (or, stubborn, ignore everything).
		if mode == "grandchild-stubborn" {
			ignoreTerm()
		}
		gc := exec.Command(os.Args[0])
		gc.Env = append(os.Environ(), childModeEnv+"=sleeper")
		gc.Stderr = os.Stderr
		out, err := gc.StdoutPipe()
		if err != nil {
			return 10
		}
		if err := gc.Start(); err != nil {
			return 11
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		fmt.Printf("grandchild %d\n", gc.Process.Pid)
		_ = line
		io.Copy(io.Discard, os.Stdin)
		if mode == "grandchild-stubborn" {
			blockForever()
		}
		return 0
	case "sleeper": // the grandchild: ignores SIGTERM, never exits on its own
		ignoreTerm()
		fmt.Println("sleeping")
		os.Stdout.Close()
		blockForever()
	case "pwd-env": // print cwd and environment, then exit
		wd, _ := os.Getwd()
		fmt.Println("cwd=" + wd)
		for _, kv := range os.Environ() {
			fmt.Println("env=" + kv)
		}
		return 0
	case "stderr-long": // write one stderr line: PAD x's, then TAIL, then exit on EOF
		n, _ := strconv.Atoi(os.Getenv("PAD"))
		os.Stderr.WriteString(strings.Repeat("x", n) + os.Getenv("TAIL") + "\n")
		io.Copy(io.Discard, os.Stdin)
		return 0
	case "stderr-flood": // write a lot of stderr, including split UTF-8, then exit on EOF
		for i := 0; i < 2000; i++ {
			fmt.Fprintf(os.Stderr, "line %d ünïcödé ✓\n", i)
		}
		io.Copy(io.Discard, os.Stdin)
		return 0
	case "args": // print the arguments, quoted, on one line, then exit on EOF
		var q []string
		for _, a := range os.Args[1:] {
			q = append(q, strconv.Quote(a))
		}
		fmt.Println(strings.Join(q, " "))
		io.Copy(io.Discard, os.Stdin)
		return 0
	case "nondump": // make ourselves non-dumpable and report what the kernel says
		if err := SetNonDumpable(); err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println(dumpableState())
		io.Copy(io.Discard, os.Stdin)
		return 0
	case "gateway":
		return runGateway(false, false)
	case "gateway-nowatchdog":
		return runGateway(true, false)
	case "gateway-closing":
		return runGateway(false, true)
	}
	fmt.Fprintln(os.Stderr, "unknown child mode", mode)
	return 2
}

// runGateway plays a gateway that starts a server with a grandchild and
// reports both pids, then waits to be killed.
// With closing, it also starts its own teardown and is killed while that
// waits in the SIGTERM grace period.
func runGateway(noWatchdog, closing bool) int {
	exe, _ := os.Executable()
	p, err := Start(Spec{Server: "gw", Command: exe, Env: map[string]string{childModeEnv: "grandchild-stubborn"},
		NoWatchdog: noWatchdog, StdinGrace: 10 * time.Millisecond, KillGrace: time.Hour})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	line, err := bufio.NewReader(p.Stdout()).ReadString('\n')
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	gc, _ := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "grandchild "))
	fmt.Printf("pids %d %d\n", p.Pid(), gc)
	if closing {
		go p.Close()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) && p.Phase() == PhaseLive {
			p.mu.Lock()
			st := p.stage
			p.mu.Unlock()
			if st == StageSigterm {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		fmt.Println("sigterm sent")
	}
	time.Sleep(time.Hour)
	return 0
}

func echoUntilEOF() {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		fmt.Println(sc.Text())
	}
}

// blockForever parks the child. (An empty select would be reported as a
// deadlock and exit when no other goroutine exists.)
func blockForever() {
	for {
		time.Sleep(time.Hour)
	}
}
