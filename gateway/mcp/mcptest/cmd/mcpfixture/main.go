// Command mcpfixture is sluice's fixture MCP server with misbehaviour modes,
// for tests and the demo. Run "mcpfixture -h" for its flags; the modes and
// tools are documented in package mcptest.
package main

import (
	"os"

	"sluice/gateway/mcp/mcptest"
)

func main() {
	os.Exit(mcptest.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
