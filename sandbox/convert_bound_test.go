package sandbox

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"go.starlark.net/starlark"
)

// TestToJSONStopsBeforeCopyingAnOversizedString: encoding a value under a
// byte cap refuses a string that cannot fit before copying it, so a
// script's 64 MiB `result` (or call argument) over a 1 MiB cap does not
// take another 64 MiB and more of host memory beyond what the memory
// limit counted.
func TestToJSONStopsBeforeCopyingAnOversizedString(t *testing.T) {
	const size = 64 << 20
	for name, v := range map[string]starlark.Value{
		"string":      starlark.String(strings.Repeat("a", size)),
		"bytes":       starlark.Bytes(strings.Repeat("b", size)),
		"in a list":   starlark.NewList([]starlark.Value{starlark.String("x"), starlark.String(strings.Repeat("c", size))}),
		"as dict key": dictOf(starlark.String(strings.Repeat("d", size)), starlark.None),
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := toJSON(v, 1<<20)
		runtime.ReadMemStats(&after)
		var tb *errTooBig
		if !errors.As(err, &tb) {
			t.Fatalf("%s: err = %v, want the output cap", name, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
			t.Errorf("%s: encoding under a 1 MiB cap allocated %d bytes", name, got)
		}
	}
}

func dictOf(k, v starlark.Value) *starlark.Dict {
	d := starlark.NewDict(1)
	d.SetKey(k, v)
	return d
}
