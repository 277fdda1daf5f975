// Package guest is the Go SDK for sluice result filters (ABI mcpf v1, see
// wasm/ABI.md). A filter is one function:
//
//	func init() { guest.Register(filter) }
//	func main() {}
//	func filter(in guest.Input) guest.Output { ... }
//
// built with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared.
//
// The package also holds the allocation-light JSON helpers the built-in
// filters use (Shaper, Redactor, Object/Array/SkipValue, AppendQuote,
// AppendUnquote, CutRaw). They have no build tags, so the same code runs
// natively in the host's tests and benchmarks and inside the guest; that is
// how the shape benchmark compares wasm against native Go without
// duplicating the logic (filters may import only this package).
//
// # Why InputSkip
//
// Under the host's deadline enforcement every loop back-edge in guest code
// calls out to the host, so scanning long JSON strings in the guest is slow.
// InputSkip asks the host to skip a JSON value of the input natively; the
// shape filter sets Shaper.Skip to it and only walks the structure itself.
//
// The redactor sets Redactor.Skip to it too, and for the same reason never
// runs its built-in rules' regexps over whole texts: one eight-bytes-a-step
// pass finds the rules' fixed anchors, and only those positions are
// matched (see redact.go; a differential test holds it to the whole-text
// regexps). Loops over bytes here go eight at a time for the same reason.
//
// # Why ReplaceParts
//
// A filter that keeps long runs of its input (the shaper keeps a prefix of
// a text, and items whole) names them as Parts instead of copying them
// into its output: the host copies them (output_input), once, and for the
// built-ins need not validate them again (see the wasm package doc).
// Shaper.ShapeParts is Shape in that form; Assemble joins parts natively.
//
// guest imports no package of sluice (filters may import only guest).
//
// # Why no encoding/json
//
// encoding/json inside a Go wasm guest decodes at about 5 MB/s and adds 1.5 MB
// to the module; a 64 KiB result would take ~12 ms. The helpers here walk raw
// JSON bytes instead and never build a tree.
//
// # Why runtime.Gosched every 16 calls
//
// A //go:wasmexport function returns to the host without running other
// goroutines, so a GC cycle that started during a call can never finish and a
// pooled instance's heap grows without bound (tens of thousands of calls reach
// gigabytes). Yielding before the export returns lets the background GC
// goroutines run; memory then stays flat. A yield runs the scheduler (about a
// microsecond, most of what a small call costs in the guest), so the SDK
// yields before mcpf_init returns and before every 16th mcpf_filter call
// returns: a cycle started in a call still finishes within 16 calls. It also
// forces a collection every 1,000 calls so the heap settles early even for
// filters that allocate little (the runtime would otherwise first collect at
// 4 MiB). The soak test in package wasm holds a pooled instance's memory flat
// over 100,000 calls.
package guest
