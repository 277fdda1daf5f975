//go:build race

package mcp

// raceBuild: the race detector adds allocations and drops pooled items
// on purpose, so allocation counts are looser under it.
const raceBuild = true
