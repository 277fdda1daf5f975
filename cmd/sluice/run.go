package main

import (
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"sort"

	"sluice/gateway"
)

// version is set at link time (-ldflags "-X main.version=...") and falls back
// to the module build info.
var version = ""

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Exit codes shared by every subcommand. Subcommands may define more
// (documented in their help), but these keep their meaning everywhere.
const (
	exitOK      = 0
	exitFailure = 1 // the gateway failed, or a check found errors
	exitUsage   = 2 // bad input: flags, arguments, unknown subcommand
)

// env is what a subcommand sees of its process: arguments after the
// subcommand name, the three streams and the environment lookup.
type env struct {
	args   []string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// color and progress are --color and --progress: auto (the
	// default), always or never (see term.go).
	color, progress string
}

// command is one subcommand. Each lives in its own file and registers itself
// in init, so subcommands can be added without touching this file.
type command struct {
	summary string           // one line for 'sluice help'
	help    string           // full text for 'sluice help NAME'
	run     func(e *env) int // returns the exit code
}

var commands = map[string]*command{}

func register(name string, c *command) {
	if _, dup := commands[name]; dup {
		panic("duplicate command " + name)
	}
	commands[name] = c
}

func init() {
	register("version", &command{
		summary: "print the version",
		help:    "Usage: sluice version\n\nPrints the version of this sluice binary.\n\nExit status:\n  0  printed\n  2  an argument or a flag was given\n",
		run: func(e *env) int {
			pos, code, ok := flagsOrExit(e, "version", flag.NewFlagSet("version", flag.ContinueOnError))
			if !ok {
				return code
			}
			if len(pos) > 0 {
				return usageErr(e, "version", "unexpected argument %q; version takes no arguments", pos[0])
			}
			fmt.Fprintf(e.stdout, "sluice %s\n", versionString())
			return exitOK
		},
	})
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	args, color, progress, err := globalFlags(args)
	if err != nil {
		fmt.Fprintf(stderr, "sluice: %v\n", err)
		return exitUsage
	}
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "--version", "-v":
		name = "version"
	case "help", "--help", "-h":
		return runHelp(args[1:], stdout, stderr)
	}
	c, ok := commands[name]
	if !ok {
		names := make([]string, 0, len(commands))
		for n := range commands {
			names = append(names, n)
		}
		if near := gateway.Suggest(name, names); near != "" {
			fmt.Fprintf(stderr, "sluice: unknown command %q; did you mean %s? run 'sluice help' for the list\n", name, near)
			return exitUsage
		}
		fmt.Fprintf(stderr, "sluice: unknown command %q; run 'sluice help' for the list\n", name)
		return exitUsage
	}
	e := &env{args: args[1:], stdin: stdin, stdout: stdout, stderr: stderr, color: color, progress: progress}
	code := c.run(e)
	// Log lines a lockedWriter holds back are written before the exit.
	closeStderr(e.stderr)
	return code
}

// runHelp prints the help of one command (or the list): 'sluice help
// [COMMAND]', and 'sluice help filter SUBCOMMAND' (filter's help covers
// its subcommands). Anything else is refused, never ignored.
func runHelp(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stdout)
		return exitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		names := make([]string, 0, len(commands))
		for n := range commands {
			names = append(names, n)
		}
		if near := gateway.Suggest(args[0], names); near != "" {
			fmt.Fprintf(stderr, "sluice help: no command %q; did you mean %s? run 'sluice help' for the list\n", args[0], near)
		} else {
			fmt.Fprintf(stderr, "sluice help: no command %q; run 'sluice help' for the list\n", args[0])
		}
		return exitUsage
	}
	extra := args[1:]
	if args[0] == "filter" && len(extra) > 0 && slices.Contains(filterSubcommands, extra[0]) {
		extra = extra[1:]
	}
	if len(extra) > 0 {
		fmt.Fprintf(stderr, "sluice help: unexpected argument %q; help takes one command: sluice help %s\n", extra[0], args[0])
		return exitUsage
	}
	fmt.Fprint(stdout, c.help)
	return exitOK
}

func usage(w io.Writer) {
	fmt.Fprint(w, "sluice: an MCP gateway\n\nUsage: sluice COMMAND [ARGS]\n\nCommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(w, globalHelp+"\nRun 'sluice help COMMAND' for details.\n")
}
