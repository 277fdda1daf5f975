//go:build race

package wasm

// checkTrust: in -race builds (every test run of the project) the output
// of a call that skipped validating trusted input spans is validated again
// in full, so a caller that sets Meta.ValidInput on input that is not
// valid JSON is caught.
const checkTrust = true

// poisonReleased: in -race builds Output.Release overwrites the bytes it
// gives back, so a use after Release corrupts what a test sees.
const poisonReleased = true
