//go:build !race

package mcp

const raceBuild = false
