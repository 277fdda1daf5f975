// Package gateway assembles sluice: it turns declarations and the native MCP
// client into capabilities, admits calls, runs the result pipeline and code
// mode. It is the only package that imports the other gateway packages,
// sandbox and wasm; no subpackage of gateway imports it.
package gateway
