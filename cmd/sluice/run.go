package main

import (
	"fmt"
	"io"
	"runtime/debug"
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

// Exit codes shared by every subcommand.
const (
	exitOK      = 0
	exitFailure = 1 // the gateway failed, or a check found errors
	exitUsage   = 2 // bad input: flags, arguments, unknown subcommand
)

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "version", "--version", "-v":
		fmt.Fprintf(stdout, "sluice %s\n", versionString())
		return exitOK
	case "help", "--help", "-h":
		usage(stdout)
		return exitOK
	}
	fmt.Fprintf(stderr, "sluice: unknown command %q; run 'sluice help' for the list\n", args[0])
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprint(w, `sluice: an MCP gateway

Usage: sluice COMMAND [ARGS]

Commands:
  version      print the version
  help         this text
`)
}
