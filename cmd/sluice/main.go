// Command sluice is an MCP gateway: it launches local stdio MCP servers on
// demand, decides what may run, answers "what tools exist?" from a catalog
// cache, runs code-mode scripts and filters every result.
//
// main only adapts the process to run, which owns every subcommand and
// returns the exit code; run never calls os.Exit, so tests drive it directly.
//
// # Why main makes the process non-dumpable
//
// Every server runs as the same user as sluice, and any command may launch
// one (serve, call and run always can; find and describe can refresh). A
// dumpable sluice would let a server read its environment — tokens and the
// values behind ${env:NAME} — from /proc/<ppid>/environ. Failing to set it
// is fatal: running without the protection would be silent.
package main

import (
	"fmt"
	"os"

	"sluice/gateway"
)

func main() {
	if err := gateway.SetNonDumpable(); err != nil {
		fmt.Fprintf(os.Stderr, "sluice: cannot make the process non-dumpable (prctl PR_SET_DUMPABLE): %v\n", err)
		os.Exit(exitFailure)
	}
	stop := startProfile(os.Stderr)
	code := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
