// Package mcp is sluice's native MCP client over stdio.
package mcp
