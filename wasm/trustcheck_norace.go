//go:build !race

package wasm

const checkTrust = false

// poisonReleased: in -race builds Output.Release overwrites the bytes it
// gives back, so a use after Release corrupts what a test sees.
const poisonReleased = false
