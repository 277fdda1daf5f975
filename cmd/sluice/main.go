// Command sluice is an MCP gateway: it launches local stdio MCP servers on
// demand, decides what may run, answers "what tools exist?" from a catalog
// cache, runs code-mode scripts and filters every result.
//
// main only adapts the process to run, which owns every subcommand and
// returns the exit code; run never calls os.Exit, so tests drive it directly.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
