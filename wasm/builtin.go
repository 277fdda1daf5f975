package wasm

import (
	_ "embed"
	"sort"
)

// The built-in filters, built from wasm/filters/<name> by
// scripts/build-filters.sh (make filters) and committed; --check verifies
// they match their sources.
var (
	//go:embed filters/shape/shape.wasm
	shapeWasm []byte
	//go:embed filters/redact/redact.wasm
	redactWasm []byte
)

var builtins = map[string][]byte{
	"shape":  shapeWasm,
	"redact": redactWasm,
}

var builtinModes = map[string]Mode{
	"shape":  ModeResultJSON,
	"redact": ModeResultJSON,
}

// Builtin returns the module bytes of a built-in filter ("shape", "redact").
// The slice is shared; do not modify it.
func Builtin(name string) ([]byte, bool) {
	b, ok := builtins[name]
	return b, ok
}

// BuiltinNames lists the built-in filters.
func BuiltinNames() []string {
	n := make([]string, 0, len(builtins))
	for k := range builtins {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}
