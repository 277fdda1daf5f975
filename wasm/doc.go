// Package wasm hosts WebAssembly result filters (ABI mcpf v1) on wazero. It is
// a leaf: it imports no package of sluice and is the only importer of wazero.
package wasm

import _ "github.com/tetratelabs/wazero"
