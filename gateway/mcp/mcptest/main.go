package mcptest

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// ReexecArg is the first argument that turns a binary calling RunIfReexec
// (a test binary) into the fixture process.
const ReexecArg = "-sluice.mcpfixture"

// ExitCrash is the exit status of a fixture process that crashed on purpose.
const ExitCrash = 3

var reexeced bool

// RunIfReexec runs the fixture and exits when the process was started by
// Command, that is when os.Args[1] is ReexecArg; otherwise it returns at
// once. Call it from an init function of a test package:
//
//	func init() { mcptest.RunIfReexec() }
func RunIfReexec() {
	if len(os.Args) > 1 && os.Args[1] == ReexecArg {
		reexeced = true
		code := Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr)
		// syscall.Exit, not os.Exit: a race-enabled test binary would
		// otherwise sleep a second at exit (GORACE atexit_sleep_ms), which
		// turns every clean teardown of the fixture into a slow one.
		syscall.Exit(code)
	}
}

// Command returns the absolute path and arguments that start the fixture by
// re-executing the running binary, which must call RunIfReexec. args are
// Main's flags, e.g. "-mode", "paginated,banner".
func Command(args ...string) (string, []string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, fmt.Errorf("mcptest: locating the running binary: %w", err)
	}
	return exe, append([]string{ReexecArg}, args...), nil
}

// Main is the fixture's command line (cmd/mcpfixture and re-executed test
// binaries). It returns the process exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpfixture", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mode := fs.String("mode", "echo", "comma-separated modes: "+knownModes())
	tools := fs.Int("tools", 0, "add N generated read-only tools tool_0001..tool_N")
	page := fs.Int("page", 0, "tools/list page size (0 = one page; 2 with -mode paginated)")
	delay := fs.Duration("delay", 0, "delay before every response (-mode slow: default 2s)")
	huge := fs.Int("huge-bytes", 0, "size of the huge tool's text (default 1 MiB) and of -mode huge padding (default 6 MiB)")
	name := fs.String("name", "", "serverInfo.name (default mcpfixture)")
	together := fs.Int("together", 0, "hold the first N tools/call answers until all N are ready, then write them at once")
	toolsFile := fs.String("tools-file", "", "a JSON array of extra tool definitions to list, read at every tools/list")
	leakEnv := fs.String("leak-env", "", "-mode leaky: plant the value of this environment variable instead of the key")
	instructionsFile := fs.String("instructions-file", "", "a file holding the instructions text, read at every handshake")
	sleeper := fs.Bool("sleeper", false, "run as the grandchild: ignore SIGTERM/SIGINT/SIGHUP and sleep")
	sleep := fs.Duration("sleep", 5*time.Minute, "how long a grandchild sleeps")
	readyFD := fs.Int("ready-fd", 0, "grandchild: fd to report readiness on (internal)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcpfixture: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *sleeper {
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		fmt.Fprintf(stderr, "mcpfixture: grandchild pid %d sleeping %s, ignoring SIGTERM\n", os.Getpid(), *sleep)
		if *readyFD > 0 {
			// Tell the parent that SIGTERM is ignored from now on.
			ready := os.NewFile(uintptr(*readyFD), "ready")
			_, _ = ready.Write([]byte("ready\n"))
			_ = ready.Close()
		}
		time.Sleep(*sleep)
		return 0
	}
	modes, err := ParseModes(*mode)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	opts := &Options{Modes: modes, Name: *name, Tools: *tools, PageSize: *page, Delay: *delay, Together: *together, HugeBytes: *huge, ToolsFile: *toolsFile, InstructionsFile: *instructionsFile, LeakEnv: *leakEnv}
	if _, err := readToolsFile(*toolsFile); err != nil {
		fmt.Fprintf(stderr, "mcpfixture: -tools-file: %v\n", err)
		return 2
	}
	opts.Spawn = func() (int, error) { return spawnSleeper(*sleep, opts.name()) }
	if opts.Has(ModeIgnoreSIGTERM) {
		signal.Ignore(syscall.SIGTERM)
	}
	if opts.ignoreEOF() {
		// Staying up after EOF is a wait on nothing but a signal. On
		// Windows no goroutine waits for signals, so without this sleeper
		// the runtime would end the process as deadlocked.
		go func() {
			for {
				time.Sleep(time.Hour)
			}
		}()
	}
	if opts.Has(ModeGrandchild) {
		pid, err := opts.Spawn()
		if err != nil {
			fmt.Fprintf(stderr, "mcpfixture: spawning the grandchild: %v\n", err)
		} else {
			fmt.Fprintf(stderr, "mcpfixture: spawned grandchild pid %d\n", pid)
		}
	}
	err = Serve(context.Background(), stdin, stdout, stderr, opts)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrCrashed):
		return ExitCrash
	case opts.Has(ModeExitAtStart):
		return 2
	}
	if !strings.Contains(err.Error(), "broken pipe") {
		fmt.Fprintf(stderr, "mcpfixture: %v\n", err)
	}
	return 1
}

// spawnSleeper starts a grandchild in this process's group that ignores
// SIGTERM and keeps this process's stdout and stderr open. It returns once
// the grandchild reported that it ignores SIGTERM, so a caller that then
// sends SIGTERM tests the stubborn case, not a startup race.
//
// The grandchild's command line carries -name so that a test can find a
// leaked one (it still kills by process group, never by name).
func spawnSleeper(d time.Duration, name string) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	args := []string{"-sleeper", "-sleep", d.String(), "-name", name, "-ready-fd", "3"}
	if reexeced {
		args = append([]string{ReexecArg}, args...)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	cmd.ExtraFiles = []*os.File{w}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return 0, err
	}
	go func() { _ = cmd.Wait() }()
	line, err := bufio.NewReader(r).ReadString('\n')
	if line != "ready\n" {
		return cmd.Process.Pid, fmt.Errorf("grandchild %d did not report ready: %q, %v", cmd.Process.Pid, line, err)
	}
	return cmd.Process.Pid, nil
}
