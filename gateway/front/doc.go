// Package front serves the gateway as an MCP server over stdio and streamable
// HTTP. It is the only package that imports the MCP Go SDK and the
// Prometheus client.
package front

import (
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/prometheus/client_golang/prometheus"
)
