package wasm

import (
	_ "embed"
	"encoding/json"
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

// builtinUnchecked reports whether a built-in with this (compacted) config
// may run without termination checks (see the package doc): only while the
// guest's work between two host calls stays small. A guest that makes no
// host call cannot be preempted by the Go runtime, so a garbage collection
// (and with it the whole process) waits for it. redact's configured
// patterns are matched inside the guest over whole strings, with no host
// call in between (seconds on a big result, measured): a redactor with
// patterns keeps the checks and is stopped at its deadline instead of
// running on.
func builtinUnchecked(name string, config []byte) bool {
	if name != "redact" || len(config) == 0 {
		return true
	}
	var c struct {
		Patterns []json.RawMessage `json:"patterns"`
	}
	if json.Unmarshal(config, &c) != nil {
		return true // the guest rejects it at load
	}
	return len(c.Patterns) == 0
}
