// Command mcpfixture is sluice's fixture MCP server with misbehaviour modes,
// for tests and the demo. It speaks both protocol eras over stdio (legacy
// initialize and 2026-07-28 per-request _meta) and exits on stdin EOF unless
// a mode says otherwise. Modes, tools and flags are documented in package
// mcptest; "mcpfixture -h" lists the flags.
//
// Examples:
//
//	mcpfixture                                   # well-behaved, dual-era
//	mcpfixture -mode paginated -tools 20 -page 3 # 33 tools over 11 pages
//	mcpfixture -mode banner,slow -delay 500ms    # noise on stdout, late answers
//	mcpfixture -mode grandchild,ignore-sigterm   # only SIGKILL of the group ends it
//	mcpfixture -mode legacy-only                 # like TS SDK v1 servers
//
// Exit status: 0 after stdin EOF, 2 for bad flags or -mode exit-at-start,
// 3 after a requested crash, 1 for other failures.
package main

import (
	"os"

	"sluice/gateway/mcp/mcptest"
)

func main() {
	os.Exit(mcptest.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
