//go:build !wasip1

package guest

import "errors"

// Errors returned by Offload.
var (
	ErrOffloadUnavailable = errors.New("offload: the host offers no offload store")
	ErrOffloadFailed      = errors.New("offload: the host could not store the data (quota or storage error)")
)

// Offload needs the mcpf host imports, which exist only in a wasip1 build;
// natively it reports ErrOffloadUnavailable.
func Offload(data []byte) (string, error) { return "", ErrOffloadUnavailable }

// InputSkip needs the host; natively it always fails (use SkipValue).
func InputSkip(i int) (int, error) { return 0, ErrSyntax }

// Log is a no-op outside a wasip1 build.
func Log(level int32, msg string) {}

// Call runs the registered filter natively (for tests of a filter's Go code).
func Call(in Input) Output {
	if registered == nil {
		return Fail(errors.New("no filter registered"))
	}
	return registered(in)
}

// InputFind needs the host; natively it runs the same search in Go over
// input.
func InputFind(input []byte, offset, from int, keys []byte, buf []FindRecord) (int, error) {
	return nativeFind()(input, offset, from, keys, buf)
}
